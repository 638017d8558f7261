package platsql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/courierlab/courier/platform"
)

const jobColumns = `id, app_id, endpoint_id, since, state, after_seq, listed, replayed, skipped, failed, error, owner,
	lease_until, created_at, updated_at, finished_at`

func scanJob(r Row) (platform.ReplayJob, error) {
	var j platform.ReplayJob
	var state string
	var since, cursor, lease, created, updated, finished int64
	if err := r.Scan(&j.ID, &j.AppID, &j.EndpointID, &since, &state, &cursor, &j.Listed, &j.Replayed, &j.Skipped, &j.Failed,
		&j.Error, &j.Owner, &lease, &created, &updated, &finished); err != nil {
		return platform.ReplayJob{}, err
	}
	j.State, j.Cursor = platform.JobState(state), uint64(cursor)
	j.Since, j.LeaseUntil, j.FinishedAt = instantOr0(since), instantOr0(lease), instantOr0(finished)
	j.CreatedAt, j.UpdatedAt = instant(created), instant(updated)
	return j, nil
}

// loadJob reads job id, with lock appended.
func (c *Core) loadJob(ctx context.Context, tx Tx, id, lock string) (platform.ReplayJob, error) {
	j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM platform_replay_jobs WHERE id = $1`+lock, id))
	if c.d.NoRows(err) {
		return j, notFound("replay job", id)
	}
	return j, err
}

func (c *Core) CreateReplayJob(ctx context.Context, j platform.ReplayJob, lease time.Duration) (platform.ReplayJob, error) {
	if err := platform.CheckReplayJob(j, lease); err != nil {
		return platform.ReplayJob{}, err
	}
	var out platform.ReplayJob
	err := c.write(ctx, "CreateReplayJob", func(tx Tx, now int64) error {
		// The endpoint's row, held to the commit, makes two creates of
		// one endpoint wait for each other: the second sees the first.
		if _, _, err := c.endpointOfApp(ctx, tx, j.AppID, j.EndpointID, c.d.Update); err != nil {
			return err
		}
		if _, err := c.loadJob(ctx, tx, j.ID, ""); !errors.Is(err, platform.ErrNotFound) {
			return orConflict(err, true, "replay job", j.ID)
		}
		running, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM platform_replay_jobs
			WHERE endpoint_id = $1 AND state = 'running'`, j.EndpointID))
		switch {
		case err == nil:
			out = running
			return fmt.Errorf("%w: replay job %s of endpoint %s is running", platform.ErrConflict, running.ID, running.EndpointID)
		case !c.d.NoRows(err):
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO platform_replay_jobs (`+jobColumns+`)
			VALUES ($1, $2, $3, $4, 'running', 0, 0, 0, 0, 0, '', $5, $6, $7, $7, 0)`,
			j.ID, j.AppID, j.EndpointID, micro(j.Since), j.Owner, now+lease.Microseconds(), now); err != nil {
			return err
		}
		out, err = c.loadJob(ctx, tx, j.ID, "")
		return err
	})
	return out, err
}

func (c *Core) GetReplayJob(ctx context.Context, app, ep, id string) (platform.ReplayJob, error) {
	if !platform.IsID(platform.ReplayJobKind, id) {
		return platform.ReplayJob{}, notFound("replay job", id)
	}
	var out platform.ReplayJob
	err := c.read(ctx, "GetReplayJob", func(tx Tx) error {
		j, err := c.loadJob(ctx, tx, id, "")
		if err == nil && (j.AppID != app || j.EndpointID != ep) {
			err = notFound("replay job", id)
		}
		out = j
		return err
	})
	return out, err
}

func (c *Core) ListReplayJobs(ctx context.Context, app, ep, after string, limit int) ([]platform.ReplayJob, error) {
	if err := platform.CheckPage(platform.ReplayJobKind, after, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.EndpointKind, ep) || !platform.IsID(platform.AppKind, app) {
		return nil, notFound("endpoint", ep)
	}
	out := []platform.ReplayJob{}
	err := c.read(ctx, "ListReplayJobs", func(tx Tx) error {
		if _, _, err := c.endpointOfApp(ctx, tx, app, ep, ""); err != nil {
			return err
		}
		q, args := `SELECT `+jobColumns+` FROM platform_replay_jobs WHERE endpoint_id = $1`, []any{ep, limit}
		if after != "" {
			q += ` AND id < $3`
			args = append(args, after)
		}
		rows, err := tx.Query(ctx, q+` ORDER BY id DESC LIMIT $2`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = out[:0] // a retried read starts again
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		return rows.Err()
	})
	return out, err
}

func (c *Core) ClaimReplayJob(ctx context.Context, owner string, lease time.Duration) (platform.ReplayJob, bool, error) {
	if err := platform.CheckClaim(owner, lease); err != nil {
		return platform.ReplayJob{}, false, err
	}
	var out platform.ReplayJob
	var ok bool
	err := c.write(ctx, "ClaimReplayJob", func(tx Tx, now int64) error {
		ok = false
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM platform_replay_jobs WHERE state = 'running' AND lease_until <= $1
			ORDER BY id LIMIT 1`+c.d.Update, now).Scan(&id)
		if c.d.NoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		// The same conditions again: under PostgreSQL's read committed,
		// a claimer that waited on the row lock finds it taken.
		n, err := tx.Exec(ctx, `UPDATE platform_replay_jobs SET owner = $1, lease_until = $2, updated_at = $3
			WHERE id = $4 AND state = 'running' AND lease_until <= $3`, owner, now+lease.Microseconds(), now, id)
		if err != nil || n == 0 {
			return err
		}
		out, err = c.loadJob(ctx, tx, id, "")
		ok = err == nil
		return err
	})
	return out, ok && err == nil, err
}

func (c *Core) SaveReplayJob(ctx context.Context, j platform.ReplayJob, lease time.Duration) (platform.ReplayJob, error) {
	j, err := platform.CheckJobSave(j, lease)
	if err != nil {
		return platform.ReplayJob{}, err
	}
	var out platform.ReplayJob
	err = c.write(ctx, "SaveReplayJob", func(tx Tx, now int64) error {
		old, err := c.loadJob(ctx, tx, j.ID, c.d.Update)
		if err != nil {
			return err
		}
		if old.State != platform.JobRunning || old.Owner != j.Owner {
			return fmt.Errorf("%w: replay job %s is %s, held by %q, not %q", platform.ErrConflict, j.ID, old.State, old.Owner, j.Owner)
		}
		until, finished := now+lease.Microseconds(), int64(0)
		if j.Finished() {
			until, finished = 0, now
		}
		if _, err := tx.Exec(ctx, `UPDATE platform_replay_jobs SET after_seq = $1, listed = $2, replayed = $3, skipped = $4,
			failed = $5, state = $6, error = $7, lease_until = $8, updated_at = $9, finished_at = $10 WHERE id = $11`,
			int64(j.Cursor), j.Listed, j.Replayed, j.Skipped, j.Failed, string(j.State), j.Error, until, now, finished, j.ID); err != nil {
			return err
		}
		out, err = c.loadJob(ctx, tx, j.ID, "")
		return err
	})
	return out, err
}

func (c *Core) CancelReplayJob(ctx context.Context, app, ep, id string) (platform.ReplayJob, error) {
	if !platform.IsID(platform.ReplayJobKind, id) {
		return platform.ReplayJob{}, notFound("replay job", id)
	}
	var out platform.ReplayJob
	err := c.write(ctx, "CancelReplayJob", func(tx Tx, now int64) error {
		j, err := c.loadJob(ctx, tx, id, c.d.Update)
		switch {
		case err != nil:
			return err
		case j.AppID != app || j.EndpointID != ep:
			return notFound("replay job", id)
		case j.Finished():
			out = j
			return fmt.Errorf("%w: replay job %s is %s already", platform.ErrConflict, id, j.State)
		}
		if _, err := tx.Exec(ctx, `UPDATE platform_replay_jobs SET state = 'cancelled', lease_until = 0, updated_at = $1,
			finished_at = $1 WHERE id = $2`, now, id); err != nil {
			return err
		}
		out, err = c.loadJob(ctx, tx, id, "")
		return err
	})
	return out, err
}

package sqlcore

import (
	"context"
	"fmt"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// deliveryCols are the columns of a delivery row that scanDelivery reads.
const deliveryCols = `d.stream, d.state, d.attempts, d.next_at, d.reason,
	d.last_attempt, d.last_status, d.last_detail, d.last_at, d.settled_at`

// scanDelivery reads deliveryCols into r.
func scanDelivery(row Row, r *store.Record, extra ...any) error {
	var state, reason, attempts, lastAttempt, lastStatus, next, lastAt, settled int64
	dest := append([]any{&r.Stream, &state, &attempts, &next, &reason,
		&lastAttempt, &lastStatus, &r.Last.Detail, &lastAt, &settled}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	r.State, r.Reason, r.Attempts, r.NextAt = machine.State(state), machine.DeadReason(reason), int(attempts), instant(next)
	r.Last.Attempt, r.Last.Status, r.LastAt, r.SettledAt = int(lastAttempt), int(lastStatus), instant(lastAt), instant(settled)
	return nil
}

// load reads record id whole (event, delivery, history), locking its
// delivery row if lock. ok is false if there is no such record.
func (c *Core) load(ctx context.Context, tx Tx, id string, lock bool) (r store.Record, ok bool, err error) {
	q := `SELECT ` + deliveryCols + `, e.seq, e.payload, e.accepted_at
		FROM deliveries d JOIN events e ON e.id = d.id WHERE d.id = $1`
	if lock {
		q += c.d.Lock
	}
	var seq, accepted int64
	err = scanDelivery(tx.QueryRow(ctx, q, id), &r, &seq, &r.Payload, &accepted)
	if c.d.NoRows(err) {
		return store.Record{}, false, nil
	}
	if err != nil {
		return store.Record{}, false, err
	}
	r.ID, r.Seq, r.AcceptedAt = id, uint64(seq), instant(accepted)
	if r.Payload == nil {
		r.Payload = []byte{}
	}
	r.History, err = c.history(ctx, tx, id)
	return r, err == nil, err
}

// history reads record id's operator actions, oldest first.
func (c *Core) history(ctx context.Context, tx Tx, id string) ([]store.Action, error) {
	rows, err := tx.Query(ctx, `SELECT kind, operator, at, token, attempts, reason, last_attempt, last_status, last_detail
		FROM actions WHERE id = $1 ORDER BY n`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Action
	for rows.Next() {
		var a store.Action
		var kind, at, token, attempts, reason, lastAttempt, lastStatus int64
		if err := rows.Scan(&kind, &a.By, &at, &token, &attempts, &reason, &lastAttempt, &lastStatus, &a.Last.Detail); err != nil {
			return nil, err
		}
		a.Kind, a.At, a.Token, a.Attempts, a.Reason = store.ActionKind(kind), instant(at), uint64(token), int(attempts), machine.DeadReason(reason)
		a.Last.Attempt, a.Last.Status = int(lastAttempt), int(lastStatus)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Pending implements store.Store.
func (c *Core) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckLease("pending", l); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: pending on stream %q: limit %d is below 1", store.ErrBadArgument, l.Stream, limit)
	}
	var out []machine.Record
	err := c.read(ctx, "pending", func(tx Tx, now int64) error {
		out = out[:0]
		h, _, _, err := c.readStream(ctx, tx, l.Stream, "")
		if err != nil {
			return err
		}
		if err := store.CheckHeld("pending", h, l, instant(now)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT d.id, d.seq, e.payload, d.budget_from, d.state, d.attempts, d.next_at
			FROM deliveries d JOIN events e ON e.id = d.id
			WHERE d.stream = $1 AND d.seq > $2 AND d.state IN (1, 2, 3)
			ORDER BY d.seq LIMIT $3`, l.Stream, int64(after), limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r machine.Record
			var seq, budget, state, attempts, next int64
			if err := rows.Scan(&r.ID, &seq, &r.Payload, &budget, &state, &attempts, &next); err != nil {
				return err
			}
			r.Seq, r.AcceptedAt, r.State, r.Attempts, r.NextAt = uint64(seq), instant(budget), machine.State(state), int(attempts), instant(next)
			if r.Payload == nil {
				r.Payload = []byte{}
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeDelivery writes r's delivery state, last outcome and settling.
func (c *Core) writeDelivery(ctx context.Context, tx Tx, id string, r store.Record) error {
	return tx.Exec(ctx, `UPDATE deliveries SET state = $2, attempts = $3, next_at = $4, reason = $5,
		last_attempt = $6, last_status = $7, last_detail = $8, last_at = $9, settled_at = $10 WHERE id = $1`,
		id, int64(r.State), int64(r.Attempts), micros(r.NextAt), int64(r.Reason),
		int64(r.Last.Attempt), int64(r.Last.Status), r.Last.Detail, micros(r.LastAt), micros(r.SettledAt))
}

// Get implements store.Store.
func (c *Core) Get(ctx context.Context, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	if err := store.CheckName("get", "id", id); err != nil {
		return store.Record{}, err
	}
	var r store.Record
	err := c.read(ctx, "get", func(tx Tx, _ int64) error {
		var ok bool
		var err error
		r, ok, err = c.load(ctx, tx, id, false)
		if err == nil && !ok {
			return fmt.Errorf("%w: get %q", store.ErrNotFound, id)
		}
		return err
	})
	return r, err
}

// Ping implements store.Pinger: a read transaction that reads the
// store's clock and one row of the schema, so that the database itself
// answered, not only a connection. It changes nothing.
func (c *Core) Ping(ctx context.Context) error {
	return c.read(ctx, "ping", func(tx Tx, _ int64) error {
		var n int64
		return tx.QueryRow(ctx, `SELECT count(*) FROM streams WHERE name = ''`).Scan(&n)
	})
}

// DeadLetters implements store.Store.
func (c *Core) DeadLetters(ctx context.Context, stream string, after uint64, limit int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckName("dead letters", "stream", stream); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: dead letters of stream %q: limit %d is below 1", store.ErrBadArgument, stream, limit)
	}
	var out []store.Record
	err := c.read(ctx, "dead letters", func(tx Tx, _ int64) error {
		out = out[:0]
		ids, err := c.ids(ctx, tx, `SELECT id FROM deliveries WHERE stream = $1 AND seq > $2 AND state = 5 ORDER BY seq LIMIT $3`,
			stream, int64(after), limit)
		if err != nil {
			return err
		}
		for _, id := range ids {
			r, _, err := c.load(ctx, tx, id, false)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ids runs a query of IDs and reads them all.
func (c *Core) ids(ctx context.Context, tx Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Replay implements store.Store.
func (c *Core) Replay(ctx context.Context, id, by string) (store.Record, error) {
	return c.operate(ctx, "replay", id, by, func(tx Tx, r *store.Record, now int64) error {
		token, err := c.nextToken(ctx, tx)
		if err != nil {
			return err
		}
		// The replay's own token: every lease granted before it is
		// stale, and the stream is free to claim at once.
		// The hold of the last release is lifted: the replayed record
		// is due now.
		if err := tx.Exec(ctx, `UPDATE streams SET lease_owner = '', lease_token = $2, lease_expires = $3, lease_released = TRUE,
			release_until = $3 WHERE name = $1`, r.Stream, int64(token), now); err != nil {
			return err
		}
		store.ApplyReplay(r, by, instant(now), token)
		if err := tx.Exec(ctx, `UPDATE deliveries SET budget_from = $2 WHERE id = $1`, id, now); err != nil {
			return err
		}
		if err := c.writeDelivery(ctx, tx, id, *r); err != nil {
			return err
		}
		return refreshDue(ctx, tx, r.Stream)
	})
}

// Discard implements store.Store.
func (c *Core) Discard(ctx context.Context, id, by string) (store.Record, error) {
	return c.operate(ctx, "discard", id, by, func(tx Tx, r *store.Record, now int64) error {
		store.ApplyDiscard(r, by, instant(now))
		return c.writeDelivery(ctx, tx, id, *r)
	})
}

// operate runs an operator action on the dead letter id, under its
// stream's lock, and appends the action to its history.
func (c *Core) operate(ctx context.Context, op, id, by string, act func(tx Tx, r *store.Record, now int64) error) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	if err := store.CheckOperator(op, id, by); err != nil {
		return store.Record{}, err
	}
	var out store.Record
	err := c.write(ctx, op, func(tx Tx, now int64) error {
		var stream string
		err := tx.QueryRow(ctx, `SELECT stream FROM deliveries WHERE id = $1`, id).Scan(&stream)
		if c.d.NoRows(err) {
			return fmt.Errorf("%w: %s %q", store.ErrNotFound, op, id)
		}
		if err != nil {
			return err
		}
		// The stream first, then the record: the order Save locks in.
		if _, _, _, err := c.lockStream(ctx, tx, stream); err != nil {
			return err
		}
		r, _, err := c.load(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := store.CheckDeadLetter(op, r); err != nil {
			return err
		}
		if err := act(tx, &r, now); err != nil {
			return err
		}
		a := r.History[len(r.History)-1]
		if err := tx.Exec(ctx, `INSERT INTO actions (id, n, kind, operator, at, token, attempts, reason, last_attempt, last_status, last_detail)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			id, len(r.History), int64(a.Kind), a.By, micros(a.At), int64(a.Token), int64(a.Attempts), int64(a.Reason),
			int64(a.Last.Attempt), int64(a.Last.Status), a.Last.Detail); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}

// DeleteSettled implements store.Store.
func (c *Core) DeleteSettled(ctx context.Context, retention time.Duration, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	switch {
	case retention <= 0:
		return 0, fmt.Errorf("%w: delete settled: retention %v is not positive", store.ErrBadArgument, retention)
	case limit < 1:
		return 0, fmt.Errorf("%w: delete settled: limit %d is below 1", store.ErrBadArgument, limit)
	}
	var n int
	err := c.write(ctx, "delete settled", func(tx Tx, now int64) error {
		ids, err := c.ids(ctx, tx, `SELECT id FROM deliveries WHERE settled_at <> 0 AND settled_at <= $1
			ORDER BY settled_at, id LIMIT $2`+c.d.SkipLocked, now-retention.Microseconds(), limit)
		if err != nil {
			return err
		}
		for _, id := range ids {
			for _, q := range []string{`DELETE FROM actions WHERE id = $1`, `DELETE FROM deliveries WHERE id = $1`, `DELETE FROM events WHERE id = $1`} {
				if err := tx.Exec(ctx, q, id); err != nil {
					return err
				}
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

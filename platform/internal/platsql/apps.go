package platsql

import (
	"context"
	"fmt"

	"github.com/courierlab/courier/platform"
)

func notFound(what, id string) error { return fmt.Errorf("%w: %s %q", platform.ErrNotFound, what, id) }

// appExists reads app's row with lock appended; ok false if there is none.
func (c *Core) appExists(ctx context.Context, tx Tx, app, lock string) (bool, error) {
	var id string
	err := tx.QueryRow(ctx, `SELECT id FROM platform_apps WHERE id = $1`+lock, app).Scan(&id)
	if c.d.NoRows(err) {
		return false, nil
	}
	return err == nil, err
}

func (c *Core) CreateApp(ctx context.Context, a platform.Application) (platform.Application, error) {
	if err := platform.CheckApplication(a); err != nil {
		return platform.Application{}, err
	}
	err := c.write(ctx, "CreateApp", func(tx Tx, now int64) error {
		if ok, err := c.appExists(ctx, tx, a.ID, ""); err != nil || ok {
			return orConflict(err, ok, "application", a.ID)
		}
		a.CreatedAt, a.UpdatedAt = instant(now), instant(now)
		_, err := tx.Exec(ctx, `INSERT INTO platform_apps (id, name, created_at, updated_at) VALUES ($1, $2, $3, $3)`, a.ID, a.Name, now)
		return err
	})
	if err != nil {
		return platform.Application{}, err
	}
	return a, nil
}

// orConflict is err, or ErrConflict if ok says the ID is taken.
func orConflict(err error, ok bool, what, id string) error {
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("%w: %s %q exists", platform.ErrConflict, what, id)
	}
	return nil
}

const appColumns = `id, name, created_at, updated_at`

func scanApp(r Row) (platform.Application, error) {
	var a platform.Application
	var created, updated int64
	err := r.Scan(&a.ID, &a.Name, &created, &updated)
	a.CreatedAt, a.UpdatedAt = instant(created), instant(updated)
	return a, err
}

func (c *Core) GetApp(ctx context.Context, id string) (platform.Application, error) {
	if !platform.IsID(platform.AppKind, id) {
		return platform.Application{}, notFound("application", id)
	}
	var a platform.Application
	err := c.read(ctx, "GetApp", func(tx Tx) error {
		var err error
		a, err = scanApp(tx.QueryRow(ctx, `SELECT `+appColumns+` FROM platform_apps WHERE id = $1`, id))
		if c.d.NoRows(err) {
			return notFound("application", id)
		}
		return err
	})
	return a, err
}

func (c *Core) ListApps(ctx context.Context, after string, limit int) ([]platform.Application, error) {
	if err := platform.CheckPage(platform.AppKind, after, limit); err != nil {
		return nil, err
	}
	out := []platform.Application{}
	err := c.read(ctx, "ListApps", func(tx Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+appColumns+` FROM platform_apps WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			a, err := scanApp(rows)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	return out, err
}

func (c *Core) UpdateApp(ctx context.Context, a platform.Application) (platform.Application, error) {
	if err := platform.CheckApplication(a); err != nil {
		return platform.Application{}, err
	}
	var out platform.Application
	err := c.write(ctx, "UpdateApp", func(tx Tx, now int64) error {
		n, err := tx.Exec(ctx, `UPDATE platform_apps SET name = $1, updated_at = $2 WHERE id = $3`, a.Name, now, a.ID)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("application", a.ID)
		}
		out, err = scanApp(tx.QueryRow(ctx, `SELECT `+appColumns+` FROM platform_apps WHERE id = $1`, a.ID))
		return err
	})
	return out, err
}

func (c *Core) DeleteApp(ctx context.Context, id string) error {
	if !platform.IsID(platform.AppKind, id) {
		return notFound("application", id)
	}
	return c.write(ctx, "DeleteApp", func(tx Tx, _ int64) error {
		if ok, err := c.appExists(ctx, tx, id, c.d.Update); err != nil || !ok {
			if err == nil {
				err = notFound("application", id)
			}
			return err
		}
		for _, q := range []string{
			`DELETE FROM platform_fanout WHERE message_id IN (SELECT id FROM platform_messages WHERE app_id = $1)`,
			`DELETE FROM platform_messages WHERE app_id = $1`,
			`DELETE FROM platform_endpoints WHERE app_id = $1`,
			`DELETE FROM platform_attempts WHERE app_id = $1`,
			`DELETE FROM platform_endpoint_health WHERE app_id = $1`,
			`DELETE FROM platform_replay_jobs WHERE app_id = $1`,
			`DELETE FROM platform_tokens WHERE app_id = $1`,
			`DELETE FROM platform_apps WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
}

func (c *Core) CreateEventType(ctx context.Context, t platform.EventType) (platform.EventType, error) {
	if err := platform.CheckEventType(t); err != nil {
		return platform.EventType{}, err
	}
	err := c.write(ctx, "CreateEventType", func(tx Tx, now int64) error {
		var name string
		err := tx.QueryRow(ctx, `SELECT name FROM platform_event_types WHERE name = $1`, t.Name).Scan(&name)
		if err := orConflict(noRow(c.d, err), err == nil, "event type", t.Name); err != nil {
			return err
		}
		t.CreatedAt = instant(now)
		_, err = tx.Exec(ctx, `INSERT INTO platform_event_types (name, description, created_at) VALUES ($1, $2, $3)`, t.Name, t.Description, now)
		return err
	})
	if err != nil {
		return platform.EventType{}, err
	}
	return t, nil
}

// noRow is err, or nil if it only says no row was found.
func noRow(d Dialect, err error) error {
	if d.NoRows(err) {
		return nil
	}
	return err
}

func (c *Core) ListEventTypes(ctx context.Context, after string, limit int) ([]platform.EventType, error) {
	if err := platform.CheckPage("", after, limit); err != nil {
		return nil, err
	}
	out := []platform.EventType{}
	err := c.read(ctx, "ListEventTypes", func(tx Tx) error {
		rows, err := tx.Query(ctx, `SELECT name, description, created_at FROM platform_event_types WHERE name > $1 ORDER BY name LIMIT $2`, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t platform.EventType
			var at int64
			if err := rows.Scan(&t.Name, &t.Description, &at); err != nil {
				return err
			}
			t.CreatedAt = instant(at)
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

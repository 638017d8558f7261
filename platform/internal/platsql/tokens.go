package platsql

import (
	"context"
	"fmt"

	"github.com/courierlab/courier/platform"
)

const tokenColumns = `id, app_id, name, hash, created_at`

func scanToken(r Row) (platform.AppToken, error) {
	var t platform.AppToken
	var created int64
	err := r.Scan(&t.ID, &t.AppID, &t.Name, &t.Hash, &created)
	t.CreatedAt = instant(created)
	return t, err
}

func (c *Core) CreateToken(ctx context.Context, t platform.AppToken) (platform.AppToken, error) {
	if err := platform.CheckToken(t); err != nil {
		return platform.AppToken{}, err
	}
	err := c.write(ctx, "CreateToken", func(tx Tx, now int64) error {
		// The application's row, held exclusively, orders the creations
		// of its tokens, so the count below cannot be raced past.
		if ok, err := c.appExists(ctx, tx, t.AppID, c.d.Update); err != nil || !ok {
			if err == nil {
				err = notFound("application", t.AppID)
			}
			return err
		}
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM platform_tokens WHERE id = $1 OR hash = $2`, t.ID, t.Hash).Scan(&id)
		if err := orConflict(noRow(c.d, err), err == nil, "token", t.ID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM platform_tokens WHERE app_id = $1`, t.AppID).Scan(&n); err != nil {
			return err
		}
		if n >= platform.MaxTokensPerApp {
			return fmt.Errorf("%w: application %q has %d tokens, the most it may have", platform.ErrConflict, t.AppID, n)
		}
		t.CreatedAt = instant(now)
		_, err = tx.Exec(ctx, `INSERT INTO platform_tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5)`, t.ID, t.AppID, t.Name, t.Hash, now)
		return err
	})
	if err != nil {
		return platform.AppToken{}, err
	}
	return t, nil
}

func (c *Core) ListTokens(ctx context.Context, app, after string, limit int) ([]platform.AppToken, error) {
	if err := platform.CheckPage(platform.TokenKind, after, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.AppKind, app) {
		return nil, notFound("application", app)
	}
	out := []platform.AppToken{}
	err := c.read(ctx, "ListTokens", func(tx Tx) error {
		if ok, err := c.appExists(ctx, tx, app, ""); err != nil || !ok {
			if err == nil {
				err = notFound("application", app)
			}
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+tokenColumns+` FROM platform_tokens WHERE app_id = $1 AND id > $2 ORDER BY id LIMIT $3`, app, after, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanToken(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

func (c *Core) DeleteToken(ctx context.Context, app, id string) error {
	if !platform.IsID(platform.TokenKind, id) || !platform.IsID(platform.AppKind, app) {
		return notFound("token", id)
	}
	return c.write(ctx, "DeleteToken", func(tx Tx, _ int64) error {
		n, err := tx.Exec(ctx, `DELETE FROM platform_tokens WHERE id = $1 AND app_id = $2`, id, app)
		if err == nil && n == 0 {
			err = notFound("token", id)
		}
		return err
	})
}

func (c *Core) TokenByHash(ctx context.Context, hash string) (platform.AppToken, error) {
	var t platform.AppToken
	err := c.read(ctx, "TokenByHash", func(tx Tx) error {
		var err error
		t, err = scanToken(tx.QueryRow(ctx, `SELECT `+tokenColumns+` FROM platform_tokens WHERE hash = $1`, hash))
		if c.d.NoRows(err) {
			return notFound("token", "with that hash")
		}
		return err
	})
	return t, err
}

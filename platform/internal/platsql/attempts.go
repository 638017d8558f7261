package platsql

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/courierlab/courier/platform"
)

// micro is t in microseconds, 0 for the zero time ("never").
func micro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// instantOr0 is micro's inverse.
func instantOr0(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return instant(us)
}

const attemptColumns = `id, app_id, message_id, endpoint_id, delivery_id, attempt, at, duration_us, status, outcome, detail,
	response_headers, response_body`

func scanAttempt(r Row) (platform.Attempt, error) {
	var a platform.Attempt
	var at, dur int64
	var headers string
	if err := r.Scan(&a.ID, &a.AppID, &a.MessageID, &a.EndpointID, &a.DeliveryID, &a.Attempt, &at, &dur, &a.Status,
		&a.Outcome, &a.Detail, &headers, &a.ResponseBody); err != nil {
		return platform.Attempt{}, err
	}
	if err := json.Unmarshal([]byte(headers), &a.ResponseHeaders); err != nil {
		return platform.Attempt{}, fmt.Errorf("attempt %s: response_headers: %w", a.ID, err)
	}
	a.At, a.Duration = instant(at), time.Duration(dur)*time.Microsecond
	return platform.CleanAttempt(a), nil // non-nil headers and body
}

const healthColumns = `endpoint_id, app_id, last_attempt, last_success, failing_since, streak, successes, failures,
	disabled_reason, disabled_at`

// loadHealth reads endpoint ep's health, locked for update if lock; the
// zero health if it has none.
func (c *Core) loadHealth(ctx context.Context, tx Tx, app, ep, lock string) (platform.EndpointHealth, error) {
	h := platform.EndpointHealth{EndpointID: ep, AppID: app}
	var last, success, failing, disabled int64
	err := tx.QueryRow(ctx, `SELECT `+healthColumns+` FROM platform_endpoint_health WHERE endpoint_id = $1`+lock, ep).Scan(
		&h.EndpointID, &h.AppID, &last, &success, &failing, &h.Streak, &h.Successes, &h.Failures, &h.DisabledReason, &disabled)
	if c.d.NoRows(err) {
		return h, nil
	}
	h.LastAttempt, h.LastSuccess, h.FailingSince, h.DisabledAt = instantOr0(last), instantOr0(success), instantOr0(failing), instantOr0(disabled)
	return h, err
}

func saveHealth(ctx context.Context, tx Tx, h platform.EndpointHealth) error {
	_, err := tx.Exec(ctx, `INSERT INTO platform_endpoint_health (`+healthColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (endpoint_id) DO UPDATE SET last_attempt = excluded.last_attempt, last_success = excluded.last_success,
			failing_since = excluded.failing_since, streak = excluded.streak, successes = excluded.successes,
			failures = excluded.failures, disabled_reason = excluded.disabled_reason, disabled_at = excluded.disabled_at`,
		h.EndpointID, h.AppID, micro(h.LastAttempt), micro(h.LastSuccess), micro(h.FailingSince), h.Streak, h.Successes,
		h.Failures, h.DisabledReason, micro(h.DisabledAt))
	return err
}

// endpointOfApp reads whether app has endpoint ep, with lock appended,
// and whether it is enabled.
func (c *Core) endpointOfApp(ctx context.Context, tx Tx, app, ep, lock string) (found, enabled bool, err error) {
	var on int64
	err = tx.QueryRow(ctx, `SELECT enabled FROM platform_endpoints WHERE id = $1 AND app_id = $2`+lock, ep, app).Scan(&on)
	if c.d.NoRows(err) {
		return false, false, notFound("endpoint", ep)
	}
	return err == nil, on != 0, err
}

func (c *Core) RecordAttempt(ctx context.Context, a platform.Attempt) (platform.EndpointHealth, error) {
	if err := platform.CheckAttempt(a); err != nil {
		return platform.EndpointHealth{}, err
	}
	a = platform.CleanAttempt(a)
	headers, _ := json.Marshal(a.ResponseHeaders) // strings always marshal
	var h platform.EndpointHealth
	err := c.write(ctx, "RecordAttempt", func(tx Tx, _ int64) error {
		if _, _, err := c.endpointOfApp(ctx, tx, a.AppID, a.EndpointID, c.d.Share); err != nil {
			return err
		}
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM platform_attempts WHERE id = $1`, a.ID).Scan(&id)
		if err := orConflict(noRow(c.d, err), err == nil, "attempt", a.ID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO platform_attempts (`+attemptColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			a.ID, a.AppID, a.MessageID, a.EndpointID, a.DeliveryID, a.Attempt, a.At.UnixMicro(), a.Duration.Microseconds(),
			a.Status, a.Outcome, a.Detail, string(headers), a.ResponseBody); err != nil {
			return err
		}
		if h, err = c.loadHealth(ctx, tx, a.AppID, a.EndpointID, c.d.Update); err != nil {
			return err
		}
		h = h.Note(a)
		return saveHealth(ctx, tx, h)
	})
	return h, err
}

// listAttempts lists up to limit attempts whose column col is key and
// whose application is app, newest first after after.
func (c *Core) listAttempts(ctx context.Context, tx Tx, col, key, app, after string, limit int) ([]platform.Attempt, error) {
	q := `SELECT ` + attemptColumns + ` FROM platform_attempts WHERE ` + col + ` = $1 AND app_id = $2`
	args := []any{key, app, limit}
	if after != "" {
		q += ` AND id < $4`
		args = append(args, after)
	}
	rows, err := tx.Query(ctx, q+` ORDER BY id DESC LIMIT $3`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []platform.Attempt{}
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (c *Core) ListMessageAttempts(ctx context.Context, app, msg, after string, limit int) ([]platform.Attempt, error) {
	if err := platform.CheckPage(platform.AttemptKind, after, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.MessageKind, msg) || !platform.IsID(platform.AppKind, app) {
		return nil, notFound("message", msg)
	}
	var out []platform.Attempt
	err := c.read(ctx, "ListMessageAttempts", func(tx Tx) error {
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM platform_messages WHERE id = $1 AND app_id = $2`, msg, app).Scan(&id)
		if c.d.NoRows(err) {
			return notFound("message", msg)
		}
		if err != nil {
			return err
		}
		out, err = c.listAttempts(ctx, tx, "message_id", msg, app, after, limit)
		return err
	})
	return out, err
}

func (c *Core) ListEndpointAttempts(ctx context.Context, app, ep, after string, limit int) ([]platform.Attempt, error) {
	if err := platform.CheckPage(platform.AttemptKind, after, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.EndpointKind, ep) || !platform.IsID(platform.AppKind, app) {
		return nil, notFound("endpoint", ep)
	}
	var out []platform.Attempt
	err := c.read(ctx, "ListEndpointAttempts", func(tx Tx) error {
		if _, _, err := c.endpointOfApp(ctx, tx, app, ep, ""); err != nil {
			return err
		}
		var err error
		out, err = c.listAttempts(ctx, tx, "endpoint_id", ep, app, after, limit)
		return err
	})
	return out, err
}

func (c *Core) DeleteAttemptsBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	if limit < 1 || limit > platform.MaxLimit {
		return 0, &platform.FieldError{Field: "limit", Why: fmt.Sprintf("is %d; must be within [1, %d]", limit, platform.MaxLimit)}
	}
	var n int64
	err := c.write(ctx, "DeleteAttemptsBefore", func(tx Tx, _ int64) error {
		var err error
		n, err = tx.Exec(ctx, `DELETE FROM platform_attempts WHERE id IN
			(SELECT id FROM platform_attempts WHERE at < $1 ORDER BY at, id LIMIT $2)`, t.UnixMicro(), limit)
		return err
	})
	return int(n), err
}

func (c *Core) GetHealth(ctx context.Context, app, ep string) (platform.EndpointHealth, error) {
	if !platform.IsID(platform.EndpointKind, ep) || !platform.IsID(platform.AppKind, app) {
		return platform.EndpointHealth{}, notFound("endpoint", ep)
	}
	var h platform.EndpointHealth
	err := c.read(ctx, "GetHealth", func(tx Tx) error {
		if _, _, err := c.endpointOfApp(ctx, tx, app, ep, ""); err != nil {
			return err
		}
		var err error
		h, err = c.loadHealth(ctx, tx, app, ep, "")
		return err
	})
	return h, err
}

func (c *Core) DisableEndpoint(ctx context.Context, app, ep, reason string) (platform.Endpoint, bool, error) {
	if err := platform.CheckDisableReason(reason); err != nil {
		return platform.Endpoint{}, false, err
	}
	if !platform.IsID(platform.EndpointKind, ep) || !platform.IsID(platform.AppKind, app) {
		return platform.Endpoint{}, false, notFound("endpoint", ep)
	}
	var out platform.Endpoint
	var changed bool
	err := c.write(ctx, "DisableEndpoint", func(tx Tx, now int64) error {
		_, enabled, err := c.endpointOfApp(ctx, tx, app, ep, c.d.Update)
		if err != nil {
			return err
		}
		if changed = enabled; changed {
			if _, err := tx.Exec(ctx, `UPDATE platform_endpoints SET enabled = 0, updated_at = $1 WHERE id = $2`, now, ep); err != nil {
				return err
			}
			h, err := c.loadHealth(ctx, tx, app, ep, c.d.Update)
			if err != nil {
				return err
			}
			h.DisabledReason, h.DisabledAt = reason, instant(now)
			if err := saveHealth(ctx, tx, h); err != nil {
				return err
			}
		}
		out, err = scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM platform_endpoints WHERE id = $1`, ep))
		return err
	})
	return out, changed, err
}

// reenable clears endpoint ep's failing streak and disabling
// (EndpointHealth.Reenabled), when an update enables it again.
func (c *Core) reenable(ctx context.Context, tx Tx, app, ep string) error {
	h, err := c.loadHealth(ctx, tx, app, ep, c.d.Update)
	if err != nil {
		return err
	}
	return saveHealth(ctx, tx, h.Reenabled())
}

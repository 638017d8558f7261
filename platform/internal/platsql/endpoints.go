package platsql

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/courierlab/courier/platform"
)

const endpointColumns = `id, app_id, url, description, event_types, secrets, enabled, ordering, rate_limit, max_in_flight,
	old_secrets, headers, attempt_timeout_ms, max_attempts, base_backoff_ns, max_backoff_ns, reject_statuses, created_at, updated_at`

// oldSecret is how an OldSecret is kept in the old_secrets column (JSON).
type oldSecret struct {
	Secret    string `json:"secret"`
	ExpiresAt int64  `json:"expires_at_us"`
}

func scanEndpoint(r Row) (platform.Endpoint, error) {
	var e platform.Endpoint
	var types, secrets, ordering, old, headers, reject string
	var enabled, rate, flight, timeout, attempts, base, maxBackoff, created, updated int64
	if err := r.Scan(&e.ID, &e.AppID, &e.URL, &e.Description, &types, &secrets, &enabled, &ordering, &rate, &flight,
		&old, &headers, &timeout, &attempts, &base, &maxBackoff, &reject, &created, &updated); err != nil {
		return platform.Endpoint{}, err
	}
	if err := json.Unmarshal([]byte(reject), &e.RejectStatuses); err != nil { // "null": nil, the default
		return platform.Endpoint{}, fmt.Errorf("endpoint %s: reject_statuses: %w", e.ID, err)
	}
	e.MaxAttempts, e.BaseBackoff, e.MaxBackoff = int(attempts), time.Duration(base), time.Duration(maxBackoff)
	if err := json.Unmarshal([]byte(headers), &e.Headers); err != nil {
		return platform.Endpoint{}, fmt.Errorf("endpoint %s: headers: %w", e.ID, err)
	}
	if len(e.Headers) == 0 {
		e.Headers = nil
	}
	var olds []oldSecret
	if err := json.Unmarshal([]byte(old), &olds); err != nil {
		return platform.Endpoint{}, fmt.Errorf("endpoint %s: old_secrets: %w", e.ID, err)
	}
	for _, o := range olds {
		e.OldSecrets = append(e.OldSecrets, platform.OldSecret{Secret: o.Secret, ExpiresAt: instant(o.ExpiresAt)})
	}
	if err := json.Unmarshal([]byte(types), &e.EventTypes); err != nil {
		return platform.Endpoint{}, fmt.Errorf("endpoint %s: event_types: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(secrets), &e.Secrets); err != nil {
		return platform.Endpoint{}, fmt.Errorf("endpoint %s: secrets: %w", e.ID, err)
	}
	if e.EventTypes == nil {
		e.EventTypes = []string{}
	}
	e.Enabled, e.Ordering, e.RateLimit, e.MaxInFlight = enabled != 0, platform.Ordering(ordering), int(rate), int(flight)
	e.AttemptTimeout = time.Duration(timeout) * time.Millisecond
	e.CreatedAt, e.UpdatedAt = instant(created), instant(updated)
	return e, nil
}

// endpointArgs are e's mutable columns, in endpointColumns' order from
// url to reject_statuses.
func endpointArgs(e platform.Endpoint) []any {
	types, _ := json.Marshal(append([]string{}, e.EventTypes...)) // strings always marshal
	secrets, _ := json.Marshal(e.Secrets)
	enabled := 0
	if e.Enabled {
		enabled = 1
	}
	olds := []oldSecret{}
	for _, o := range e.OldSecrets {
		olds = append(olds, oldSecret{Secret: o.Secret, ExpiresAt: o.ExpiresAt.UnixMicro()})
	}
	old, _ := json.Marshal(olds)
	headers, _ := json.Marshal(e.Headers)       // nil is null, read back as none
	reject, _ := json.Marshal(e.RejectStatuses) // nil: "null", the default; empty: "[]", none
	return []any{e.URL, e.Description, string(types), string(secrets), enabled, string(e.Ordering), int64(e.RateLimit), int64(e.MaxInFlight),
		string(old), string(headers), e.AttemptTimeout.Milliseconds(),
		int64(e.MaxAttempts), int64(e.BaseBackoff), int64(e.MaxBackoff), string(reject)}
}

// checkTypes checks that every type of a filter exists.
func (c *Core) checkTypes(ctx context.Context, tx Tx, types []string) error {
	for i, t := range types {
		var name string
		err := tx.QueryRow(ctx, `SELECT name FROM platform_event_types WHERE name = $1`, t).Scan(&name)
		if c.d.NoRows(err) {
			return &platform.FieldError{Field: fmt.Sprintf("event_types[%d]", i), Why: fmt.Sprintf("%q is not an event type; create it first", t)}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Core) CreateEndpoint(ctx context.Context, e platform.Endpoint) (platform.Endpoint, error) {
	if err := platform.CheckEndpoint(e); err != nil {
		return platform.Endpoint{}, err
	}
	var out platform.Endpoint
	err := c.write(ctx, "CreateEndpoint", func(tx Tx, now int64) error {
		if ok, err := c.appExists(ctx, tx, e.AppID, c.d.Share); err != nil || !ok {
			if err == nil {
				err = notFound("application", e.AppID)
			}
			return err
		}
		if err := c.checkTypes(ctx, tx, e.EventTypes); err != nil {
			return err
		}
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM platform_endpoints WHERE id = $1`, e.ID).Scan(&id)
		if err := orConflict(noRow(c.d, err), err == nil, "endpoint", e.ID); err != nil {
			return err
		}
		args := append([]any{e.ID, e.AppID}, endpointArgs(e)...)
		if _, err := tx.Exec(ctx, `INSERT INTO platform_endpoints (`+endpointColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18)`, append(args, now)...); err != nil {
			return err
		}
		out, err = scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM platform_endpoints WHERE id = $1`, e.ID))
		return err
	})
	return out, err
}

func (c *Core) GetEndpoint(ctx context.Context, id string) (platform.Endpoint, error) {
	if !platform.IsID(platform.EndpointKind, id) {
		return platform.Endpoint{}, notFound("endpoint", id)
	}
	var e platform.Endpoint
	err := c.read(ctx, "GetEndpoint", func(tx Tx) error {
		var err error
		e, err = scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM platform_endpoints WHERE id = $1`, id))
		if c.d.NoRows(err) {
			return notFound("endpoint", id)
		}
		return err
	})
	return e, err
}

func (c *Core) ListEndpoints(ctx context.Context, app, after string, limit int) ([]platform.Endpoint, error) {
	if err := platform.CheckPage(platform.EndpointKind, after, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.AppKind, app) {
		return nil, notFound("application", app)
	}
	var out []platform.Endpoint
	err := c.read(ctx, "ListEndpoints", func(tx Tx) error {
		if ok, err := c.appExists(ctx, tx, app, ""); err != nil || !ok {
			if err == nil {
				err = notFound("application", app)
			}
			return err
		}
		var err error
		out, err = c.endpointsOf(ctx, tx, app, after, limit)
		return err
	})
	return out, err
}

// endpointsOf lists up to limit of app's endpoints in ID order after
// after.
func (c *Core) endpointsOf(ctx context.Context, tx Tx, app, after string, limit int) ([]platform.Endpoint, error) {
	rows, err := tx.Query(ctx, `SELECT `+endpointColumns+` FROM platform_endpoints
		WHERE app_id = $1 AND id > $2 ORDER BY id LIMIT $3`, app, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []platform.Endpoint{}
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (c *Core) UpdateEndpoint(ctx context.Context, e platform.Endpoint) (platform.Endpoint, error) {
	if err := platform.CheckEndpoint(e); err != nil {
		return platform.Endpoint{}, err
	}
	var out platform.Endpoint
	err := c.write(ctx, "UpdateEndpoint", func(tx Tx, now int64) error {
		_, wasEnabled, err := c.endpointOfApp(ctx, tx, e.AppID, e.ID, c.d.Update)
		if err != nil {
			return err
		}
		if e.Enabled && !wasEnabled {
			if err := c.reenable(ctx, tx, e.AppID, e.ID); err != nil {
				return err
			}
		}
		if err := c.checkTypes(ctx, tx, e.EventTypes); err != nil {
			return err
		}
		args := append(endpointArgs(e), now, e.ID, e.AppID)
		n, err := tx.Exec(ctx, `UPDATE platform_endpoints SET url = $1, description = $2, event_types = $3, secrets = $4,
			enabled = $5, ordering = $6, rate_limit = $7, max_in_flight = $8, old_secrets = $9, headers = $10,
			attempt_timeout_ms = $11, max_attempts = $12, base_backoff_ns = $13, max_backoff_ns = $14, reject_statuses = $15,
			updated_at = $16 WHERE id = $17 AND app_id = $18`, args...)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound("endpoint", e.ID)
		}
		out, err = scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM platform_endpoints WHERE id = $1`, e.ID))
		return err
	})
	return out, err
}

func (c *Core) DeleteEndpoint(ctx context.Context, app, id string) error {
	if !platform.IsID(platform.EndpointKind, id) || !platform.IsID(platform.AppKind, app) {
		return notFound("endpoint", id)
	}
	return c.write(ctx, "DeleteEndpoint", func(tx Tx, _ int64) error {
		n, err := tx.Exec(ctx, `DELETE FROM platform_endpoints WHERE id = $1 AND app_id = $2`, id, app)
		if err == nil && n == 0 {
			err = notFound("endpoint", id)
		}
		for _, q := range []string{`DELETE FROM platform_attempts WHERE endpoint_id = $1`, `DELETE FROM platform_endpoint_health WHERE endpoint_id = $1`,
			`DELETE FROM platform_replay_jobs WHERE endpoint_id = $1`} {
			if err == nil {
				_, err = tx.Exec(ctx, q, id)
			}
		}
		return err
	})
}

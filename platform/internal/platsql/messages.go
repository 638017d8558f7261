package platsql

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/courierlab/courier/platform"
)

const messageColumns = `id, app_id, event_type, idempotency_key, payload, created_at`

// loadMessage reads message id (of app, unless app is "") with its
// fan-out; ok false if there is none.
func (c *Core) loadMessage(ctx context.Context, tx Tx, app, id string) (m platform.Message, ok bool, err error) {
	var at int64
	err = tx.QueryRow(ctx, `SELECT `+messageColumns+` FROM platform_messages WHERE id = $1 AND ($2 = '' OR app_id = $2)`, id, app).
		Scan(&m.ID, &m.AppID, &m.EventType, &m.IdempotencyKey, &m.Payload, &at)
	if c.d.NoRows(err) {
		return platform.Message{}, false, nil
	}
	if err != nil {
		return platform.Message{}, false, err
	}
	m.CreatedAt = instant(at)
	rows, err := tx.Query(ctx, `SELECT endpoint_id, delivery_id, stream, state, detail FROM platform_fanout
		WHERE message_id = $1 ORDER BY endpoint_id`, id)
	if err != nil {
		return platform.Message{}, false, err
	}
	defer rows.Close()
	m.Fanout = []platform.Fanout{}
	for rows.Next() {
		var f platform.Fanout
		var state int64
		if err := rows.Scan(&f.EndpointID, &f.DeliveryID, &f.Stream, &state, &f.Detail); err != nil {
			return platform.Message{}, false, err
		}
		f.State = platform.FanoutState(state)
		m.Fanout = append(m.Fanout, f)
	}
	return m, true, rows.Err()
}

func (c *Core) CreateMessage(ctx context.Context, m platform.Message) (platform.Message, bool, error) {
	if err := platform.CheckMessage(m); err != nil {
		return platform.Message{}, false, err
	}
	var out platform.Message
	created := false
	err := c.write(ctx, "CreateMessage", func(tx Tx, now int64) error {
		if ok, err := c.appExists(ctx, tx, m.AppID, c.d.Share); err != nil || !ok {
			if err == nil {
				err = notFound("application", m.AppID)
			}
			return err
		}
		if m.IdempotencyKey != "" {
			var id string
			err := tx.QueryRow(ctx, `SELECT id FROM platform_messages WHERE app_id = $1 AND idempotency_key = $2`,
				m.AppID, m.IdempotencyKey).Scan(&id)
			if err == nil {
				out, _, err = c.loadMessage(ctx, tx, "", id)
				return err
			}
			if !c.d.NoRows(err) {
				return err
			}
		}
		if _, ok, err := c.loadMessage(ctx, tx, "", m.ID); err != nil || ok {
			return orConflict(err, ok, "message", m.ID)
		}
		var err error
		out, err = c.insertMessage(ctx, tx, m, now)
		created = err == nil
		return err
	})
	if err != nil {
		return platform.Message{}, false, err
	}
	return out, created, nil
}

// insertMessage writes m and its fan-out: a pending entry for each
// endpoint of its application that wants it.
func (c *Core) insertMessage(ctx context.Context, tx Tx, m platform.Message, now int64) (platform.Message, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO platform_messages (`+messageColumns+`) VALUES ($1, $2, $3, $4, $5, $6)`,
		m.ID, m.AppID, m.EventType, m.IdempotencyKey, m.Payload, now); err != nil {
		return platform.Message{}, err
	}
	eps, err := c.endpointsOf(ctx, tx, m.AppID, "", math.MaxInt32)
	if err != nil {
		return platform.Message{}, err
	}
	m.CreatedAt = instant(now)
	m.Fanout = []platform.Fanout{}
	for _, e := range eps {
		if !e.Wants(m.EventType) {
			continue
		}
		f := platform.Fanout{EndpointID: e.ID, DeliveryID: platform.DeliveryID(m.ID, e.ID), Stream: platform.StreamOf(e.ID), State: platform.Pending}
		if _, err := tx.Exec(ctx, `INSERT INTO platform_fanout (message_id, endpoint_id, delivery_id, stream, state, detail)
			VALUES ($1, $2, $3, $4, $5, '')`, m.ID, f.EndpointID, f.DeliveryID, f.Stream, int64(f.State)); err != nil {
			return platform.Message{}, err
		}
		m.Fanout = append(m.Fanout, f)
	}
	return m, nil
}

func (c *Core) GetMessage(ctx context.Context, app, id string) (platform.Message, error) {
	if !platform.IsID(platform.MessageKind, id) || !platform.IsID(platform.AppKind, app) {
		return platform.Message{}, notFound("message", id)
	}
	var m platform.Message
	err := c.read(ctx, "GetMessage", func(tx Tx) error {
		var ok bool
		var err error
		m, ok, err = c.loadMessage(ctx, tx, app, id)
		if err == nil && !ok {
			err = notFound("message", id)
		}
		return err
	})
	return m, err
}

func (c *Core) SetFanout(ctx context.Context, msg, endpoint string, state platform.FanoutState, detail string) error {
	detail, err := platform.CheckFanoutMove(state, detail)
	if err != nil {
		return err
	}
	if !platform.IsID(platform.MessageKind, msg) || !platform.IsID(platform.EndpointKind, endpoint) {
		return notFound("fan-out entry", msg+" "+endpoint)
	}
	return c.write(ctx, "SetFanout", func(tx Tx, _ int64) error {
		var old int64
		err := tx.QueryRow(ctx, `SELECT state FROM platform_fanout WHERE message_id = $1 AND endpoint_id = $2`, msg, endpoint).Scan(&old)
		switch {
		case c.d.NoRows(err):
			return notFound("fan-out entry", msg+" "+endpoint)
		case err != nil:
			return err
		case platform.FanoutState(old) == state:
			return nil
		case platform.FanoutState(old) != platform.Pending:
			return fmtInvalidMove(platform.DeliveryID(msg, endpoint), platform.FanoutState(old))
		}
		_, err = tx.Exec(ctx, `UPDATE platform_fanout SET state = $1, detail = $2
			WHERE message_id = $3 AND endpoint_id = $4 AND state = $5`, int64(state), detail, msg, endpoint, int64(platform.Pending))
		return err
	})
}

func (c *Core) Unfinished(ctx context.Context, after string, limit int) ([]platform.Message, error) {
	if err := platform.CheckPage(platform.MessageKind, after, limit); err != nil {
		return nil, err
	}
	out := []platform.Message{}
	err := c.read(ctx, "Unfinished", func(tx Tx) error {
		ids, err := queryIDs(ctx, tx, `SELECT DISTINCT message_id FROM platform_fanout
			WHERE state = $1 AND message_id > $2 ORDER BY message_id LIMIT $3`, int64(platform.Pending), after, limit)
		if err != nil {
			return err
		}
		out, err = c.loadMessages(ctx, tx, "", ids)
		return err
	})
	return out, err
}

// loadMessages loads the messages ids of app ("": any application), in
// that order, leaving out those that are gone.
func (c *Core) loadMessages(ctx context.Context, tx Tx, app string, ids []string) ([]platform.Message, error) {
	out := []platform.Message{}
	for _, id := range ids {
		m, ok, err := c.loadMessage(ctx, tx, app, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func (c *Core) ListMessages(ctx context.Context, app string, f platform.MessageFilter, after string, limit int) ([]platform.Message, error) {
	if err := platform.CheckMessageFilter(f, after, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.AppKind, app) {
		return nil, notFound("application", app)
	}
	out := []platform.Message{}
	err := c.read(ctx, "ListMessages", func(tx Tx) error {
		if ok, err := c.appExists(ctx, tx, app, ""); err != nil || !ok {
			if err == nil {
				err = notFound("application", app)
			}
			return err
		}
		ids, err := c.messageIDs(ctx, tx, app, f, after, limit)
		if err != nil {
			return err
		}
		out, err = c.loadMessages(ctx, tx, app, ids)
		return err
	})
	return out, err
}

// messageIDs lists the IDs of up to limit messages of app that pass f,
// newest first, after after in that order.
func (c *Core) messageIDs(ctx context.Context, tx Tx, app string, f platform.MessageFilter, after string, limit int) ([]string, error) {
	q := `SELECT id FROM platform_messages WHERE app_id = $1`
	args := []any{app}
	add := func(cond string, v any) {
		args = append(args, v)
		q += fmt.Sprintf(" AND "+cond, len(args))
	}
	if after != "" {
		add("id < $%d", after)
	}
	if f.EventType != "" {
		add("event_type = $%d", f.EventType)
	}
	if f.EndpointID != "" {
		add("EXISTS (SELECT 1 FROM platform_fanout f WHERE f.message_id = platform_messages.id AND f.endpoint_id = $%d)", f.EndpointID)
	}
	if !f.CreatedBefore.IsZero() {
		add("created_at < $%d", beforeMicro(f.CreatedBefore))
	}
	if !f.CreatedAfter.IsZero() {
		add("created_at > $%d", f.CreatedAfter.Truncate(time.Microsecond).UnixMicro())
	}
	args = append(args, limit)
	return queryIDs(ctx, tx, q+fmt.Sprintf(" ORDER BY id DESC LIMIT $%d", len(args)), args...)
}

// queryIDs runs q, which selects one text column, and returns its values.
func queryIDs(ctx context.Context, tx Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// beforeMicro is the bound, in microseconds, of a CreatedAt (kept to the
// microsecond) before t: t itself, rounded up when t is finer.
func beforeMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if t.Truncate(time.Microsecond).Before(t) {
		us++
	}
	return us
}

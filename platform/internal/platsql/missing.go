package platsql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

func (c *Core) AddMissing(ctx context.Context, app, ep string, since time.Time, limit int) ([]platform.Message, error) {
	if err := platform.CheckMissing(since, limit); err != nil {
		return nil, err
	}
	if !platform.IsID(platform.EndpointKind, ep) || !platform.IsID(platform.AppKind, app) {
		return nil, notFound("endpoint", ep)
	}
	out := []platform.Message{}
	err := c.write(ctx, "AddMissing", func(tx Tx, _ int64) error {
		// The endpoint's row is held until commit: its filter cannot
		// change, nor the endpoint go, under the entries added for it.
		e, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointColumns+` FROM platform_endpoints WHERE id = $1 AND app_id = $2`+c.d.Update, ep, app))
		if c.d.NoRows(err) {
			return notFound("endpoint", ep)
		}
		if err != nil {
			return err
		}
		ids, err := c.missingIDs(ctx, tx, e, beforeMicro(since), limit)
		if err != nil {
			return err
		}
		for _, id := range ids {
			// A message fanned out to ep meanwhile (a publish that saw ep
			// enabled) keeps its entry: the insert then changes nothing.
			if _, err := tx.Exec(ctx, `INSERT INTO platform_fanout (message_id, endpoint_id, delivery_id, stream, state, detail)
				VALUES ($1, $2, $3, $4, $5, '') ON CONFLICT (message_id, endpoint_id) DO NOTHING`,
				id, ep, platform.DeliveryID(id, ep), platform.StreamOf(ep), int64(platform.Pending)); err != nil {
				return err
			}
		}
		out, err = c.loadMessages(ctx, tx, app, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// missingIDs lists the IDs of up to limit messages of e's application
// created at or after the microsecond since that e subscribes to and
// that have no entry for e, in ID order.
func (c *Core) missingIDs(ctx context.Context, tx Tx, e platform.Endpoint, since int64, limit int) ([]string, error) {
	args := []any{e.AppID, since, e.ID}
	q := `SELECT id FROM platform_messages m WHERE app_id = $1 AND created_at >= $2
		AND NOT EXISTS (SELECT 1 FROM platform_fanout f WHERE f.message_id = m.id AND f.endpoint_id = $3)`
	if len(e.EventTypes) > 0 {
		marks := make([]string, len(e.EventTypes))
		for i, t := range e.EventTypes {
			args = append(args, t)
			marks[i] = fmt.Sprintf("$%d", len(args))
		}
		q += ` AND event_type IN (` + strings.Join(marks, ", ") + `)`
	}
	args = append(args, limit)
	return queryIDs(ctx, tx, q+fmt.Sprintf(` ORDER BY id LIMIT $%d`, len(args)), args...)
}

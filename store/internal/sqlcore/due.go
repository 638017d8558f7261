package sqlcore

import (
	"context"
	"time"

	"github.com/courierlab/courier/store"
)

// Each stream's due instant (store.Store.ClaimDue) is kept in its row,
// by the call that changes it and in that call's transaction (schema 3):
// due is NULL when the stream has no waiting record, and never below
// release_until, the instant its last release named.

// refreshDue recomputes stream's due instant from its waiting records:
// release_until if one is parked, else the earliest NextAt of its
// pending and retry records, raised to release_until. Each subquery
// reads one index (deliveries_parked, deliveries_waiting) for one stream.
func refreshDue(ctx context.Context, tx Tx, stream string) error {
	return refreshDueOf(ctx, tx, []string{stream})
}

// enqueuedDue lowers a stream's due instant for records enqueued at now
// ($1), without reading its records: a new record is pending and due at
// now, or at release_until if that is later.
const enqueuedDue = `due = CASE
	WHEN due IS NOT NULL AND due <= (CASE WHEN release_until > $1 THEN release_until ELSE $1 END) THEN due
	WHEN release_until > $1 THEN release_until ELSE $1 END`

// release gives l up and holds its stream until until (at least now).
func (c *Core) release(ctx context.Context, op string, l store.Lease, until int64) error {
	if err := store.CheckLease(op, l); err != nil {
		return err
	}
	return c.write(ctx, op, func(tx Tx, now int64) error {
		if _, err := c.held(ctx, tx, op, l, now); err != nil {
			return err
		}
		if err := tx.Exec(ctx, `UPDATE streams SET lease_released = TRUE, release_until = $2 WHERE name = $1`,
			l.Stream, max(now, until)); err != nil {
			return err
		}
		return refreshDue(ctx, tx, l.Stream)
	})
}

// Release implements store.Store.
func (c *Core) Release(ctx context.Context, l store.Lease) error {
	return c.release(ctx, "release", l, 0)
}

// ReleaseUntil implements store.Store.
func (c *Core) ReleaseUntil(ctx context.Context, l store.Lease, until time.Time) error {
	return c.release(ctx, "release until", l, micros(until))
}

package sqlcore

import (
	"context"

	"github.com/courierlab/courier/store"
)

// Stats implements store.StatsReader. The states counted (pending, retry,
// parked) are those of the deliveries_due partial index, so the count
// reads the backlog's rows only, not the settled history.
func (c *Core) Stats(ctx context.Context) (store.Stats, error) {
	var s store.Stats
	err := c.read(ctx, "stats", func(tx Tx, now int64) error {
		var n, oldest int64
		err := tx.QueryRow(ctx, `SELECT count(*), COALESCE(min(budget_from), 0) FROM deliveries WHERE state IN (1, 2, 3)`).Scan(&n, &oldest)
		if err != nil {
			return err
		}
		s = store.Stats{At: instant(now), Backlog: int(n), Oldest: instant(oldest)}
		return nil
	})
	return s, err
}

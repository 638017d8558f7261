package memstore

import (
	"context"

	"github.com/courierlab/courier/store"
)

// Stats implements store.StatsReader. It walks every stream's records
// under the lock: memstore keeps few enough for that.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := ctx.Err(); err != nil {
		return store.Stats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := store.Stats{At: s.clock()}
	for _, st := range s.byName {
		for _, r := range st.recs {
			if r.State.Terminal() {
				continue
			}
			out.Backlog++
			if from := r.BudgetFrom(); out.Oldest.IsZero() || from.Before(out.Oldest) {
				out.Oldest = from
			}
		}
	}
	return out, nil
}

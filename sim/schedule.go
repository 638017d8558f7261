package sim

import (
	"context"
	"time"

	"github.com/courierlab/courier/store"
)

// ReleaseUntil meets the store faults a Release meets (issue 26): it may
// be refused, or its reply lost with the release made or not.
func (ns *nodeStore) ReleaseUntil(ctx context.Context, l store.Lease, until time.Time) error {
	s := ns.s
	f := s.drawCall(true)
	if f.undone() {
		return s.callErr(ns.n, f, "ReleaseUntil")
	}
	if err := ns.Store.ReleaseUntil(ctx, l, until); err != nil || f == callOK {
		return err
	}
	return s.callErr(ns.n, f, "ReleaseUntil")
}

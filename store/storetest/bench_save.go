package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
)

// SaveBatchStreams are the batch sizes BenchSaveBatch runs with: how
// many streams' saves are ready together.
var SaveBatchStreams = []int{1, 8, 64}

// BenchSaveBatch measures what a store.BatchSaver buys: each iteration
// saves one delivery (its next attempt) on each of N streams, through
// N leases, either with one Save each (one-each) or with one SaveBatch
// of N saves (batch; skipped on a store that has none). It reports
// saves/s and µs per save.
func BenchSaveBatch(b *testing.B, newStore BenchFactory) {
	for _, n := range SaveBatchStreams {
		for _, way := range []string{"one-each", "batch"} {
			b.Run(fmt.Sprintf("streams=%d/%s", n, way), func(b *testing.B) {
				ctx := context.Background()
				s := newStore(b)
				bs, ok := s.(store.BatchSaver)
				if way == "batch" && !ok {
					b.Skip("the store is not a store.BatchSaver")
				}
				saves := readySaves(b, ctx, s, n)
				b.ResetTimer()
				for range b.N {
					for i := range saves {
						saves[i].Updates[0].Attempts++
					}
					if way == "batch" {
						errs, err := bs.SaveBatch(ctx, saves)
						if err == nil {
							err = firstErr(errs)
						}
						if err != nil {
							b.Fatal(err)
						}
						continue
					}
					for _, sv := range saves {
						if err := s.Save(ctx, sv.Lease, sv.Updates); err != nil {
							b.Fatal(err)
						}
					}
				}
				saved := float64(b.N * n)
				b.ReportMetric(saved/b.Elapsed().Seconds(), "saves/s")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/saved, "µs/save")
			})
		}
	}
}

// readySaves enqueues one event on each of n streams, leases them for
// an hour and returns a save of each event as it is.
func readySaves(b *testing.B, ctx context.Context, s store.Store, n int) []store.LeaseSave {
	fill(b, ctx, s, n)
	saves := make([]store.LeaseSave, n)
	for i := range saves {
		l, err := s.Acquire(ctx, fmt.Sprintf("s%05d", i), "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		recs, err := s.Pending(ctx, l, 0, 1)
		if err != nil || len(recs) != 1 {
			b.Fatalf("Pending of %s: %d records, %v; want 1", l.Stream, len(recs), err)
		}
		saves[i] = store.LeaseSave{Lease: l, Updates: []store.Update{store.UpdateOf(recs[0])}}
	}
	return saves
}

// firstErr is the first error of errs, or nil.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

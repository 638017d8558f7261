package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// BenchFactory returns a new, empty store for one benchmark round, judged
// by the backend's own clock.
type BenchFactory func(b *testing.B) store.Store

// BenchStreams are the stream counts every store benchmark runs with.
var BenchStreams = []int{1, 4, 16}

// Bench runs the store benchmarks against stores built by newStore:
//
//   - enqueue/streams=S: S producers, one per stream, enqueue b.N events
//     in all; reports events/s;
//   - cycle/streams=S: S workers, each owning one stream (one claim, as
//     the runtime keeps its streams), take b.N events in all through a
//     full delivery cycle: Enqueue, Pending (the owner adopts it), Save
//     of the attempt, Save of it delivered with its outcome; reports
//     cycles/s.
func Bench(b *testing.B, newStore BenchFactory) {
	for _, streams := range BenchStreams {
		b.Run(fmt.Sprintf("enqueue/streams=%d", streams), func(b *testing.B) {
			s := newStore(b)
			b.ResetTimer()
			parallel(b, streams, func(ctx context.Context, stream string, n int) error {
				for j := range n {
					if _, _, err := s.Enqueue(ctx, stream, fmt.Sprintf("%s-e%d", stream, j), benchPayload); err != nil {
						return err
					}
				}
				return nil
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("cycle/streams=%d", streams), func(b *testing.B) {
			s := newStore(b)
			b.ResetTimer()
			parallel(b, streams, func(ctx context.Context, stream string, n int) error {
				return Cycles(ctx, s, stream, n)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
		})
	}
}

var benchPayload = []byte(`{"order":42,"event":"paid","amount":"19.99"}`)

// Cycles takes n events of stream through a full delivery cycle, as its
// owner: acquire the stream once, then per event Enqueue, Pending, Save
// the attempt, Save it delivered.
func Cycles(ctx context.Context, s store.Store, stream string, n int) error {
	l, err := s.Acquire(ctx, stream, "bench-"+stream, time.Hour)
	if err != nil {
		return err
	}
	var after uint64
	for j := range n {
		if _, _, err := s.Enqueue(ctx, stream, fmt.Sprintf("%s-c%d", stream, j), benchPayload); err != nil {
			return err
		}
		recs, err := s.Pending(ctx, l, after, 1)
		if err != nil {
			return err
		}
		if len(recs) != 1 {
			return fmt.Errorf("cycle %d of %s: Pending returned %d records, want 1", j, stream, len(recs))
		}
		r := recs[0]
		after = r.Seq
		r.Attempts++
		u := store.UpdateOf(r)
		if err := s.Save(ctx, l, []store.Update{u}); err != nil {
			return err
		}
		u.State, u.Outcome = machine.Delivered, &store.Outcome{Attempt: r.Attempts, Status: 204}
		if err := s.Save(ctx, l, []store.Update{u}); err != nil {
			return err
		}
	}
	return s.Release(ctx, l)
}

// parallel splits b.N over streams goroutines, one per stream, and fails
// b on the first error.
func parallel(b *testing.B, streams int, work func(ctx context.Context, stream string, n int) error) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, streams)
	for i := range streams {
		n := b.N / streams
		if i < b.N%streams {
			n++
		}
		wg.Go(func() { errs[i] = work(ctx, fmt.Sprintf("s%02d", i), n) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

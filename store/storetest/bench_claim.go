package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
)

// ClaimStreams are the stream counts BenchClaim runs with.
var ClaimStreams = []int{1_000, 10_000}

// claimBatch is how many streams each measured ClaimDue asks for.
const claimBatch = 64

// BenchClaim measures ClaimDue (issue 26) in a store holding S streams
// with due work: each iteration claims claimBatch streams, earliest due
// first, and (off the clock) releases them, so that they are due again
// and the store's size stays S. It reports µs per ClaimDue, which must
// not grow with S as a scan of every stream would.
func BenchClaim(b *testing.B, newStore BenchFactory) {
	for _, streams := range ClaimStreams {
		b.Run(fmt.Sprintf("claim/streams=%d", streams), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b)
			fill(b, ctx, s, streams)
			b.ResetTimer()
			for range b.N {
				ls, err := s.ClaimDue(ctx, "bench", time.Minute, claimBatch)
				if err != nil || len(ls) != claimBatch {
					b.Fatalf("ClaimDue: %d leases, %v; want %d", len(ls), err, claimBatch)
				}
				b.StopTimer()
				for _, l := range ls {
					if err := s.Release(ctx, l); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/claim")
		})
	}
}

// fill enqueues one event on each of streams streams, in batches.
func fill(b *testing.B, ctx context.Context, s store.Store, streams int) {
	const batch = 500
	for from := 0; from < streams; from += batch {
		var evs []store.NewEvent
		for i := from; i < min(from+batch, streams); i++ {
			evs = append(evs, store.NewEvent{Stream: fmt.Sprintf("s%05d", i), ID: fmt.Sprintf("e%05d", i), Payload: benchPayload})
		}
		for _, r := range store.EnqueueEach(ctx, s, evs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}

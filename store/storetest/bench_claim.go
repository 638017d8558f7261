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
// not grow with S as a scan of every stream would. The parked=P runs
// hold P of the S streams, spread evenly, released until an hour later
// (ReleaseUntil, as an owner releases a parked stream until its probe):
// issue 26's 10,000 streams with 1,000 behind dead endpoints, as the
// store sees them. None of those may be granted, and they must not slow
// the claim.
func BenchClaim(b *testing.B, newStore BenchFactory) {
	for _, streams := range ClaimStreams {
		for _, parked := range []int{0, streams / 10} {
			name := fmt.Sprintf("claim/streams=%d", streams)
			if parked > 0 {
				name += fmt.Sprintf("/parked=%d", parked)
			}
			b.Run(name, func(b *testing.B) { benchClaim(b, newStore(b), streams, parked) })
		}
	}
}

func benchClaim(b *testing.B, s store.Store, streams, parked int) {
	ctx := context.Background()
	fill(b, ctx, s, streams)
	held := park(b, ctx, s, streams, parked)
	b.ResetTimer()
	for range b.N {
		ls, err := s.ClaimDue(ctx, "bench", time.Minute, claimBatch)
		if err != nil || len(ls) != claimBatch {
			b.Fatalf("ClaimDue: %d leases, %v; want %d", len(ls), err, claimBatch)
		}
		b.StopTimer()
		for _, l := range ls {
			if held[l.Stream] {
				b.Fatalf("ClaimDue granted %s, released until an hour later", l.Stream)
			}
			if err := s.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/claim")
}

// park releases parked of the streams fill made, spread evenly, until an
// hour from now, and returns their names.
func park(b *testing.B, ctx context.Context, s store.Store, streams, parked int) map[string]bool {
	held := map[string]bool{}
	if parked == 0 {
		return held
	}
	for i := 0; i < streams; i += streams / parked {
		name := fmt.Sprintf("s%05d", i)
		l, err := s.Acquire(ctx, name, "bench", time.Minute)
		if err == nil {
			err = s.ReleaseUntil(ctx, l, time.Now().Add(time.Hour))
		}
		if err != nil {
			b.Fatalf("parking %s: %v", name, err)
		}
		held[name] = true
	}
	return held
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

// Benchmarks how the worker's per-wake-up cost grows with the streams it
// owns, for 1, 1k and 10k streams: Next (computed after every input) and
// an Advance with nothing due both scan every owned stream, so both are
// linear in MaxStreams (a heap of due times would make Next logarithmic).
package worker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/worker"
)

func BenchmarkOwnedStreams(b *testing.B) {
	for _, n := range []int{1, 1_000, 10_000} {
		e := newEnv(b, func(c *worker.Config) { c.MaxStreams = n; c.Poll = time.Hour; c.Observer = nil })
		for i := range n {
			if _, _, err := e.mem.Enqueue(b.Context(), fmt.Sprintf("s%06d", i), fmt.Sprintf("e%d", i), nil); err != nil {
				b.Fatal(err)
			}
		}
		fx := e.advance()
		for _, x := range fx.Sends {
			e.deliver(x.Reply(delivered()))
		}
		if len(e.w.Streams()) != n {
			b.Fatalf("owns %d streams, want %d", len(e.w.Streams()), n)
		}
		b.Run(fmt.Sprintf("Next/streams=%d", n), func(b *testing.B) {
			for b.Loop() {
				_ = e.w.Next()
			}
		})
		b.Run(fmt.Sprintf("AdvanceIdle/streams=%d", n), func(b *testing.B) {
			now := e.now()
			for b.Loop() {
				e.w.Advance(b.Context(), now)
			}
		})
	}
}

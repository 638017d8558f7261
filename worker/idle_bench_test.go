package worker_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

// BenchmarkIdleStreams reports the memory a worker keeps after 10,000
// streams it owned went idle and were given back (issue 26: at most
// 50 MB): the heap with the worker minus the heap once it is dropped, the
// store kept in both. The worker keeps nothing per released stream.
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 10_000
	for range b.N {
		e := newEnv(b, func(c *worker.Config) { c.MaxStreams, c.Observer = streams, nil })
		for i := range streams {
			e.enqueue(fmt.Sprintf("s%05d", i), fmt.Sprintf("e%05d", i))
		}
		fx := e.advance()
		if e.w.Owned() != streams || len(fx.Sends) != streams {
			b.Fatalf("owns %d streams with %d sends, want %d of each", e.w.Owned(), len(fx.Sends), streams)
		}
		for _, s := range fx.Sends {
			e.deliver(s.Reply(channel.Outcome{Result: machine.OutcomeDelivered, Status: 204}))
		}
		for e.w.Owned() > 0 && e.now().Before(epoch.Add(time.Minute)) {
			e.clock.Advance(time.Second)
			e.advance()
		}
		if e.w.Owned() != 0 {
			b.Fatalf("still owns %d streams a minute later", e.w.Owned())
		}
		with := heap()
		e.w = nil
		without := heap()
		runtime.KeepAlive(e) // the store stays in both readings
		b.ReportMetric(float64(with-without)/1e6, "MB-kept")
	}
}

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

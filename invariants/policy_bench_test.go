// The checker's cost grows linearly with the log, policy rules included:
// a run of n events that each fail once and are delivered on the retry,
// with a breaker trip, an opening and a parked backlog drained, for n of
// 0, 1,000 and 100,000 (compare ns/op over n).
package invariants_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// benchLog builds the log of n independent events: each is accepted,
// fails its first attempt, and is delivered at its retry.
func benchLog(n int) invariants.Run {
	p := timedPolicy()
	p.Window, p.BreakerThreshold = 8, 1<<20
	b := newTimed(p)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%06d", i)
		b.at(time.Duration(i) * time.Millisecond).accept(ids[i])
	}
	for i, id := range ids {
		t := time.Duration(n+i) * 10 * time.Millisecond
		b.at(t).start(id)
		b.at(t+time.Millisecond).fail(id, machine.Retry, 900*time.Millisecond, 0)
		b.at(t + 901*time.Millisecond).start(id)
		b.at(t + 902*time.Millisecond).deliver(id)
	}
	return b.run
}

func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{0, 1000, 100_000} {
		run := benchLog(n)
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				invariants.Check(run)
			}
			b.ReportMetric(float64(len(run.Entries)), "entries")
		})
	}
}

package scenarios

import (
	"slices"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

// rateLimited is the rate limit's scenario (issue 27): a burst against a
// stream limited to five starts a second, through a flaky spell that
// trips the breaker, so that probes come and go while the limit binds.
func rateLimited() Scenario {
	const (
		limit = 5
		per   = time.Second
	)
	return Scenario{
		Name:   "rate-limited",
		Why:    "A receiver that takes at most five requests a second must get no more, from a burst and through a flaky spell that trips the breaker: the limit delays events, never loses them.",
		Faults: "40 events arrive in about 0.4s on a stream limited to 5 attempt starts per second (independent order, window 8); until 10s, 30% of sends and probes fail",
		Expect: "the limit binds: some second holds exactly 5 starts, none holds more (the rate-limit invariant); every event is applied once, or dead as exhausted after exactly MaxAttempts sends",
		World: func(seed uint64) sim.World {
			w := Base(seed)
			w.Policy.Ordering, w.Policy.Window = machine.Independent, 8
			w.Policy.RateLimit, w.Policy.RatePer = limit, per
			w.Interarrival = 10 * time.Millisecond
			w.Receiver.Fence = false // meaningful only in strict order
			w.Channel.Flapping = []sim.Window{{From: 0, To: 10 * time.Second}}
			w.Channel.FlapFailRate = 0.3
			w.FaultsEnd = 10 * time.Second
			return w
		},
		ReadsLogs: true,
		Check: func(r sim.Result) []string {
			s := r.Stats
			var c checklist
			most := mostStartsPer(r.Run, per)
			c.expect(most == limit, "the most attempt starts in one %v is %d; want exactly the limit, %d", per, most, limit)
			c.expect(s.Applied+s.Dead == s.Accepted && s.AppliedTwice == 0, "applied %d + dead %d of %d accepted, applied twice %d", s.Applied, s.Dead, s.Accepted, s.AppliedTwice)
			c.deadOnlyExhausted(r)
			return c
		},
	}
}

// mostStartsPer is the most Sent entries of run within any interval of
// length per (half-open: a start exactly per after another is outside).
func mostStartsPer(run invariants.Run, per time.Duration) int {
	var at []time.Time
	for _, e := range entries(run) {
		if e.Kind == invariants.Sent {
			at = append(at, e.At)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most, lo := 0, 0
	for hi := range at {
		for !at[hi].Before(at[lo].Add(per)) {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

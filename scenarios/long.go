package scenarios

import (
	"time"

	"github.com/courierlab/courier/sim"
)

// LongOutageSeeds is how many seeds of long-outage `go test` runs and
// RESULTS.md reports: each run simulates 100,000 events over some three
// virtual hours, so it gets fewer seeds than the small scenarios (the
// longer sweep is `simrun bench` and the command in the scenario's doc).
const LongOutageSeeds = 3

// longOutage is the normal webhook failure at production scale.
func longOutage() Scenario {
	const (
		events   = 100_000
		from     = 5 * time.Second
		outage   = time.Hour
		arrivals = time.Hour / events // mean gap: the events arrive over the hour
	)
	return Scenario{
		Name:   "long-outage",
		Why:    "The normal webhook failure at production scale: an endpoint down for an hour while 100,000 events arrive must cost time, not events: the backlog is parked durably and drains in order when it returns.",
		Faults: "every send and probe is refused for one hour, from 5s to 1h0m5s, while 100,000 events arrive (one every 36ms on average); MaxAge is 4h and MaxQueued 100,000, so that the backlog neither expires nor is refused",
		Expect: "the circuit opens; the backlog is persisted as parked; after the outage every event is delivered exactly once, in acceptance order (the order invariant); nothing dies, nothing is lost or applied twice",
		Seeds:  LongOutageSeeds,
		World: func(seed uint64) sim.World {
			w := Base(seed)
			w.Events = events
			w.Interarrival = arrivals
			w.Policy.MaxAge = 4 * time.Hour
			w.Policy.MaxQueued = events
			w.Channel.Outages = []sim.Window{{From: from, To: from + outage}}
			w.FaultsEnd = from + outage
			return w
		},
		Check: func(r sim.Result) []string {
			s := r.Stats
			var c checklist
			c.expect(s.CircuitOpenings >= 1, "the circuit never opened")
			c.expect(s.ParkedWrites > 0, "no event was persisted as parked")
			c.expect(s.Accepted == events, "accepted %d of %d events", s.Accepted, events)
			c.expect(s.Applied == s.Accepted && s.Dead == 0 && s.Lost == 0 && s.AppliedTwice == 0,
				"applied %d of %d accepted; dead %d, lost %d, applied twice %d; want all applied once", s.Applied, s.Accepted, s.Dead, s.Lost, s.AppliedTwice)
			return c
		},
	}
}

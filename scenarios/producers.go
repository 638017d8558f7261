package scenarios

import (
	"time"

	"github.com/courierlab/courier/sim"
)

// producers64 is issue 26's rotation under load: more busy streams than
// the workers can hold at once.
func producers64() Scenario {
	const (
		streams = 64
		events  = streams * 30
	)
	return Scenario{
		Name:   "producers-64",
		Why:    "Producers that never stop, on more streams than the workers can hold: a worker keeps a busy stream for ever unless it yields, so every stream must get its turn for an owner, within the stated bound, however many streams there are.",
		Faults: "none; 64 streams, each with an event about every 1.3s (one every 20ms in all, 1,920 events), shared by 2 workers with MaxStreams 8 (room for 16)",
		Expect: "every stream is granted (the workers yield streams owned for YieldAfter to waiting ones); no stream with due work waits for an owner past the bound (owner-wait); every event is applied once, in order; nothing dies",
		World: func(seed uint64) sim.World {
			w := ClusterBase(seed)
			w.Cluster.Workers, w.Cluster.MaxStreams = 2, 8
			w.Streams = streams
			w.Events = events
			w.Interarrival = 20 * time.Millisecond
			return w
		},
		Check: func(r sim.Result) []string {
			var c checklist
			s := r.Stats
			c.expect(s.LeaseGrants > streams, "only %d leases granted for %d streams: the streams did not rotate", s.LeaseGrants, streams)
			c.expect(s.Applied == s.Accepted && s.Dead == 0 && s.Lost == 0 && s.AppliedTwice == 0,
				"applied %d of %d accepted; dead %d, lost %d, applied twice %d; want all applied once", s.Applied, s.Accepted, s.Dead, s.Lost, s.AppliedTwice)
			return c
		},
	}
}

package scenarios

import (
	"time"

	"github.com/courierlab/courier/sim"
)

// ScaleSeeds is how many seeds of each scale scenario (many-streams,
// mass-recovery) `go test` and RESULTS.md run: a run of either
// simulates 10,000 or 20,000 events over thousands of streams.
const ScaleSeeds = 2

// manyStreams is issue 26's first scale: 10,000 streams, a tenth of them
// behind endpoints that are down, on four workers with room for 256.
func manyStreams() Scenario {
	const (
		streams = 10_000
		down    = 1_000
		events  = 2 * streams
		outage  = 2 * time.Minute
	)
	return Scenario{
		Name:   "many-streams",
		Why:    "Thousands of endpoints on a few workers, some of them down for minutes: the parked ones must not hold the workers' slots, and every stream with due work must get an owner within the stated bound, however many streams there are.",
		Faults: "10,000 streams (20,000 events over a minute) shared by 4 workers with MaxStreams 64 (room for 256); the endpoints of 1,000 of them, spread evenly, refuse every send and probe for the first two minutes",
		Expect: "the down streams' circuits open and their events are parked, then delivered when they come back; no stream with due work waits for an owner past the bound (owner-wait, judged); every event is applied once, in order; nothing dies",
		Seeds:  ScaleSeeds,
		World: func(seed uint64) sim.World {
			w := scaleWorld(seed, streams, events, time.Minute)
			w.Channel.Down = sim.StreamsDown{Streams: down, Window: sim.Window{To: outage}}
			w.FaultsEnd = outage
			return w
		},
		Check: checkScale(streams),
	}
}

// massRecovery is issue 26's second scale: 5,000 endpoints, all down for
// a minute, that come back at the same instant.
func massRecovery() Scenario {
	const (
		streams = 5_000
		events  = 2 * streams
		outage  = time.Minute
	)
	return Scenario{
		Name:   "mass-recovery",
		Why:    "Every endpoint comes back at once after an outage (a shared gateway, a DNS fix): thousands of parked streams fall due together on a few workers, and each must get its turn for an owner within the stated bound and drain in order.",
		Faults: "5,000 streams (10,000 events over 30s) shared by 4 workers with MaxStreams 64 (room for 256); every endpoint refuses every send and probe for the first minute, then all come back together",
		Expect: "the circuits open and the events are parked; after the outage every stream drains, no stream with due work waiting for an owner past the bound (owner-wait, judged); every event is applied once, in order; nothing dies",
		Seeds:  ScaleSeeds,
		World: func(seed uint64) sim.World {
			w := scaleWorld(seed, streams, events, 30*time.Second)
			w.Channel.Down = sim.StreamsDown{Streams: streams, Window: sim.Window{To: outage}}
			w.FaultsEnd = outage
			return w
		},
		Check: checkScale(streams),
	}
}

// scaleWorld is the cluster world of the scale scenarios: streams
// streams, events events arriving over span, 4 workers with MaxStreams
// 64.
func scaleWorld(seed uint64, streams, events int, span time.Duration) sim.World {
	w := ClusterBase(seed)
	w.Cluster.Workers, w.Cluster.MaxStreams = 4, 64
	w.Streams, w.Events = streams, events
	w.Interarrival = span / time.Duration(events)
	return w
}

// checkScale holds a scale scenario to what it exists to show.
func checkScale(streams int) func(sim.Result) []string {
	return func(r sim.Result) []string {
		var c checklist
		s := r.Stats
		c.expect(s.CircuitOpenings >= 1, "no circuit opened")
		c.expect(s.ParkedWrites > 0, "no event was persisted as parked")
		c.expect(s.LeaseGrants > streams, "only %d leases granted for %d streams", s.LeaseGrants, streams)
		c.expect(r.Run.OwnerWait > 0 && len(r.OwnerWaits) >= streams/2,
			"owner-wait judged %d waits for %d streams; want a grant after a wait for at least half of them", len(r.OwnerWaits), streams)
		c.expect(s.Applied == s.Accepted && s.Dead == 0 && s.Lost == 0 && s.AppliedTwice == 0,
			"applied %d of %d accepted; dead %d, lost %d, applied twice %d; want all applied once", s.Applied, s.Accepted, s.Dead, s.Lost, s.AppliedTwice)
		return c
	}
}

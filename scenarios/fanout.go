package scenarios

import (
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/sim"
)

// fanout is the platform's scenario (issue 27): messages published
// through the production fan-out to three endpoints, each with its own
// faults, a disable and two bulk replays.
func fanout() Scenario {
	return Scenario{
		Name:      "fanout",
		Why:       "A message published once must reach every endpoint that wants it, once in effect, whatever the other endpoints suffer; a disabled endpoint gets nothing, and a bulk replay replays exactly the dead letters it chose.",
		Faults:    "24 messages of two types to three endpoints: ep0 down until 20s, ep1 filtered on one type, limited to 2 attempts a second and flapping until 20s (disabled from 8s to 14s), ep2 healthy; publishes crash mid fan-out (at most 3, re-driven after 2s); at 20s ep0's dead letters are replayed since 10s, then all of them",
		Expect:    "every delivery an endpoint wanted is applied once or dead, none it did not want is sent; ep1 sends nothing while disabled beyond a renewal; the replays replay their chosen dead letters once; ep0's deliveries die in its outage and the replay since 10s leaves the older ones to the one of all",
		World:     fanoutWorld,
		ReadsLogs: true,
		Check: func(r sim.Result) []string {
			var c checklist
			wanted := 0
			for _, run := range r.Runs {
				for _, e := range entries(run) {
					if e.Kind == invariants.Fanned && e.Detail == invariants.FanSubscribed {
						wanted++
					}
				}
			}
			c.expect(r.Stats.Accepted == wanted && wanted >= 48 && wanted <= 60, "accepted %d deliveries, wanted %d; want every wanted one, 48 to 60 (24 + 24 + ep1's of one type while enabled)", r.Stats.Accepted, wanted)
			c.expect(r.Stats.AppliedTwice == 0, "applied twice: %d", r.Stats.AppliedTwice)
			replays := map[string]int{}
			for _, e := range entries(r.Runs[0]) {
				if e.Kind == invariants.Replayed {
					replays[e.Worker]++
				}
			}
			c.expect(replays["bulk-replay-2"] > 0, "the replay of every dead letter of ep0 replayed none (%v)", replays)
			return c
		},
	}
}

// fanoutWorld is the fanout scenario's world.
func fanoutWorld(seed uint64) sim.World {
	w := Base(seed)
	w.Events, w.Streams = 24*3, 3
	w.Policy.MaxAge = 6 * time.Second
	w.Interarrival = 500 * time.Millisecond
	w.Receiver = sim.Receiver{}
	w.FaultsEnd = 20 * time.Second
	w.Channel.FlapFailRate = 0.3
	w.Platform = sim.Platform{
		EventTypes: []string{"order.paid", "order.shipped"},
		Endpoints: []sim.PlatformEndpoint{
			{Outages: []sim.Window{{From: 0, To: 20 * time.Second}}},
			{EventTypes: []string{"order.paid"}, RateLimit: 2, Flapping: []sim.Window{{From: 0, To: 20 * time.Second}},
				Disables: []sim.Window{{From: 8 * time.Second, To: 14 * time.Second}}},
			{},
		},
		CrashRate: 0.2, MaxCrashes: 3, Redrive: 2 * time.Second,
		Replays: []sim.BulkReplay{{Endpoint: 0, At: 20 * time.Second, Since: 10 * time.Second}, {Endpoint: 0, At: 20 * time.Second, All: true}},
	}
	return w
}

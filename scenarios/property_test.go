// Any world rapid can build, not only the swarm's, holds every invariant:
// rapid generates the workload, the policy and an explicit fault schedule,
// the simulator runs it and the checker judges it. On a failure rapid
// shrinks the schedule (fewer events, fewer and shorter faults, smaller
// numbers) and saves a fail file that replays it:
//
//	go test ./scenarios -run TestPropertyAnyWorld -rapid.checks=2000      # hunt longer
//	go test ./scenarios -run TestPropertyAnyWorld -rapid.failfile=PATH    # replay a saved failure
//
// To watch it shrink, run it in a deliberately broken build:
//
//	go test -tags plant ./scenarios -run TestPropertyAnyWorld -ldflags=-X=github.com/courierlab/courier/internal/plant.build=drain-out-of-order
package scenarios

import (
	"time"

	"testing"

	"pgregory.net/rapid"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

func ms(t *rapid.T, lo, hi int64, label string) time.Duration {
	return time.Duration(rapid.Int64Range(lo, hi).Draw(t, label)) * time.Millisecond
}

// genWorld builds a world whose every fault is an explicit list item, so
// that shrinking can remove faults one at a time.
func genWorld(t *rapid.T) sim.World {
	seed := rapid.Uint64().Draw(t, "policy-seed")
	w := Base(seed)
	p := &w.Policy
	if rapid.Bool().Draw(t, "independent") {
		p.Ordering = machine.Independent
		p.Window = rapid.IntRange(1, 6).Draw(t, "window")
	}
	p.MaxAttempts = rapid.IntRange(1, 10).Draw(t, "max-attempts")
	p.BaseBackoff = ms(t, 10, 500, "base-backoff-ms")
	p.MaxBackoff = p.BaseBackoff + ms(t, 0, 5000, "extra-backoff-ms")
	p.JitterPercent = rapid.IntRange(0, 100).Draw(t, "jitter")
	c := &w.Channel
	c.LatencyMin = ms(t, 0, 50, "latency-min-ms")
	c.LatencyMax = c.LatencyMin + ms(t, 0, 300, "latency-extra-ms")
	// A healthy round trip beats every timeout (World.Validate).
	rtt := 2 * c.LatencyMax
	p.AttemptTimeout = rtt + ms(t, 1, 5000, "attempt-timeout-ms")
	p.BreakerThreshold = rapid.IntRange(1, 6).Draw(t, "breaker")
	p.ProbeTimeout = rtt + ms(t, 1, 3000, "probe-timeout-ms")
	p.ProbeBaseInterval = ms(t, 50, 1000, "probe-base-ms")
	p.ProbeMaxInterval = p.ProbeBaseInterval + ms(t, 0, 5000, "probe-extra-ms")
	p.MaxAge = ms(t, 1000, 300_000, "max-age-ms")
	p.MaxQueued = rapid.IntRange(1, 100).Draw(t, "max-queued")

	w.Events = rapid.IntRange(1, 60).Draw(t, "events")
	w.Interarrival = ms(t, 0, 1000, "interarrival-ms")
	w.FaultsEnd = ms(t, 0, 40_000, "faults-end-ms")
	w.Producer.AckTimeout = ms(t, 100, 5000, "ack-timeout-ms")
	w.Producer.SendTwice = rapid.Bool().Draw(t, "send-twice")
	w.Producer.TwiceDelay = ms(t, 0, 1000, "twice-delay-ms")
	c.ClientTimeout = rtt + ms(t, 1, 5000, "client-timeout-ms")
	window := func(label string) sim.Window {
		from := ms(t, 0, int64(w.FaultsEnd/time.Millisecond), label+"-from-ms")
		to := from + ms(t, 0, int64((w.FaultsEnd-from)/time.Millisecond), label+"-len-ms")
		return sim.Window{From: from, To: to}
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "outages") {
		c.Outages = append(c.Outages, window("outage"+string(rune('0'+i))))
	}
	for i := range rapid.IntRange(0, 2).Draw(t, "flaps") {
		c.Flapping = append(c.Flapping, window("flap"+string(rune('0'+i))))
	}
	c.FlapFailRate = rapid.Float64Range(0, 1).Draw(t, "flap-rate")
	c.LostAckRate = rapid.Float64Range(0, 0.5).Draw(t, "lost-ack-rate")
	c.LateRate = rapid.Float64Range(0, 0.2).Draw(t, "late-rate")
	c.LateDelay = ms(t, 0, 10_000, "late-delay-ms")
	w.Receiver.Fence = p.Ordering == machine.Strict
	for range rapid.IntRange(0, 2).Draw(t, "poison") {
		w.Receiver.Poison = append(w.Receiver.Poison, sim.EventID(rapid.IntRange(0, w.Events-1).Draw(t, "poison-event")))
	}
	for range rapid.IntRange(0, 2).Draw(t, "stubborn") {
		w.Receiver.Stubborn = append(w.Receiver.Stubborn, sim.Stubborn{
			ID:       sim.EventID(rapid.IntRange(0, w.Events-1).Draw(t, "stubborn-event")),
			Failures: rapid.IntRange(1, 8).Draw(t, "stubborn-failures"),
		})
	}
	w.Receiver.RetryAfter = ms(t, 0, 5000, "retry-after-ms")
	if rapid.Bool().Draw(t, "cluster") {
		genCluster(t, &w)
		return w
	}
	for range rapid.IntRange(0, 4).Draw(t, "restarts") {
		w.Restarts.At = append(w.Restarts.At, ms(t, 0, int64(w.FaultsEnd/time.Millisecond), "restart-at-ms"))
	}
	w.Restarts.CrashAfterPersistRate = rapid.Float64Range(0, 0.2).Draw(t, "crash-rate")
	w.Restarts.MaxCrashes = rapid.IntRange(0, 3).Draw(t, "max-crashes")
	return w
}

// genCluster makes the sender several workers sharing one store, with
// explicit lists of crashes, pauses and store refusals to shrink.
func genCluster(t *rapid.T, w *sim.World) {
	c := &w.Cluster
	c.Workers = rapid.IntRange(1, 3).Draw(t, "workers")
	c.LeaseTTL = ms(t, 200, 4000, "lease-ttl-ms")
	c.Poll = ms(t, 10, int64(c.LeaseTTL/time.Millisecond)/2-1, "poll-ms")
	for i := range c.Workers {
		c.Skews = append(c.Skews, ms(t, -500, 500, "skew-ms-"+string(rune('0'+i))))
	}
	end := int64(w.FaultsEnd / time.Millisecond)
	fault := func(label string) sim.WorkerFault {
		worker := rapid.IntRange(sim.Owner, c.Workers-1).Draw(t, label+"-worker")
		at := ms(t, 0, end-1, label+"-at-ms")
		return sim.WorkerFault{Worker: worker, At: at, For: ms(t, 1, end-int64(at/time.Millisecond), label+"-for-ms")}
	}
	for range rapid.IntRange(0, 3).Draw(t, "crashes") {
		if w.FaultsEnd > time.Millisecond {
			c.Crashes = append(c.Crashes, fault("crash"))
		}
	}
	for range rapid.IntRange(0, 3).Draw(t, "pauses") {
		if w.FaultsEnd > time.Millisecond {
			c.Pauses = append(c.Pauses, fault("pause"))
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "store-outages") {
		from := ms(t, 0, end, "store-outage-from-ms")
		c.StoreOutages = append(c.StoreOutages, sim.Window{From: from, To: from + ms(t, 0, end-int64(from/time.Millisecond), "store-outage-len-ms")})
	}
}

func TestPropertyAnyWorldHoldsInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := genWorld(t)
		seed := rapid.Uint64().Draw(t, "seed")
		r, err := sim.Run(w, seed, sim.Options{})
		if err != nil {
			t.Fatalf("generated an invalid world: %v", err)
		}
		for _, v := range r.Violations {
			t.Errorf("%s\n  world: %s", v, w.Describe())
		}
	})
}

package scenarios

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

// Swarm draws a whole world from the seed alone: ordering, policy, workload
// and fault mix. Swarm testing: each seed turns on a different subset of
// faults at a different intensity, so that faults which mask each other in
// one mix are met alone in another. Every range is sane for the policy
// (no world is unsatisfiable by construction), and every fault ends by
// FaultsEnd so the liveness phase can be judged.
//
// The world is drawn in passes from streams of their own: the first
// ("swarm") draws what the swarm drew before the store's own faults, the
// clock steps and the operator existed, the second ("swarm-faults")
// those, the third ("swarm-http") whether the sends go through the real
// HTTP channel and receiver kit, the fourth ("swarm-platform") whether a
// world publishes through the platform's fan-out, the fifth
// ("swarm-slow") slow store calls, the last ("swarm-gather") how long
// the drivers gather replies. A seed's earlier passes are then what
// they always were, and a seed a later pass gives nothing runs the world
// it ran before.
func Swarm(seed uint64) sim.World {
	w := swarmWorld(seed, swarmStream(seed, "swarm"))
	drawFaults(swarmStream(seed, "swarm-faults"), &w)
	drawHTTP(swarmStream(seed, "swarm-http"), &w)
	drawPlatform(swarmStream(seed, "swarm-platform"), &w)
	drawSlow(swarmStream(seed, "swarm-slow"), &w)
	drawGather(swarmStream(seed, "swarm-gather"), &w)
	return w
}

// GatherShare is the share of swarm seeds whose drivers let replies pile
// up for a while before they hand them over (sim.Driver.Gather).
const GatherShare = 0.5

// drawGather is Swarm's gather pass: for GatherShare of the seeds, a
// gather window of 1 to 50 ms, as long as a busy production loop may
// take over a store call, within what the world's timeouts allow
// (World.MaxGather); the rest hand replies over at once.
func drawGather(r *rand.Rand, w *sim.World) {
	if r.Float64() >= GatherShare {
		return
	}
	hi := min(50*time.Millisecond, w.MaxGather())
	if hi < time.Millisecond {
		return
	}
	w.Driver.Gather = time.Millisecond + time.Duration(r.Int64N(int64(hi-time.Millisecond)+1))
}

// SlowShare is the share of the swarm's clusters whose workers' store
// calls may be slow (sim.SlowCalls).
const SlowShare = 0.4

// drawSlow is Swarm's slow-call pass: for SlowShare of the clusters,
// slow store calls of a twentieth of a lease to two leases, before the
// store acts or after it. A secret rotation keeps the old secret longer
// by what they may hold (World.RotationHold).
func drawSlow(r *rand.Rand, w *sim.World) {
	if w.Cluster.Workers == 0 || r.Float64() >= SlowShare {
		return
	}
	ttl := w.LeaseTTL()
	hold := w.RotationHold()
	w.Store.Slow = sim.SlowCalls{Rate: 0.01 + r.Float64()*0.1, Min: ttl / 20, Max: 2 * ttl, Limit: 1 + r.IntN(8)}
	if rot := &w.HTTP.Rotation; rot.Add > 0 {
		rot.Drop += w.RotationHold() - hold
	}
}

// HTTPShare is the share of swarm seeds whose sends go through the real
// HTTP channel into the real receiver kit (sim.HTTP).
const HTTPShare = 0.25

// drawHTTP is Swarm's third pass: for HTTPShare of the seeds, the real
// channel and receiver kit, the status that rejects a poison or stubborn
// event (429, 500 or 503), how lost replies are lost (reset or hang), and
// for half of those a secret rotation while the faults last.
func drawHTTP(r *rand.Rand, w *sim.World) {
	if r.Float64() >= HTTPShare {
		return
	}
	dur := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	h := &w.HTTP
	h.On = true
	h.RejectStatus = []int{429, 500, 503}[r.IntN(3)]
	h.ResetRate = r.Float64()
	if r.IntN(2) == 0 {
		add := dur(time.Millisecond, max(w.FaultsEnd, time.Millisecond))
		sw := add + dur(100*time.Millisecond, 10*time.Second)
		h.Rotation = sim.Rotation{Add: add, Switch: sw, Drop: sw + w.RotationHold() + dur(0, 10*time.Second)}
	}
}

// swarmStream is the seed's random stream named name.
func swarmStream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// swarmWorld is Swarm's first pass.
func swarmWorld(seed uint64, r *rand.Rand) sim.World {
	dur := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	coin := func(p float64) bool { return r.Float64() < p }
	rate := func(hi float64) float64 { return r.Float64() * hi }

	p := Policy(seed)
	if coin(0.4) {
		p.Ordering = machine.Independent
		p.Window = 1 + r.IntN(8)
	}
	p.MaxAttempts = 3 + r.IntN(10)
	p.BaseBackoff = dur(50*time.Millisecond, 500*time.Millisecond)
	p.MaxBackoff = min(p.BaseBackoff<<(2+r.IntN(5)), 10*time.Second)
	p.JitterPercent = r.IntN(51)
	p.AttemptTimeout = dur(time.Second, 5*time.Second)
	p.BreakerThreshold = 1 + r.IntN(5)
	p.ProbeTimeout = dur(500*time.Millisecond, 3*time.Second)
	p.ProbeBaseInterval = dur(200*time.Millisecond, time.Second)
	p.ProbeMaxInterval = p.ProbeBaseInterval * time.Duration(2+r.IntN(8))
	p.MaxAge = dur(time.Minute, 10*time.Minute)
	if coin(0.2) {
		p.MaxQueued = 5 + r.IntN(20) // backpressure: the producer must wait
	}

	w := Base(seed)
	w.Policy = p
	w.Events = 10 + r.IntN(111)
	w.Interarrival = dur(20*time.Millisecond, time.Second)
	w.FaultsEnd = dur(10*time.Second, 60*time.Second)
	w.Producer.AckTimeout = dur(time.Second, 5*time.Second)
	if coin(0.3) {
		w.Producer.SendTwice = true
		w.Producer.TwiceDelay = dur(0, time.Second)
	}
	c := &w.Channel
	c.LatencyMin = dur(time.Millisecond, 20*time.Millisecond)
	c.LatencyMax = c.LatencyMin + dur(0, 200*time.Millisecond)
	// A healthy round trip beats every timeout; the client's may outlast
	// the machine's AttemptTimeout, so both timeout paths are exercised.
	c.ClientTimeout = 2*c.LatencyMax + dur(10*time.Millisecond, 4*time.Second)
	window := func(maxLen time.Duration) sim.Window {
		from := dur(0, w.FaultsEnd-time.Second)
		return sim.Window{From: from, To: min(from+dur(time.Second, maxLen), w.FaultsEnd)}
	}
	for range r.IntN(4) {
		c.Outages = append(c.Outages, window(25*time.Second))
	}
	if coin(0.4) {
		for range 1 + r.IntN(2) {
			c.Flapping = append(c.Flapping, window(20*time.Second))
		}
		c.FlapFailRate = rate(0.5)
	}
	if coin(0.5) {
		c.LostAckRate = rate(0.4)
	}
	if coin(0.3) {
		// Up to one request in five held late: one that lands after its
		// event moved on (parked behind an open circuit, say) is a thin
		// cell of the coverage matrix.
		c.LateRate = rate(0.2)
		c.LateDelay = dur(500*time.Millisecond, 10*time.Second)
	}
	w.Receiver.Fence = p.Ordering == machine.Strict
	if coin(0.5) {
		w.Receiver.RetryAfter = dur(0, 5*time.Second)
	}
	for range r.IntN(3) {
		w.Receiver.Poison = append(w.Receiver.Poison, sim.EventID(r.IntN(w.Events)))
	}
	for range r.IntN(3) {
		w.Receiver.Stubborn = append(w.Receiver.Stubborn, sim.Stubborn{ID: sim.EventID(r.IntN(w.Events)), Failures: 1 + r.IntN(6)})
	}
	drawRegions(r, &w, dur, coin)
	if coin(0.4) {
		drawCluster(r, &w, dur)
		drawStreams(r, &w, coin)
		drawRotation(r, &w, coin)
		return w
	}
	w.Restarts.Random = r.IntN(5)
	if coin(0.4) {
		w.Restarts.CrashAfterPersistRate = rate(0.2)
		w.Restarts.MaxCrashes = 1 + r.IntN(4)
	}
	drawStreams(r, &w, coin)
	return w
}

// drawRotation, for a third of the clusters, gives the workers room for
// 1 to 4 streams each and more busy streams than that room (up to three
// times it, 100 at most): producers that keep each stream's events coming
// faster than a lease, so that no stream falls idle and the workers must
// rotate them (worker.Config.YieldAfter; the owner-wait rule). Drawn
// last, so that every other world stays as it was.
func drawRotation(r *rand.Rand, w *sim.World, coin func(float64) bool) {
	c := &w.Cluster
	if c.Workers == 0 || !coin(1.0/3) {
		return
	}
	c.MaxStreams = 1 + r.IntN(4)
	room := c.Workers * c.MaxStreams
	w.Streams = min(100, max(w.Streams, room+1+r.IntN(2*room)))
	w.Events = max(w.Events, w.Streams*(5+r.IntN(10)))
	w.Interarrival = min(w.Interarrival, c.LeaseTTL/time.Duration(2*w.Streams))
}

// drawStreams, half the time, gives a cluster's workers room for 1 to 50
// streams each and spreads the workload over 1 to 50 streams, each judged
// on its own. The streams fit in the workers' room together here;
// drawRotation, drawn after it, makes the worlds where they do not.
func drawStreams(r *rand.Rand, w *sim.World, coin func(float64) bool) {
	if !coin(0.5) {
		return
	}
	room := 50
	if c := &w.Cluster; c.Workers > 0 {
		c.MaxStreams = 1 + r.IntN(50)
		room = min(room, c.Workers*c.MaxStreams)
	}
	w.Streams = 1 + r.IntN(room)
}

// drawCluster turns the sender into 2 or 3 workers sharing one store, with
// crashes, pauses (zombies), stalls on a stale clock, clock skew and store
// refusals drawn.
func drawCluster(r *rand.Rand, w *sim.World, dur func(lo, hi time.Duration) time.Duration) {
	c := &w.Cluster
	c.Workers = 2 + r.IntN(2)
	c.LeaseTTL = dur(time.Second, 4*time.Second)
	c.Poll = dur(c.LeaseTTL/8, c.LeaseTTL*2/5)
	for range c.Workers {
		c.Skews = append(c.Skews, dur(-500*time.Millisecond, 500*time.Millisecond))
	}
	fault := func(maxFor time.Duration) sim.WorkerFault {
		worker := sim.Owner
		if r.IntN(2) == 0 {
			worker = r.IntN(c.Workers)
		}
		d := dur(100*time.Millisecond, maxFor)
		return sim.WorkerFault{Worker: worker, At: dur(0, max(w.FaultsEnd-d, 0)), For: min(d, w.FaultsEnd)}
	}
	for range r.IntN(3) {
		c.Crashes = append(c.Crashes, fault(3*c.LeaseTTL))
	}
	for range r.IntN(3) {
		c.Pauses = append(c.Pauses, fault(3*c.LeaseTTL))
	}
	for range r.IntN(3) {
		from := dur(0, w.FaultsEnd)
		c.StoreOutages = append(c.StoreOutages, sim.Window{From: from, To: min(from+dur(100*time.Millisecond, 3*time.Second), w.FaultsEnd)})
	}
	if r.IntN(2) == 0 {
		// Renewals with varied TTLs: a shorter one must not shorten the
		// lease.
		c.RenewTTLMin = dur(2*c.Poll+time.Millisecond, c.LeaseTTL)
	}
	for range r.IntN(3) {
		// Stalls inside a call, on a stale clock reading: a stale write
		// only the store's fencing can refuse.
		c.Stalls = append(c.Stalls, fault(3*c.LeaseTTL))
	}
}

// drawRegions reaches the corners of the policy that a plain draw meets
// too rarely for the checker to guard them: Retry-After hints above
// MaxRetryAfter and a zero cap (hints ignored); a MaxAge shorter than the
// retry budget, so events expire while they still have attempts; events
// with identical payloads; producers that offer an event again long after
// its acknowledgement; queues that fill; and replies that arrive after
// their attempt timed out (a client that waits longer than the machine).
func drawRegions(r *rand.Rand, w *sim.World, dur func(lo, hi time.Duration) time.Duration, coin func(float64) bool) {
	p := &w.Policy
	switch x := r.IntN(10); {
	case x < 2:
		p.MaxRetryAfter = 0
	case x < 5:
		p.MaxRetryAfter = dur(100*time.Millisecond, 2*time.Second)
	}
	if coin(0.3) {
		p.MaxAge = dur(5*time.Second, 40*time.Second)
	}
	if coin(0.3) {
		w.Producer.SamePayload = true
	}
	if coin(0.3) {
		w.Producer.SendTwice = true
		w.Producer.TwiceDelay = dur(time.Second, 20*time.Second)
	}
	if coin(0.15) {
		p.MaxQueued = 3 + r.IntN(8)
	}
	if coin(0.5) {
		// Events the receiver rejects, met late: a rejection may find the
		// event parked or dead.
		for range 2 + r.IntN(3) {
			w.Receiver.Stubborn = append(w.Receiver.Stubborn, sim.Stubborn{ID: sim.EventID(r.IntN(w.Events)), Failures: 1 + r.IntN(8)})
		}
		w.Receiver.Poison = append(w.Receiver.Poison, sim.EventID(r.IntN(w.Events)))
	}
	if coin(0.5) {
		c := &w.Channel
		c.ClientTimeout = max(c.ClientTimeout, p.AttemptTimeout+dur(100*time.Millisecond, 2*time.Second))
		c.LateRate = max(c.LateRate, r.Float64()*0.25)
		c.LateDelay = max(c.LateDelay, p.AttemptTimeout+dur(0, 5*time.Second))
	}
}

// drawFaults is Swarm's second pass: the store's own faults (calls refused
// or their replies lost, bursts of refused renewals shorter and longer
// than a lease), clock steps on either side of the workers' ClockMargin,
// and an operator who discards dead letters, replays them, deletes
// settled records and pauses streams.
func drawFaults(r *rand.Rand, w *sim.World) {
	dur := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	coin := func(p float64) bool { return r.Float64() < p }
	ttl := w.LeaseTTL()
	if coin(0.35) {
		st := &w.Store
		st.Max = 1 + r.IntN(10)
		st.RefuseRate = r.Float64() * 0.05
		st.LostReplyRate = r.Float64() * 0.05
	}
	if coin(0.25) {
		for range 1 + r.IntN(2) {
			// From a third of a lease to two and a half: the worker rides
			// out a short burst and loses the stream in a long one.
			d := dur(ttl/3, ttl*5/2)
			from := dur(0, max(w.FaultsEnd-d, 0))
			w.Store.RenewFailures = append(w.Store.RenewFailures, sim.Window{From: from, To: min(from+d, w.FaultsEnd)})
		}
	}
	if c := &w.Cluster; c.Workers > 0 && coin(0.4) {
		margin := ttl / 10 // the workers' ClockMargin
		for range 1 + r.IntN(3) {
			by := dur(margin/2, 3*margin) // within the margin, or past it
			if coin(0.5) {
				by = -by
			}
			c.ClockSteps = append(c.ClockSteps, sim.ClockStep{Worker: r.IntN(c.Workers), At: dur(0, w.FaultsEnd), By: by})
		}
	}
	if coin(0.3) {
		w.Operator.Discards = 1 + r.IntN(4)
	}
	if coin(0.2) {
		o := &w.Operator
		o.Deletes = 1 + r.IntN(2)
		o.Retention = w.FaultsEnd + w.Producer.TwiceDelay + w.Producer.AckTimeout + dur(time.Second, 20*time.Second)
	}
	// Drawn last, so that the worlds drawn before replays existed are
	// drawn as they were, but for the replays.
	if coin(0.3) {
		w.Operator.Replays = 1 + r.IntN(4)
	}
	if coin(0.3) {
		// Pauses from half a lease to half the faulty span: the owner
		// finishes what it holds, and no takeover delivers until the
		// resume.
		for range 1 + r.IntN(2) {
			d := dur(ttl/2, max(ttl/2, w.FaultsEnd/2))
			from := dur(0, max(w.FaultsEnd-d, 0))
			o := &w.Operator
			o.Pauses = append(o.Pauses, sim.StreamPause{Stream: r.IntN(max(w.Streams, 1)), From: from, To: min(from+d, w.FaultsEnd)})
		}
	}
}

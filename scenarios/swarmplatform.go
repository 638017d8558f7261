package scenarios

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/courierlab/courier/sim"
)

// PlatformShare is the share of the swarm's seeds without HTTP whose
// world becomes a platform world (sim.Platform): its events become the
// deliveries of messages published through the fan-out to 2 to 4
// endpoints, each with its own filter, faults and rate limit.
const PlatformShare = 0.2

// HTTPPlatformShare is the share of the swarm's HTTP seeds whose world
// becomes a platform world too: its endpoints' channels are the real
// HTTP channel with each endpoint's status policy (drawRejectStatuses).
const HTTPPlatformShare = 0.3

// drawPlatform is Swarm's fourth pass, drawn last from its own stream:
// for PlatformShare of the seeds without HTTP, and HTTPPlatformShare of
// those with (whose endpoints then draw status policies,
// drawRejectStatuses), the world's workload is
// published as messages of 1 to 3 event types to 2 to 4 endpoints, each
// with its own filter (half of them none), outages, flapping, a rate
// limit (two thirds of the worlds limit some endpoint), and disables by
// the operator; publishes crash mid fan-out and are re-driven; and the
// operator bulk-replays an endpoint's dead letters, all or since an
// instant; half of the endpoints have a retry policy of their own
// (drawRetryPolicies); and half of the worlds create an endpoint late
// and replay what it missed (drawMissing), and three quarters run a bulk replay as
// a job whose serve crashes (drawJob). Stream pauses are dropped: a platform world pauses its streams
// by disabling their endpoints. Poison and stubborn events stay: event i
// is the delivery i of the workload, of message i/E to endpoint i%E.
func drawPlatform(r *rand.Rand, w *sim.World) {
	if w.HTTP.On {
		if r.Float64() >= HTTPPlatformShare {
			return
		}
	} else if r.Float64() >= PlatformShare {
		return
	}
	dur := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(max(hi-lo, 0))+1))
	}
	e := 2 + r.IntN(3)
	w.Streams, w.Events = e, max(w.Events/e, 2)*e
	w.Operator.Pauses = nil
	p := &w.Platform
	for t := range 1 + r.IntN(3) {
		p.EventTypes = append(p.EventTypes, fmt.Sprintf("type.%d", t+1))
	}
	limits := r.IntN(3) > 0
	window := func(maxLen time.Duration) sim.Window {
		from := dur(0, w.FaultsEnd-time.Second)
		return sim.Window{From: from, To: min(from+dur(time.Second, maxLen), w.FaultsEnd)}
	}
	for range e {
		var ep sim.PlatformEndpoint
		if r.IntN(2) == 0 {
			for _, t := range p.EventTypes {
				if r.IntN(2) == 0 {
					ep.EventTypes = append(ep.EventTypes, t)
				}
			}
		}
		if limits && r.IntN(2) == 0 {
			ep.RateLimit = 1 + r.IntN(10)
		}
		for range r.IntN(3) {
			ep.Outages = append(ep.Outages, window(25*time.Second))
		}
		for range r.IntN(2) {
			ep.Flapping = append(ep.Flapping, window(20*time.Second))
		}
		if len(ep.Flapping) > 0 && w.Channel.FlapFailRate == 0 {
			w.Channel.FlapFailRate = r.Float64() * 0.5
		}
		if r.IntN(3) == 0 {
			from := dur(0, w.FaultsEnd-time.Second)
			ep.Disables = []sim.Window{{From: from, To: min(from+dur(500*time.Millisecond, w.FaultsEnd/2), w.FaultsEnd)}}
		}
		p.Endpoints = append(p.Endpoints, ep)
	}
	if r.IntN(2) == 0 {
		p.CrashRate, p.MaxCrashes = r.Float64()*0.3, 1+r.IntN(4)
	}
	p.Redrive = dur(100*time.Millisecond, 5*time.Second)
	for range r.IntN(3) {
		b := sim.BulkReplay{Endpoint: r.IntN(e), At: dur(0, w.FaultsEnd), All: r.IntN(2) == 0}
		if !b.All {
			b.Since = dur(0, b.At)
		}
		p.Replays = append(p.Replays, b)
	}
	drawRetryPolicies(r, w, dur)
	drawMissing(r, w, dur)
	drawJob(r, w, dur)
	drawRejectStatuses(r, w)
	drawHealth(r, w, dur)
}

// drawHealth, last: in two thirds of the platform worlds the attempts
// feed endpoint health (sim.Platform.DisableAfter) with a small
// DisableAfter, 2 to 4 times what a disable costs (a re-enable 200 ms to
// 3 s later, and a lease), so that a failing streak can disable an
// endpoint; and in an HTTP world, the endpoint of the first poison or
// stubborn event answers it 410 Gone (sim.PlatformEndpoint.Gone), with
// the default status policy, so that a 410 disables it at once.
func drawHealth(r *rand.Rand, w *sim.World, dur func(lo, hi time.Duration) time.Duration) {
	p := &w.Platform
	if r.IntN(3) == 0 {
		return
	}
	p.Reenable = dur(200*time.Millisecond, 3*time.Second)
	cost := p.Reenable + w.LeaseTTL()
	p.DisableAfter = dur(2*cost, 4*cost)
	if !w.HTTP.On {
		return
	}
	ids := slices.Clone(w.Receiver.Poison)
	for _, st := range w.Receiver.Stubborn {
		ids = append(ids, st.ID)
	}
	for _, id := range ids {
		var n int
		if _, err := fmt.Sscanf(id, "e%d", &n); err == nil && n > 0 {
			ep := &p.Endpoints[(n-1)%len(p.Endpoints)] // EventID(n-1) is delivery n-1, to endpoint (n-1) mod E
			ep.Gone, ep.RejectStatuses = true, nil
			return
		}
	}
}

// drawRejectStatuses, last, in an HTTP world: half of the endpoints
// reject at once (platform.StatusPolicy) the status the receiver answers
// a poison or stubborn event with, or 422, or both; the others keep the
// channel's default (410 only).
func drawRejectStatuses(r *rand.Rand, w *sim.World) {
	if !w.HTTP.On {
		return
	}
	reject := w.HTTP.RejectStatus
	if reject == 0 {
		reject = 503
	}
	for i := range w.Platform.Endpoints {
		if r.IntN(2) == 0 {
			continue
		}
		w.Platform.Endpoints[i].RejectStatuses = [][]int{{reject}, {422, reject}, {422}}[r.IntN(3)]
	}
}

// drawRetryPolicies gives half of a platform world's endpoints a retry
// policy of their own (1 to 12 attempts, a backoff from 10 ms to 1 s
// doubling up to 1 to 32 times it, at most 10 s), drawn after the rest of
// the platform pass so that what it drew before stays as it was.
func drawRetryPolicies(r *rand.Rand, w *sim.World, dur func(lo, hi time.Duration) time.Duration) {
	for i := range w.Platform.Endpoints {
		if r.IntN(2) == 0 {
			continue
		}
		ep := &w.Platform.Endpoints[i]
		ep.MaxAttempts = 1 + r.IntN(12)
		ep.BaseBackoff = dur(10*time.Millisecond, time.Second)
		ep.MaxBackoff = min(ep.BaseBackoff<<r.IntN(6), 10*time.Second)
	}
}

// drawMissing, after drawRetryPolicies: in half of the platform worlds
// the operator creates one endpoint late, while the messages are being
// published (it has no disables then), and asks once or twice for the
// messages it missed, since an instant before its creation for two asks
// in three; and in a third of the worlds asks it for one endpoint, which
// missed what was published while it was disabled.
func drawMissing(r *rand.Rand, w *sim.World, dur func(lo, hi time.Duration) time.Duration) {
	p := &w.Platform
	ask := func(i int) {
		created := p.Endpoints[i].Created
		at := dur(created, w.FaultsEnd)
		since := dur(0, at)
		if r.IntN(3) > 0 {
			since = dur(0, created)
		}
		p.Missing = append(p.Missing, sim.MissingReplay{Endpoint: i, At: at, Since: since})
	}
	if r.IntN(2) == 0 {
		i := r.IntN(len(p.Endpoints))
		publishing := time.Duration(w.Events/len(p.Endpoints)) * w.Interarrival
		ep := &p.Endpoints[i]
		ep.Created, ep.Disables = dur(time.Millisecond, min(w.FaultsEnd*2/3, publishing)), nil
		for range 1 + r.IntN(2) {
			ask(i)
		}
	}
	if r.IntN(3) == 0 {
		ask(r.IntN(len(p.Endpoints)))
	}
}

// drawJob, after drawMissing: in three quarters of the platform worlds the operator
// runs one more bulk replay, late in the faults so that dead letters
// have gathered, after its other bulk replays, of the endpoint of the first poison event if there is
// one (where dead letters are), as a job of 1 or 2 dead letters a page
// whose serve crashes after its first or second page; another serve
// resumes it up to a minute after its lease ended.
func drawJob(r *rand.Rand, w *sim.World, dur func(lo, hi time.Duration) time.Duration) {
	p := &w.Platform
	if r.IntN(4) == 0 {
		return
	}
	i := r.IntN(len(p.Endpoints))
	if len(w.Receiver.Poison) > 0 {
		var n int
		if _, err := fmt.Sscanf(w.Receiver.Poison[0], "e%d", &n); err == nil && n > 0 {
			i = (n - 1) % len(p.Endpoints) // EventID(n-1) is delivery n-1, to endpoint (n-1) mod E
		}
	}
	from := max(p.Endpoints[i].Created, w.FaultsEnd/2)
	for _, b := range p.Replays {
		from = max(from, b.At) // after the operator's other bulk replays, which it would otherwise empty
	}
	b := sim.BulkReplay{Endpoint: i, At: dur(from, w.FaultsEnd), All: r.IntN(4) == 0,
		Page: 1 + r.IntN(2), CrashAfter: 1 + r.IntN(2), Resume: dur(0, time.Minute)}
	if !b.All {
		b.Since = dur(0, b.At)
	}
	p.Replays = append(p.Replays, b)
}

package sim

import (
	"fmt"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

func (s *sim) latency() time.Duration {
	return between(s.rChannel, s.w.Channel.LatencyMin, s.w.Channel.LatencyMax)
}

func (s *sim) inWindows(ws []Window) bool {
	d := s.elapsed
	for _, w := range ws {
		if w.contains(d) {
			return true
		}
	}
	return false
}

// send puts one attempt on the channel. Whatever happens, the sender gets
// exactly one outcome for it: the channel's answer, or a timeout at
// ClientTimeout, whichever comes first.
func (s *sim) send(n *node, x worker.Send) {
	c := &s.w.Channel
	f := &flight{n: n, x: x, event: s.eventIndex(x.ID), key: attemptKey{n, n.inc, x.ID, x.Attempt.Attempt}}
	s.sends[f.event]++ // the event's Sent entries (result)
	attempt := x.Attempt.Attempt
	s.later(n, s.elapsed+c.ClientTimeout, func() { s.answer(f, machine.OutcomeTimedOut, 0, "client timeout") })
	switch {
	case s.inWindows(c.Outages):
		s.note(nil, opOutage, str(x.ID), num(attempt))
		s.coverSend(x, FaultOutage)
		s.later(n, s.elapsed+c.LatencyMin, func() { s.answer(f, machine.OutcomeFailed, 0, "connection refused") })
		return
	case s.inWindows(c.Flapping) && chance(s.rChannel, c.FlapFailRate):
		s.note(nil, opFlap, str(x.ID), num(attempt))
		s.coverSend(x, FaultFlap)
		s.later(n, s.elapsed+s.latency(), func() { s.answer(f, machine.OutcomeFailed, 0, "502 from the flapping link") })
		return
	}
	arrive := s.latency()
	f.late = s.faulty() && chance(s.rChannel, c.LateRate)
	if f.late {
		arrive += c.LateDelay
		s.note(nil, opLate, str(x.ID), num(attempt), dur(c.LateDelay))
	}
	f.lose = s.faulty() && chance(s.rChannel, c.LostAckRate)
	f.back = s.latency()
	s.q.schedule(s.elapsed+arrive, func() { s.arrive(f) })
}

// attemptKey names one attempt of one incarnation of a node: the sender
// takes the first outcome for it, of whichever flight with the key it is.
type attemptKey struct {
	node    *node
	inc     int
	id      string
	attempt int
}

// flight is one attempt on the fake channel, from its send until the
// sender has an outcome for it.
type flight struct {
	n          *node
	x          worker.Send
	key        attemptKey
	event      int // x.ID's index in the workload
	late, lose bool
	back       time.Duration // the reply's latency
}

// arrive is f reaching the receiver.
func (s *sim) arrive(f *flight) {
	x, attempt, i := f.x, f.x.Attempt.Attempt, f.event
	if f.late {
		s.coverEvent(FaultLate, i)
	}
	v := s.recv.deliver(i%len(s.streams), i, x.Seq)
	switch v {
	case rejectedPoison:
		s.coverEvent(FaultPoison, i)
	case rejectedStubborn:
		s.coverEvent(FaultStubborn, i)
	}
	s.note(nil, opReceiver, str(v.String()), str(x.ID), unum(x.Seq), num(attempt))
	switch v {
	case applied:
		s.observe(invariants.Entry{Kind: invariants.Applied, ID: x.ID, Seq: x.Seq, Attempt: attempt})
	case duplicate, fenced:
		s.observe(invariants.Entry{Kind: invariants.Discarded, ID: x.ID, Seq: x.Seq, Attempt: attempt, Detail: v.String()})
	}
	if f.lose {
		s.note(nil, opLostAck, str(x.ID), num(attempt))
		s.coverEvent(FaultLostAck, i)
		return
	}
	var retryAfter time.Duration
	if v == rejectedPoison || v == rejectedStubborn {
		retryAfter = s.w.Receiver.RetryAfter
	}
	s.later(f.n, s.elapsed+f.back, func() { s.answer(f, v.outcome(), retryAfter, "") })
}

// answer hands f's sender an outcome of its attempt, unless it has one
// already; why, if set, is the channel's reason for it.
func (s *sim) answer(f *flight, outcome machine.Outcome, retryAfter time.Duration, why string) {
	n, x, attempt := f.n, f.x, f.x.Attempt.Attempt
	if s.answered[f.key] {
		s.note(n, opReplyGaveUp, str(x.ID), num(attempt), str(outcome.String()))
		return
	}
	s.answered[f.key] = true
	if why != "" {
		s.note(n, opChannel, str(x.ID), num(attempt), str(why))
	}
	s.note(n, opIn, input(machine.Result{At: s.clock(n), ID: x.ID, Attempt: attempt, Outcome: outcome, RetryAfter: retryAfter}))
	s.deliver(n, x.Reply(channel.Outcome{Result: outcome, RetryAfter: retryAfter}))
}

// coverSend counts a fault that struck a send. A fenced-off owner's late
// send (a zombie's) may meet its event in any state and is counted as
// the pause that made it, not here.
func (s *sim) coverSend(x worker.Send, f Fault) {
	if x.Token >= s.newestToken {
		s.cover(f, x.ID)
	}
}

// probe checks the channel: down in an outage, maybe down while flapping.
func (s *sim) probe(n *node, p worker.Probe) {
	c := s.w.Channel
	healthy := true
	delay := 2 * s.latency()
	switch {
	case s.inWindows(c.Outages):
		healthy, delay = plant.On(plant.ProbeHealthyInOutage), c.LatencyMin
	case s.inWindows(c.Flapping) && chance(s.rChannel, c.FlapFailRate):
		healthy = false
	}
	if healthy && s.inWindows(c.Outages) {
		// The fake's own fault model: nothing reaches the receiver in an
		// outage, so no probe can find it healthy.
		panic(fmt.Sprintf("sim: seed %d: the fake channel broke its fault model [probe-in-outage]: probe %d answered healthy during an outage", s.seed, p.N))
	}
	pr := &probing{n: n, p: p, healthy: healthy}
	s.later(n, s.elapsed+delay, func() { s.probeAnswer(pr) })
}

// probing is one probe on the fake channel, until its answer comes.
type probing struct {
	n       *node
	p       worker.Probe
	healthy bool
}

// probeAnswer hands pr's answer to its node's worker.
func (s *sim) probeAnswer(pr *probing) {
	n, p := pr.n, pr.p
	o := machine.OutcomeDelivered
	if !pr.healthy {
		o = machine.OutcomeFailed
	}
	s.note(n, opIn, input(machine.ProbeResult{At: s.clock(n), N: p.N, Healthy: pr.healthy}))
	s.deliver(n, p.Reply(channel.Outcome{Result: o}))
}

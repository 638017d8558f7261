package sim

import (
	"fmt"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook/httpchannel"
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
	f := &flight{n: n, x: x, event: s.eventIndex(x.ID), key: attemptKey{n, n.inc, x.Token, x.ID, x.Attempt.Attempt}}
	s.sends[f.event]++ // the event's Sent entries (result)
	attempt := x.Attempt.Attempt
	f.sentAt = s.clock(n)
	if s.http != nil {
		f.ch = s.http.sender(s.streamIndex(x.Stream))
	}
	s.later(n, s.elapsed+c.ClientTimeout, func() { s.answer(f, machine.OutcomeTimedOut, 0, "client timeout") })
	switch {
	case s.outage(x.Stream):
		s.note(nil, opOutage, str(x.ID), num(attempt))
		s.coverSend(x, FaultOutage)
		s.later(n, s.elapsed+c.LatencyMin, func() { s.failed(f, tripRefused, "connection refused") })
		return
	case s.flapping(x.Stream) && chance(s.rChannel, c.FlapFailRate):
		s.note(nil, opFlap, str(x.ID), num(attempt))
		s.coverSend(x, FaultFlap)
		s.later(n, s.elapsed+s.latency(), func() { s.failed(f, tripFlap, "502 from the flapping link") })
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

// failed answers f with a failure before it reached the receiver: in an
// HTTP world, the real channel's reading of it (mode), else the fake's.
func (s *sim) failed(f *flight, mode trip, why string) {
	if s.http == nil {
		s.answer(f, machine.OutcomeFailed, 0, why)
		return
	}
	o := s.http.send(f, mode)
	s.answerOutcome(f, o, o.Detail)
}

// attemptKey names one attempt of one incarnation of a node under one
// lease: the sender takes the first outcome for it, of whichever flight
// with the key it is. The lease's token is part of it because a replay
// starts an event's attempt numbers again, under a newer lease, while
// the node's incarnation goes on.
type attemptKey struct {
	node    *node
	inc     int
	token   uint64
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
	// In an HTTP world: the channel that signs it (as of its send). And
	// the sender's clock at the send.
	ch     *httpchannel.Channel
	sentAt time.Time
}

// arrive is f reaching the receiver.
func (s *sim) arrive(f *flight) {
	if s.http != nil {
		s.arriveHTTP(f)
		return
	}
	x, attempt, i := f.x, f.x.Attempt.Attempt, f.event
	v := s.recv.deliver(i%len(s.streams), i, x.Seq)
	s.received(f, v, "")
	if f.lose {
		s.note(nil, opLostAck, str(x.ID), num(attempt))
		s.coverEvent(FaultLostAck, i)
		return
	}
	var retryAfter time.Duration
	if v == rejectedPoison || v == rejectedStubborn {
		retryAfter = s.w.Receiver.RetryAfter
	}
	s.laterFlight(f, s.elapsed+f.back, func() { s.answer(f, v.outcome(), retryAfter, "") })
}

// received logs what the receiver did with f: v, and why if it could
// not verify it.
func (s *sim) received(f *flight, v verdict, why string) {
	x, attempt, i := f.x, f.x.Attempt.Attempt, f.event
	if f.late {
		s.coverEvent(FaultLate, i)
	}
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
	case unverified:
		s.observe(invariants.Entry{Kind: invariants.Discarded, ID: x.ID, Seq: x.Seq, Attempt: attempt, Detail: invariants.DiscardUnverified + ": " + why})
	}
}

// arriveHTTP is f reaching the receiver kit through the real channel.
// A lost reply is lost after the kit answered: as a reset connection
// (the channel reports a failure, after the reply's latency) or a hang
// (the sender times out).
func (s *sim) arriveHTTP(f *flight) {
	mode := tripArrive
	if f.lose && chance(s.http.r, s.w.HTTP.ResetRate) {
		mode = tripReset
	}
	o := s.http.send(f, mode)
	v := s.http.verdict
	switch v {
	case duplicate:
		s.recv.dups++
	case fenced:
		s.recv.fenced++
	case 0:
		panic("sim: a request reached the receiver kit and got no verdict")
	}
	s.received(f, v, s.http.why)
	// The answer comes back, and the endpoint's policy rejects it at once:
	// the channel must report it refused (channel-true), if the answer
	// reaches the sender before it gives up (a client timeout).
	rejected := (v == rejectedPoison || v == rejectedStubborn) && !f.lose && s.http.rejects(s.streamIndex(f.x.Stream))
	if f.lose {
		s.note(nil, opLostAck, str(f.x.ID), num(f.x.Attempt.Attempt))
		s.coverEvent(FaultLostAck, f.event)
		if mode != tripReset {
			return
		}
	}
	s.laterFlight(f, s.elapsed+f.back, func() {
		if rejected && !s.answered[f.key] {
			s.observe(invariants.Entry{Kind: invariants.Discarded, ID: f.x.ID, Seq: f.x.Seq, Attempt: f.x.Attempt.Attempt,
				Token: f.x.Token, Detail: invariants.DiscardRejected})
		}
		s.answerOutcome(f, o, o.Detail)
	})
}

// laterFlight schedules fn, a reply to flight f, for the incarnation of
// f's node that sent it: a node that restarted since never hears it, as
// a process's requests die with it. (Scheduled with later, it would go to
// whatever incarnation runs when the reply is scheduled, which a reply
// held in the network can outlive.)
func (s *sim) laterFlight(f *flight, at time.Duration, fn func()) {
	s.q.push(happening{at: at, do: fn, n: f.n, inc: f.key.inc})
}

// answer hands f's sender an outcome of its attempt, unless it has one
// already; why, if set, is the channel's reason for it.
func (s *sim) answer(f *flight, outcome machine.Outcome, retryAfter time.Duration, why string) {
	s.answerOutcome(f, channel.Outcome{Result: outcome, RetryAfter: retryAfter}, why)
}

// answerOutcome is answer with the channel's whole outcome.
func (s *sim) answerOutcome(f *flight, o channel.Outcome, why string) {
	n, x, attempt := f.n, f.x, f.x.Attempt.Attempt
	outcome, retryAfter := o.Result, o.RetryAfter
	if s.answered[f.key] {
		s.note(n, opReplyGaveUp, str(x.ID), num(attempt), str(outcome.String()))
		return
	}
	s.answered[f.key] = true
	if why != "" {
		s.note(n, opChannel, str(x.ID), num(attempt), str(why))
	}
	s.note(n, opIn, input(machine.Result{At: s.clock(n), ID: x.ID, Attempt: attempt, Outcome: outcome, RetryAfter: retryAfter}))
	s.recordAttempt(f, o)
	s.deliver(n, x.Reply(o))
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
	case s.outage(p.Stream):
		healthy, delay = plant.On(plant.ProbeHealthyInOutage), c.LatencyMin
	case s.flapping(p.Stream) && chance(s.rChannel, c.FlapFailRate):
		healthy = false
	}
	if healthy && s.outage(p.Stream) {
		// The fake's own fault model: nothing reaches the receiver in an
		// outage, so no probe can find it healthy.
		panic(fmt.Sprintf("sim: seed %d: the fake channel broke its fault model [probe-in-outage]: probe %d answered healthy during an outage", s.seed, p.N))
	}
	pr := &probing{n: n, p: p, healthy: healthy, sentAt: s.clock(n)}
	s.later(n, s.elapsed+delay, func() { s.probeAnswer(pr) })
}

// probing is one probe on the fake channel, until its answer comes.
type probing struct {
	n       *node
	p       worker.Probe
	healthy bool
	sentAt  time.Time // the sender's clock at the probe
}

// probeAnswer hands pr's answer to its node's worker.
func (s *sim) probeAnswer(pr *probing) {
	n, p := pr.n, pr.p
	o := channel.Outcome{Result: machine.OutcomeDelivered}
	if !pr.healthy {
		o.Result = machine.OutcomeFailed
	}
	if s.http != nil {
		o = s.probeHTTP(pr)
	}
	healthy := o.Result == machine.OutcomeDelivered
	s.note(n, opIn, input(machine.ProbeResult{At: s.clock(n), N: p.N, Healthy: healthy}))
	s.deliver(n, p.Reply(o))
}

// probeHTTP is pr through the real channel: a refused connection in an
// outage, the link's 502 when flapping failed it, else the kit's answer.
func (s *sim) probeHTTP(pr *probing) channel.Outcome {
	mode := tripArrive
	switch {
	case s.inWindows(s.w.Channel.Outages):
		mode = tripRefused
	case !pr.healthy:
		mode = tripFlap
	}
	return s.http.probe(pr, mode)
}

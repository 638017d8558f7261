package invariants

import (
	"fmt"
	"time"

	"github.com/courierlab/courier/machine"
)

// The policy rules: what the machine's documented policy (machine/doc.go)
// promises about timing, the breaker, parking and recovery, judged from
// the observation log alone. The checker reads the policy's numbers from
// Run.Policy; it never calls the machine or reuses its code.
const (
	// RetryTiming: when an attempt fails (a failed or timed-out reply, or
	// no reply within AttemptTimeout), the NextAt persisted with it lies
	// between the policy's least and greatest delay after that instant:
	// the backoff min(BaseBackoff*2^(n-1), MaxBackoff) less at most
	// JitterPercent of it, postponed by a Retry-After hint capped at
	// MaxRetryAfter (ignored when MaxRetryAfter is 0); the same owner
	// never starts the next attempt before that NextAt; and the single
	// sender starts it at that NextAt when nothing holds it back (see
	// due.go). Slack: Run.Skew.
	RetryTiming = "retry-timing"
	// Breaker: after BreakerThreshold consecutive retryable failures
	// (timeouts included, of any events), and after one failure right
	// after a half-open close, the next thing the worker sends is a probe;
	// no attempt goes out while a probe is unanswered.
	Breaker = "breaker"
	// Parking: once a worker's circuit opens, every waiting record it
	// knows is persisted as parked before its next send or probe, and
	// whatever it persists while open (a failure, a new event) is parked.
	Parking = "parking"
	// Recovery: a worker that rebuilds from a store holding a parked
	// record starts open, and one holding a record with an attempt behind
	// it does not start closed; either way it probes before any send. No
	// attempt n+1 starts before the NextAt persisted with attempt n, across
	// restarts and owners (released parked records excepted). Slack:
	// Run.Skew.
	Recovery = "recovery"
	// Age: no attempt starts at or after acceptance + MaxAge (+ Run.Skew).
	Age = "age"
	// Leases: fencing tokens grow across grants; a renewal keeps the token
	// and never moves Expires earlier; every write a worker made was under
	// the newest lease, before it expired.
	Leases = "leases"
	// Producers: an offer of an ID that was acknowledged is acknowledged
	// again with the same sequence, even when the queue is full, and
	// changes nothing of the record.
	Producers = "producers"
)

// PolicyNames lists the policy rules, in the order reports show them.
var PolicyNames = []string{RetryTiming, Breaker, Parking, Recovery, Age, Leases, Producers, RateLimit}

// policy judges the policy rules as the log goes by.
type policy struct {
	run     Run
	fail    func(inv, id string, step int, format string, args ...any)
	ids     *names            // event IDs
	events  []event           // per event, by number: the checker's, shared
	workers []*workerState    // per worker, by number
	single  int               // the number of worker "", the single sender
	live    int               // events whose latest record is not terminal
	due     minHeap[dueRetry] // retries of the single sender, by NextAt
	rate    rateRule          // rate.go
	leases
}

// policyEvent is what the policy checker keeps of one event.
type policyEvent struct {
	writer   writer    // worker and incarnation that persisted rec
	failedAt time.Time // when its latest attempt was persisted as failed
	offer              // what the producer was told of its ID
}

// workerState is what one worker's machine must be doing, as far as the
// log shows: its circuit, its failure streak, its probe, what it owes.
type workerState struct {
	name      string
	inc       int
	circuit   machine.Circuit
	circuitAt time.Time // when the circuit last changed
	streak    int       // consecutive retryable failures
	probeOut  bool      // a probe is unanswered
	probeAt   time.Time // when the unanswered probe was sent
	probeOwed int       // step of the failure that owes a probe; -1 if none
	probeNext bool      // recovered: the next thing sent must be a probe
	// The step of a reply lands the reply first and then the timeouts
	// it made due, but persists its records in Seq order (see landed):
	input      int    // step of the worker's latest Replied entry; -1 if none
	inputFails int    // failures landed since that entry
	inputOwed  int    // probeOwed when it came
	recovered  bool   // Restarted: the next circuit is the recovered one
	held       uint64 // the lease token it was last granted (kept across incarnations)
	// ev is what its machine holds of each event, by number (ev[i].known);
	// known lists those numbers, to go over them and to forget them.
	ev    []workerEvent
	known []int
	owed  int // events that owe parking (parkOwed)
}

// workerEvent is what one worker's machine holds of one event. Only a
// known event has anything else set.
type workerEvent struct {
	known    bool  // its machine holds it
	flying   bool  // an attempt of this incarnation not yet landed:
	attempt  int   // this one
	replied  bool  // a reply to it came, while flying:
	reply    reply // the latest
	parkOwed bool  // waiting, not yet persisted parked:
	owedAt   int   // the step that owes it
}

// reply is what the policy checker keeps of a reply to an attempt in
// flight.
type reply struct {
	step       int
	at         time.Time
	failed     bool // the outcome was a failure (not a timeout or refusal)
	retryAfter time.Duration
}

// reset readies p for run. The Checker gives it its workers (including
// the single sender, single) as it numbers them.
func (p *policy) reset(run Run, ids *names) {
	p.run, p.ids = run, ids
	p.workers = p.workers[:0]
	if p.until == nil {
		p.until, p.heard = map[uint64]time.Time{}, map[uint64]time.Time{}
	}
	clear(p.until)
	clear(p.heard)
	p.newest = 0
	p.live = 0
	p.due.reset()
	p.rate.reset(run)
}

// worker returns worker wk's state.
func (p *policy) worker(wk int) *workerState { return p.workers[wk] }

// newWorkerState returns the state of worker name, seen for the first
// time, with room for about events events (see Checker.Check).
func newWorkerState(name string, events int) *workerState {
	w := &workerState{ev: make([]workerEvent, 0, events)}
	w.reset(name, 1)
	return w
}

// reset makes w incarnation inc of worker name, owing nothing and holding
// no event (at adds zero ones): it keeps the lease token it was last
// granted and the room of its slices.
func (w *workerState) reset(name string, inc int) {
	*w = workerState{name: name, inc: inc, held: w.held, ev: w.ev[:0], known: w.known[:0], probeOwed: -1, input: -1, inputOwed: -1}
}

// at returns what w holds of event ev.
func (w *workerState) at(ev int) *workerEvent {
	if ev >= len(w.ev) {
		w.ev = append(w.ev, make([]workerEvent, ev+1-len(w.ev))...)
	}
	return &w.ev[ev]
}

// know notes that w's machine holds event ev.
func (w *workerState) know(ev int) {
	if x := w.at(ev); !x.known {
		x.known = true
		w.known = append(w.known, ev)
	}
}

// owe notes that event ev owes parking since step.
func (w *workerState) owe(ev, step int) {
	w.know(ev)
	x := w.at(ev)
	if !x.parkOwed {
		x.parkOwed = true
		w.owed++
	}
	x.owedAt = step
}

// settle notes that event ev owes no parking.
func (w *workerState) settle(ev int) {
	if x := w.at(ev); x.parkOwed {
		x.parkOwed = false
		w.owed--
	}
}

// settleAll forgets every parking owed.
func (w *workerState) settleAll() {
	if w.owed == 0 {
		return
	}
	for _, i := range w.known {
		w.ev[i].parkOwed = false
	}
	w.owed = 0
}

// writer names a worker's incarnation. It is compared on every persisted
// entry and printed only in a violation, so it is kept unformatted.
type writer struct {
	name string
	inc  int
}

func (w writer) String() string { return fmt.Sprintf("%s#%d", w.name, w.inc) }

func (w *workerState) writer() writer { return writer{w.name, w.inc} }

// replied hands the reply to the attempt it answers, if in flight, and
// notes it as the input of the worker's next step.
func (p *policy) replied(e *Entry, at ref) {
	w := p.worker(at.wk)
	w.input, w.inputFails, w.inputOwed = e.Step, 0, w.probeOwed
	if x := w.at(at.ev); x.flying && x.attempt == e.Attempt {
		x.replied = true
		x.reply = reply{step: e.Step, at: e.At, failed: e.Detail == machine.OutcomeFailed.String(), retryAfter: e.RetryAfter}
	}
}

// adopted gives the worker an event it took over.
func (p *policy) adopted(e *Entry, at ref) {
	w := p.worker(at.wk)
	w.know(at.ev)
	if w.circuit == machine.Open {
		w.owe(at.ev, e.Step)
	}
}

// restarted makes the worker a fresh machine that owes nothing and holds
// every event not yet terminal.
func (p *policy) restarted(at ref) {
	w := p.worker(at.wk)
	w.reset(w.name, w.inc+1)
	w.recovered = true
	for i := range p.events {
		if v := &p.events[i]; v.persisted && !v.rec.State.Terminal() {
			w.know(i)
		}
	}
	p.clearPending() // a crash may cut an acknowledgement
}

// persisted judges a persisted record for the policy checker; prev is the
// event's record before, nil on its first persistence.
func (p *policy) persisted(e *Entry, at ref, v *event, prev *machine.Record) {
	r := &e.Record
	if prev == nil {
		// The record before an event's first: the zero record, due at its
		// acceptance (an event accepted and sent in one batch is first
		// persisted with attempt 1).
		prev = &machine.Record{NextAt: r.AcceptedAt}
	} else if p.events[at.id].pending {
		p.duplicateChanged(e, v) // a re-offer of its ID is being answered
	}
	if e.Worker != "store" {
		p.leaseValid(e)
		w := p.worker(at.wk)
		w.know(at.ev)
		switch x := w.at(at.ev); {
		case r.Attempts > prev.Attempts:
			p.started(e, at, w, v, prev)
		case x.flying && x.attempt == r.Attempts:
			p.landed(e, at, w, v)
		}
		if w.circuit == machine.Open {
			if r.State == machine.Parked || r.State.Terminal() || w.at(at.ev).flying {
				w.settle(at.ev)
			} else if !w.at(at.ev).parkOwed {
				w.owe(at.ev, e.Step)
			}
		}
		v.writer = w.writer()
	}
	if prev.ID != "" && !prev.State.Terminal() {
		p.live--
	}
	if !r.State.Terminal() {
		p.live++
	}
}

// started judges attempt r.Attempts as it is persisted, before its send;
// prev is the event's record before.
func (p *policy) started(e *Entry, at ref, w *workerState, v *event, prev *machine.Record) {
	r, pol := &e.Record, &p.run.Policy
	if !e.At.Before(v.first.acceptedAt.Add(pol.MaxAge + p.run.Skew)) {
		p.fail(Age, r.ID, e.Step, "attempt %d started %v after acceptance; MaxAge is %v", r.Attempts, e.At.Sub(v.first.acceptedAt), pol.MaxAge)
	}
	if r.Attempts == prev.Attempts+1 && prev.State != machine.Parked && e.At.Add(p.run.Skew).Before(prev.NextAt) {
		inv := Recovery
		if v.writer == w.writer() {
			inv = RetryTiming
		}
		p.fail(inv, r.ID, e.Step, "attempt %d started %v before the NextAt persisted with attempt %d (by %s)",
			r.Attempts, prev.NextAt.Sub(e.At), prev.Attempts, v.writer)
	}
	x := w.at(at.ev)
	x.flying, x.attempt, x.replied = true, r.Attempts, false
	p.rate.started(e, p.fail)
}

// landed judges the persisted outcome of the attempt w had in flight.
func (p *policy) landed(e *Entry, at ref, w *workerState, v *event) {
	r, pol := &e.Record, &p.run.Policy
	x := w.at(at.ev)
	reply, replied := x.reply, x.replied
	x.flying, x.attempt, x.replied = false, 0, false
	if r.State == machine.Delivered || r.Reason == machine.Rejected {
		w.streak = 0 // the channel answered
		if replied && reply.step == w.input && p.actedOn(reply, e) {
			p.inputLandedFirst(w)
		}
		return
	}
	w.streak++
	w.inputFails++
	// A stalled worker may have judged this failure up to Stall before it
	// was logged, while its probe was still out; it owes no probe then.
	if w.streak >= pol.BreakerThreshold && !p.probeUnanswered(w, e.At.Add(-p.run.Stall)) && w.circuit != machine.Open && w.probeOwed < 0 {
		w.probeOwed = e.Step
	}
	if r.State == machine.Retry && w.circuit == machine.Open {
		p.fail(Parking, r.ID, e.Step, "attempt %d failed while the circuit was open, and the event was persisted as retry, not parked", r.Attempts)
	}
	if r.State != machine.Retry && r.State != machine.Parked {
		return // dead: exhausted or expired, judged by dead-deserved
	}
	var hint time.Duration
	if replied && p.actedOn(reply, e) && reply.failed {
		hint = reply.retryAfter // the reply this landing acted on
	}
	v.failedAt = e.At
	p.expectRetry(e, at, w)
	lo, hi := retryBounds(*pol, r.Attempts, hint)
	if d := r.NextAt.Sub(e.At); d < lo-p.run.Skew || d > hi+p.run.Skew {
		p.fail(RetryTiming, r.ID, e.Step, "attempt %d failed and the next is due %v later; the policy allows %v to %v (Retry-After %v)", r.Attempts, d, lo, hi, hint)
	}
}

// actedOn reports whether landing e is the worker's act on reply: the
// worker persists what a reply decided in the same call, so the landing
// is logged at the reply's instant, or later by what a slow store call
// held the call before the store wrote (at most Stall, which counts a
// slow call's longest; swarm seed 997998225988: a Save 441ms slow before
// it wrote, whose Retry-After was then judged as absent).
func (p *policy) actedOn(r reply, e *Entry) bool {
	return !r.at.After(e.At) && e.At.Sub(r.at) <= p.run.Stall
}

// inputLandedFirst corrects the failure streak when a step's reply
// landed as a success after failures of the same step were judged. The
// machine applies a step's input before the timeouts that its clock
// reading made due (machine.Step), but the step's records are persisted,
// and so logged, in Seq order. A step has both only when its worker was
// stalled or paused past an attempt's timeout with the reply in hand.
// So the failures judged since the reply came after this success: they
// alone make the streak, and a probe they owed only by counting the
// streak before the success was never owed.
func (p *policy) inputLandedFirst(w *workerState) {
	w.streak = w.inputFails
	if w.inputOwed < 0 && w.probeOwed >= 0 && w.streak < p.run.Policy.BreakerThreshold {
		w.probeOwed = -1
	}
}

// retryBounds is the least and greatest delay the policy allows after
// failed attempt n, given the receiver's Retry-After hint.
func retryBounds(p machine.Config, n int, hint time.Duration) (lo, hi time.Duration) {
	d := p.BaseBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d = min(2*d, p.MaxBackoff)
	}
	d = min(d, p.MaxBackoff)
	span := time.Duration(uint64(d) / 100 * uint64(p.JitterPercent))
	lo, hi = d-span, d
	if p.MaxRetryAfter > 0 && hint > 0 {
		ra := min(hint, p.MaxRetryAfter)
		lo, hi = max(lo, ra), max(hi, ra)
	}
	return lo, hi
}

func (p *policy) probeUnanswered(w *workerState, at time.Time) bool {
	return w.probeOut && at.Before(w.probeAt.Add(p.run.Policy.ProbeTimeout))
}

func (p *policy) sent(e *Entry, at ref) {
	if e.Token < p.newest {
		return // a fenced-off owner's late send: judged by bounded-sends
	}
	w := p.worker(at.wk)
	switch {
	case w.probeNext:
		p.fail(Recovery, e.ID, e.Step, "attempt %d sent by a worker recovered with its circuit %s, before any probe", e.Attempt, w.circuit)
		w.probeNext = false
	case w.probeOwed >= 0:
		p.fail(Breaker, e.ID, e.Step, "attempt %d sent after %d consecutive failures (BreakerThreshold %d, the last at step %d); a probe was due first",
			e.Attempt, w.streak, p.run.Policy.BreakerThreshold, w.probeOwed)
		w.probeOwed = -1
	case p.probeUnanswered(w, e.At):
		p.fail(Breaker, e.ID, e.Step, "attempt %d sent while a probe sent at %v was unanswered", e.Attempt, w.probeAt.Format(time.RFC3339Nano))
	}
	p.parkingDue(e, w, "send")
}

func (p *policy) probed(e *Entry, at ref) {
	w := p.worker(at.wk)
	w.probeOut, w.probeAt = true, e.At
	w.probeOwed = -1
	w.probeNext = false
	p.parkingDue(e, w, "probe")
}

// parkingDue reports a waiting record that w should have parked before
// this send or probe (the first by sequence), once per opening.
func (p *policy) parkingDue(e *Entry, w *workerState, what string) {
	if w.owed == 0 {
		return
	}
	first := -1 // the owing event first by sequence
	for _, i := range w.known {
		if w.ev[i].parkOwed && (first < 0 || p.events[i].first.seq < p.events[first].first.seq) {
			first = i
		}
	}
	p.fail(Parking, p.ids.list[first], e.Step, "still %s when %s sent a %s with its circuit open (since step %d; %d records not parked)",
		p.events[first].rec.State, nameOf(w.name), what, w.ev[first].owedAt, w.owed)
	w.settleAll()
}

func nameOf(worker string) string {
	if worker == "" {
		return "the sender"
	}
	return worker
}

func (p *policy) circuit(e *Entry, at ref) {
	w := p.worker(at.wk)
	from := w.circuit
	w.circuit, w.circuitAt = e.Circuit, e.At
	if w.recovered {
		w.recovered = false
		p.recoveredCircuit(e, w)
		return
	}
	switch {
	case from == machine.Checking && e.Circuit == machine.Closed:
		w.streak = 0
	case from == machine.Open && e.Circuit == machine.Closed:
		w.streak = p.run.Policy.BreakerThreshold - 1 // half-open
	case from == machine.Checking && e.Circuit == machine.Open:
		for _, i := range w.known {
			if v := &p.events[i]; v.persisted && !w.ev[i].flying && !v.rec.State.Terminal() && v.rec.State != machine.Parked {
				w.owe(i, e.Step)
			}
		}
	}
	if e.Circuit != machine.Open {
		w.settleAll()
	}
}

// recoveredCircuit judges the circuit a rebuilt machine starts with,
// against the records it was rebuilt from.
func (p *policy) recoveredCircuit(e *Entry, w *workerState) {
	pol := &p.run.Policy
	var parked, troubled string
	now := e.At.Add(p.run.Skew) // the worker's clock, at most
	for _, i := range w.known {
		id, r := p.ids.list[i], p.events[i].rec
		if r.State.Terminal() || r.Attempts >= pol.MaxAttempts || !now.Before(r.AcceptedAt.Add(pol.MaxAge)) {
			continue // dies at once: says nothing about the channel
		}
		if r.State == machine.Parked && (parked == "" || id < parked) {
			parked = id
		}
		if r.Attempts > 0 && (troubled == "" || id < troubled) {
			troubled = id
		}
	}
	switch {
	case parked != "" && e.Circuit != machine.Open:
		p.fail(Recovery, parked, e.Step, "%s rebuilt from a store holding this parked record and started %s, not open", nameOf(w.name), e.Circuit)
	case troubled != "" && e.Circuit == machine.Closed:
		p.fail(Recovery, troubled, e.Step, "%s rebuilt from a store holding this record with an attempt behind it and started closed", nameOf(w.name))
	}
	w.probeNext = e.Circuit != machine.Closed
}

package invariants

import (
	"cmp"
	"fmt"
	"slices"
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
var PolicyNames = []string{RetryTiming, Breaker, Parking, Recovery, Age, Leases, Producers}

// policy judges the policy rules as the log goes by.
type policy struct {
	run     Run
	fail    func(inv, id string, step int, format string, args ...any)
	events  map[string]*policyEvent
	slab    []policyEvent // where events live: one allocation for many (never grown in place)
	workers map[string]*workerState
	live    int     // events whose latest record is not terminal
	due     dueHeap // retries of the single sender, by NextAt
	leases
	producers
}

type policyEvent struct {
	first    identity
	rec      machine.Record
	writer   writer    // worker and incarnation that persisted rec
	failedAt time.Time // when its latest attempt was persisted as failed
}

type flight struct {
	attempt int
	at      time.Time
}

// workerState is what one worker's machine must be doing, as far as the
// log shows: its circuit, its failure streak, its probe, what it owes.
type workerState struct {
	name      string
	inc       int
	circuit   machine.Circuit
	circuitAt time.Time         // when the circuit last changed
	flying    map[string]flight // attempts of this incarnation not yet landed
	replies   map[string]*Entry // the latest reply per in-flight event (into Run.Entries)
	known     map[string]bool   // events its machine holds
	streak    int               // consecutive retryable failures
	probeOut  bool              // a probe is unanswered
	probeAt   time.Time         // when the unanswered probe was sent
	probeOwed int               // step of the failure that owes a probe; -1 if none
	probeNext bool              // recovered: the next thing sent must be a probe
	recovered bool              // Restarted: the next circuit is the recovered one
	parkOwed  map[string]int    // waiting records not yet persisted parked, with the step that owes it
}

// reset readies p for run, keeping the room its maps and slabs have. A
// worker it knew is kept, as fresh as worker would make it.
func (p *policy) reset(run Run) {
	p.run = run
	if p.events == nil {
		p.events = make(map[string]*policyEvent, len(run.Final))
		p.workers = map[string]*workerState{}
		p.leases = leases{tokens: map[uint64]lease{}, held: map[string]uint64{}}
		p.producers = producers{acked: map[string]uint64{}, pending: map[string]int{}}
	} else {
		clear(p.events)
		for _, w := range p.workers {
			w.reset(w.name, 1)
		}
		clear(p.tokens)
		clear(p.held)
		p.newest = 0
		clear(p.acked)
		clear(p.pending)
	}
	p.slab = p.slab[:0] // events are appended whole: nothing of the last run shows
	p.live = 0
	p.due = p.due[:0]
}

func (p *policy) worker(name string) *workerState {
	w := p.workers[name]
	if w == nil {
		w = &workerState{flying: map[string]flight{}, replies: map[string]*Entry{}, known: map[string]bool{}, parkOwed: map[string]int{}}
		w.reset(name, 1)
		p.workers[name] = w
	}
	return w
}

// reset makes w incarnation inc of worker name, owing nothing: its maps
// are emptied, their room kept.
func (w *workerState) reset(name string, inc int) {
	clear(w.flying)
	clear(w.replies)
	clear(w.known)
	clear(w.parkOwed)
	*w = workerState{name: name, inc: inc, flying: w.flying, replies: w.replies,
		known: w.known, parkOwed: w.parkOwed, probeOwed: -1}
}

// writer names a worker's incarnation. It is compared on every persisted
// entry and printed only in a violation, so it is kept unformatted.
type writer struct {
	name string
	inc  int
}

func (w writer) String() string { return fmt.Sprintf("%s#%d", w.name, w.inc) }

func (w *workerState) writer() writer { return writer{w.name, w.inc} }

// entry judges one observation. It runs before the safety checker sees it.
func (p *policy) entry(e *Entry) {
	p.retriesDue(e.At, e.Step)
	switch e.Kind {
	case Persisted:
		p.persisted(e)
	case Sent:
		p.sent(e)
	case Probed:
		p.probed(e)
	case ProbeReplied:
		p.worker(e.Worker).probeOut = false
	case Replied:
		w := p.worker(e.Worker)
		if f, ok := w.flying[e.ID]; ok && f.attempt == e.Attempt {
			w.replies[e.ID] = e
		}
	case CircuitChanged:
		p.circuit(e)
	case Restarted:
		w := p.worker(e.Worker)
		w.reset(w.name, w.inc+1) // a fresh machine owes nothing
		w.recovered = true
		for id, v := range p.events {
			if !v.rec.State.Terminal() {
				w.known[id] = true
			}
		}
		clear(p.pending) // a crash may cut an acknowledgement
	case Adopted:
		w := p.worker(e.Worker)
		w.known[e.ID] = true
		if w.circuit == machine.Open {
			w.parkOwed[e.ID] = e.Step
		}
	case LeaseGranted, LeaseRenewed:
		p.lease(e)
	case Offered, Acked, Refused:
		p.producer(e)
	}
}

func (p *policy) persisted(e *Entry) {
	r := e.Record
	v := p.events[r.ID]
	if v == nil {
		// A new event: its previous version is the zero record (an event
		// accepted and sent in one batch is first persisted with attempt 1).
		if len(p.slab) == cap(p.slab) {
			p.slab = make([]policyEvent, 0, slabSize(len(p.run.Final), len(p.events)))
		}
		p.slab = append(p.slab, policyEvent{first: identityOf(&r), rec: machine.Record{NextAt: r.AcceptedAt}})
		v = &p.slab[len(p.slab)-1]
		p.events[r.ID] = v
	} else {
		p.duplicateChanged(e, v)
	}
	if e.Worker != "store" {
		p.leaseValid(e)
		w := p.worker(e.Worker)
		w.known[r.ID] = true
		switch f, ok := w.flying[r.ID]; {
		case r.Attempts > v.rec.Attempts:
			p.started(e, w, v)
		case ok && f.attempt == r.Attempts:
			p.landed(e, w, v)
		}
		if w.circuit == machine.Open {
			_, flying := w.flying[r.ID]
			if r.State == machine.Parked || r.State.Terminal() || flying {
				delete(w.parkOwed, r.ID)
			} else if _, owed := w.parkOwed[r.ID]; !owed {
				w.parkOwed[r.ID] = e.Step
			}
		}
		v.writer = w.writer()
	}
	if v.rec.ID != "" && !v.rec.State.Terminal() {
		p.live--
	}
	if !r.State.Terminal() {
		p.live++
	}
	v.rec = r
}

// started judges attempt r.Attempts as it is persisted, before its send.
func (p *policy) started(e *Entry, w *workerState, v *policyEvent) {
	r, prev, pol := e.Record, v.rec, p.run.Policy
	if deadline := v.first.acceptedAt.Add(pol.MaxAge + p.run.Skew); !e.At.Before(deadline) {
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
	w.flying[r.ID] = flight{attempt: r.Attempts, at: e.At}
	delete(w.replies, r.ID)
}

// landed judges the persisted outcome of the attempt w had in flight.
func (p *policy) landed(e *Entry, w *workerState, v *policyEvent) {
	r, pol := e.Record, p.run.Policy
	reply, replied := w.replies[r.ID]
	delete(w.flying, r.ID)
	delete(w.replies, r.ID)
	if r.State == machine.Delivered || r.Reason == machine.Rejected {
		w.streak = 0 // the channel answered
		return
	}
	w.streak++
	if w.streak >= pol.BreakerThreshold && !p.probeUnanswered(w, e.At) && w.circuit != machine.Open && w.probeOwed < 0 {
		w.probeOwed = e.Step
	}
	if r.State == machine.Retry && w.circuit == machine.Open {
		p.fail(Parking, r.ID, e.Step, "attempt %d failed while the circuit was open, and the event was persisted as retry, not parked", r.Attempts)
	}
	if r.State != machine.Retry && r.State != machine.Parked {
		return // dead: exhausted or expired, judged by dead-deserved
	}
	var hint time.Duration
	if replied && reply.At.Equal(e.At) && reply.Detail == machine.OutcomeFailed.String() {
		hint = reply.RetryAfter // the reply this landing acted on
	}
	v.failedAt = e.At
	p.expectRetry(e, w)
	lo, hi := retryBounds(pol, r.Attempts, hint)
	if d := r.NextAt.Sub(e.At); d < lo-p.run.Skew || d > hi+p.run.Skew {
		p.fail(RetryTiming, r.ID, e.Step, "attempt %d failed and the next is due %v later; the policy allows %v to %v (Retry-After %v)", r.Attempts, d, lo, hi, hint)
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

func (p *policy) sent(e *Entry) {
	if e.Token < p.newest {
		return // a fenced-off owner's late send: judged by bounded-sends
	}
	w := p.worker(e.Worker)
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

func (p *policy) probed(e *Entry) {
	w := p.worker(e.Worker)
	w.probeOut, w.probeAt = true, e.At
	w.probeOwed = -1
	w.probeNext = false
	p.parkingDue(e, w, "probe")
}

// parkingDue reports a waiting record that w should have parked before
// this send or probe (the first by sequence), once per opening.
func (p *policy) parkingDue(e *Entry, w *workerState, what string) {
	if len(w.parkOwed) == 0 {
		return
	}
	ids := make([]string, 0, len(w.parkOwed))
	for id := range w.parkOwed {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(p.events[a].first.seq, p.events[b].first.seq) })
	id := ids[0]
	p.fail(Parking, id, e.Step, "still %s when %s sent a %s with its circuit open (since step %d; %d records not parked)",
		p.events[id].rec.State, nameOf(w.name), what, w.parkOwed[id], len(ids))
	clear(w.parkOwed)
}

func nameOf(worker string) string {
	if worker == "" {
		return "the sender"
	}
	return worker
}

func (p *policy) circuit(e *Entry) {
	w := p.worker(e.Worker)
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
		for id := range w.known {
			v := p.events[id]
			if _, flying := w.flying[id]; v != nil && !flying && !v.rec.State.Terminal() && v.rec.State != machine.Parked {
				w.parkOwed[id] = e.Step
			}
		}
	}
	if e.Circuit != machine.Open {
		clear(w.parkOwed)
	}
}

// recoveredCircuit judges the circuit a rebuilt machine starts with,
// against the records it was rebuilt from.
func (p *policy) recoveredCircuit(e *Entry, w *workerState) {
	pol := p.run.Policy
	var parked, troubled string
	for id := range w.known {
		r := p.events[id].rec
		if r.State.Terminal() || r.Attempts >= pol.MaxAttempts || !e.At.Add(p.run.Skew).Before(r.AcceptedAt.Add(pol.MaxAge)) {
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

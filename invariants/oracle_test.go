// The checker as it was before its per-event state was indexed by number
// (commit 7569518), kept whole and renamed: the plain computation that
// TestCheckerMatchesMapOracle compares the checker with, on random logs.
// Do not change it to follow the checker: it is what the checker must match.

package invariants

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/machine"
)

type oldEventView struct {
	seq       uint64
	acked     bool
	ackStep   int
	persisted bool
	pos       int            // position in acceptance order (checker.order)
	first     identity       // as first persisted
	rec       machine.Record // latest persisted
	refused   bool           // the channel refused an attempt of it
	rewritten bool           // its identity changed (reported once)
	doneAt    time.Time      // when it was first persisted terminal
	sends     int
	sentLow   uint64       // attempt numbers 0 to 63 sent, one bit each
	attempts  map[int]bool // attempt numbers sent beyond those (rare)
	applied   int
	everDead  bool
	deadAs    machine.DeadReason // the reason it was first persisted dead with
}

// slabSize is the room of a new slab of per-event state, given the store's
// final records (nearly every event of the stream, but only that stream's)
// and the events already held: the first slab fits the final records, a
// later one (a broken run, with events the store lost) as many again.
func oldSlabSize(final, held int) int { return max(8, final, held) }

// Checker judges runs one after another, as Check does, reusing its maps
// and slabs from one run to the next: a simulator that judges each of a
// run's streams, or many runs, allocates them once. The zero Checker is
// ready to use. It is not safe for concurrent use.
type oracleChecker struct {
	c oldChecker
	p oldPolicy
}

// Check judges run as the package's Check does. The result is the
// caller's: the Checker keeps nothing of it.
func (k *oracleChecker) Check(run Run) []Violation {
	c, p := &k.c, &k.p
	c.reset(run)
	p.reset(run)
	if p.fail == nil {
		p.fail = c.fail
	}
	// By index: an Entry is a few hundred bytes, too many to copy per step.
	for i := range run.Entries {
		e := &run.Entries[i]
		p.entry(e)
		c.entry(e)
	}
	p.final()
	c.final()
	out := c.out
	c.out = nil
	return out
}

// reset readies c for run, keeping the room its maps and slabs have.
func (c *oldChecker) reset(run Run) {
	c.run = run
	if c.events == nil {
		// The store's final records are nearly every event: size for them.
		c.events = make(map[string]*oldEventView, len(run.Final))
		c.circuit = map[string]machine.Circuit{}
		c.flying = map[string]map[oldAttemptKey]time.Time{}
	} else {
		clear(c.events)
		clear(c.circuit)
		for _, fl := range c.flying { // emptied, kept for the next run's workers of the same name
			clear(fl)
		}
	}
	c.slab = c.slab[:0] // views are appended whole: nothing of the last run shows
	c.order = c.order[:0]
	c.strict.reset()
	c.newest, c.applied, c.out = 0, 0, nil
}

type oldChecker struct {
	run     Run
	events  map[string]*oldEventView
	slab    []oldEventView             // where views live: one allocation for many (never grown in place)
	order   []string                   // IDs in order of first persistence (acceptance order)
	strict  strictOrder                // the same order, indexed for the order check
	circuit map[string]machine.Circuit // per worker
	// flying holds, per worker, the attempts started (persisted) and not
	// yet answered, with their start: an attempt ends at its reply or, at
	// the latest, AttemptTimeout after it started.
	flying  map[string]map[oldAttemptKey]time.Time
	newest  uint64 // the newest fencing token granted
	applied uint64 // highest seq applied (strict)
	out     []Violation
	// finalByID indexes Run.Final for final, kept for the next run.
	finalByID map[string]*machine.Record
}

func (c *oldChecker) fail(inv, id string, step int, format string, args ...any) {
	c.out = append(c.out, Violation{Invariant: inv, ID: id, Step: step, Detail: fmt.Sprintf(format, args...)})
}

func (c *oldChecker) view(id string) *oldEventView {
	v := c.events[id]
	if v == nil {
		if len(c.slab) == cap(c.slab) {
			c.slab = make([]oldEventView, 0, oldSlabSize(len(c.run.Final), len(c.events)))
		}
		c.slab = append(c.slab, oldEventView{})
		v = &c.slab[len(c.slab)-1]
		c.events[id] = v
	}
	return v
}

func (c *oldChecker) entry(e *Entry) {
	switch e.Kind {
	case Acked:
		v := c.view(e.ID)
		if !v.persisted {
			c.fail(NothingLost, e.ID, e.Step, "acknowledged before it was persisted")
		}
		if v.seq != 0 && v.seq != e.Seq {
			c.fail(AppliedOnce, e.ID, e.Step, "acknowledged as seq %d, but it is seq %d: a known ID made a new event", e.Seq, v.seq)
		}
		if !v.acked {
			v.acked, v.ackStep = true, e.Step
		}
	case Persisted:
		c.persisted(e)
	case Sent:
		c.sent(e)
	case Applied:
		v := c.view(e.ID)
		v.applied++
		if v.applied > 1 {
			c.fail(AppliedOnce, e.ID, e.Step, "applied %d times", v.applied)
		}
		if !v.persisted {
			c.fail(AppliedOnce, e.ID, e.Step, "applied, but never accepted")
			return
		}
		if c.run.Policy.Ordering == machine.Strict && c.run.ReceiverFences {
			if v.seq <= c.applied {
				c.fail(Order, e.ID, e.Step, "applied seq %d after seq %d", v.seq, c.applied)
			}
			c.applied = max(c.applied, v.seq)
		}
	case CircuitChanged:
		c.circuit[e.Worker] = e.Circuit
	case Restarted:
		c.circuit[e.Worker] = 0
		clear(c.flying[e.Worker]) // the new machine owes nothing to the old one's attempts; the map is kept
	case LeaseGranted:
		c.newest = max(c.newest, e.Token)
	case Replied:
		if e.Detail == machine.OutcomeRefused.String() {
			c.view(e.ID).refused = true
		}
		delete(c.flying[e.Worker], oldAttemptKey{e.ID, e.Attempt})
	case WriteRejected:
		c.fail(Monotonic, e.ID, e.Step, "the store refused a write by %s (token %d): %s", e.Worker, e.Token, e.Detail)
	case Probed, Discarded:
	}
}

func (c *oldChecker) persisted(e *Entry) {
	r := e.Record
	v := c.view(r.ID)
	if !v.persisted {
		v.persisted = true
		v.seq = r.Seq
		v.first = identityOf(&r)
		c.order = append(c.order, r.ID)
		v.pos = c.strict.add(r.Seq)
	} else {
		prev := v.rec
		if prev.Seq != r.Seq {
			c.fail(AppliedOnce, r.ID, e.Step, "persisted as seq %d, but it is seq %d", r.Seq, prev.Seq)
		}
		if !v.rewritten && (!r.AcceptedAt.Equal(v.first.acceptedAt) || !bytes.Equal(r.Payload, v.first.payload)) {
			v.rewritten = true // reported once
			c.fail(Monotonic, r.ID, e.Step, "its acceptance time or payload changed after it was accepted")
		}
		if prev.State.Terminal() && (prev.State != r.State || prev.Reason != r.Reason) {
			inv := Monotonic
			if prev.State == machine.Dead {
				inv = DeadKept
			}
			c.fail(inv, r.ID, e.Step, "terminal state %s changed to %s", describe(prev), describe(r))
		}
		if r.Attempts < prev.Attempts {
			c.fail(Monotonic, r.ID, e.Step, "attempts went from %d down to %d", prev.Attempts, r.Attempts)
		}
		switch {
		case r.Attempts > prev.Attempts && (r.State == machine.Pending || r.State == machine.Retry):
			c.started(e) // a new attempt goes out from pending or retry
		case r.Attempts == prev.Attempts && r.State != prev.State:
			// The attempt landed: failed into retry or parked, delivered,
			// dead. (A reply, when there is one, already said so.)
			delete(c.flying[e.Worker], oldAttemptKey{r.ID, r.Attempts})
		}
	}
	if r.State.Terminal() && v.doneAt.IsZero() {
		v.doneAt = e.At
	}
	if r.State == machine.Dead && !v.everDead {
		v.everDead, v.deadAs = true, r.Reason
		c.deserved(e, v)
	}
	v.rec = r
	c.strict.set(v.pos, r.State.Terminal())
}

type oldAttemptKey struct {
	id      string
	attempt int
}

// started checks the window when Worker starts attempt Record.Attempts (a
// persisted attempt count that grew): at most one attempt in flight in
// strict order, at most Window in independent order. An attempt stops
// counting at its reply or AttemptTimeout after its start, when the
// machine gives up waiting for it (less Run.Stall: a stalled worker
// stamps the start early).
func (c *oldChecker) started(e *Entry) {
	p := c.run.Policy
	window := p.Window
	if p.Ordering == machine.Strict {
		window = 1
	}
	fl := c.flying[e.Worker]
	if fl == nil {
		fl = map[oldAttemptKey]time.Time{}
		c.flying[e.Worker] = fl
	}
	for k, at := range fl { // order does not matter: only the count is used
		if !e.At.Before(at.Add(p.AttemptTimeout - c.run.Stall)) {
			delete(fl, k)
		}
	}
	if len(fl) >= window {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d started with %d attempts in flight; the window is %d", e.Record.Attempts, len(fl), window)
	}
	fl[oldAttemptKey{e.ID, e.Record.Attempts}] = e.At
}

// deserved checks the reason an event was first persisted dead.
func (c *oldChecker) deserved(e *Entry, v *oldEventView) {
	p, r := c.run.Policy, e.Record
	switch r.Reason {
	case machine.Exhausted:
		if r.Attempts < p.MaxAttempts {
			c.fail(DeadDeserved, r.ID, e.Step, "dead (exhausted) after %d attempts; MaxAttempts is %d", r.Attempts, p.MaxAttempts)
		}
	case machine.Expired:
		// Dead at MaxAge, or when the next attempt would come after it.
		earliest := v.first.acceptedAt.Add(p.MaxAge - max(p.MaxBackoff, p.MaxRetryAfter) - c.run.Slack)
		if e.At.Before(earliest) {
			c.fail(DeadDeserved, r.ID, e.Step, "dead (expired) %v after acceptance; MaxAge is %v", e.At.Sub(v.first.acceptedAt), p.MaxAge)
		}
	case machine.Rejected:
		if !v.refused && len(r.Payload) <= p.MaxPayloadBytes {
			c.fail(DeadDeserved, r.ID, e.Step, "dead (rejected), but the channel never refused it")
		}
	}
}

func (c *oldChecker) sent(e *Entry) {
	v := c.view(e.ID)
	p := c.run.Policy
	v.sends++
	switch {
	case !v.persisted:
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent, but the event was never persisted", e.Attempt)
		return
	case v.sends > p.MaxAttempts:
		c.fail(BoundedSends, e.ID, e.Step, "sent %d times; MaxAttempts is %d", v.sends, p.MaxAttempts)
	}
	if v.sentBefore(e.Attempt) {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent twice: an attempt number was reused", e.Attempt)
	}
	if v.rec.Attempts < e.Attempt {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent before it was persisted (store has %d)", e.Attempt, v.rec.Attempts)
	}
	// Only a fenced-off owner (a newer lease exists) may still send, late,
	// an attempt it persisted before it lost the stream.
	zombie := e.Token < c.newest
	if v.rec.State.Terminal() && !zombie {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent after the event was %s", e.Attempt, v.rec.State)
	}
	if cs := c.circuit[e.Worker]; cs == machine.Open || cs == machine.Checking {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent while the circuit was %s", e.Attempt, cs)
	}
	if v.rec.State == machine.Parked && !zombie {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent while the event was parked", e.Attempt)
	}
	if p.Ordering == machine.Strict {
		if pos, blocked := c.strict.blocker(v.seq); blocked {
			id := c.order[pos]
			w := c.events[id]
			c.fail(Order, e.ID, e.Step, "seq %d sent while earlier seq %d (%s) was %s", v.seq, w.seq, id, w.rec.State)
		}
	}
}

// sentBefore records attempt n as sent and reports whether it was sent
// before. Attempt numbers are small: a bit each, a map only beyond 63.
func (v *oldEventView) sentBefore(n int) bool {
	if n >= 0 && n < 64 {
		bit := uint64(1) << n
		seen := v.sentLow&bit != 0
		v.sentLow |= bit
		return seen
	}
	if v.attempts == nil {
		v.attempts = map[int]bool{}
	}
	seen := v.attempts[n]
	v.attempts[n] = true
	return seen
}

func (c *oldChecker) final() {
	if c.finalByID == nil {
		c.finalByID = make(map[string]*machine.Record, len(c.run.Final))
	}
	final := c.finalByID
	clear(final)
	var end time.Time
	for i := range c.run.Final {
		final[c.run.Final[i].ID] = &c.run.Final[i]
	}
	if n := len(c.run.Entries); n > 0 {
		end = c.run.Entries[n-1].At
	}
	for _, id := range c.order {
		v := c.events[id]
		rp, ok := final[id]
		var r machine.Record
		if ok {
			r = *rp
		}
		switch {
		case !ok && v.everDead:
			c.fail(DeadKept, id, -1, "was dead (%s), and the store no longer has it", v.deadAs)
			continue
		case !ok:
			c.fail(NothingLost, id, -1, "accepted (seq %d) but missing from the store", v.seq)
			continue
		case v.everDead && (r.State != machine.Dead || r.Reason != v.deadAs):
			c.fail(DeadKept, id, -1, "was dead (%s), store now has %s", v.deadAs, describe(r))
		case r.State == machine.Delivered && v.applied == 0:
			c.fail(NothingLost, id, -1, "delivered in the store, but the receiver never applied it")
		case !r.State.Terminal() && c.run.Finished:
			c.fail(Liveness, id, -1, "still %s when the run finished", describe(r))
			continue
		}
		c.liveness(id, v, r, end)
	}
}

// liveness checks that the event settled by its deadline.
func (c *oldChecker) liveness(id string, v *oldEventView, r machine.Record, end time.Time) {
	p := c.run.Policy
	accepted := v.first.acceptedAt // the final record's could have been rewritten
	deadline := accepted.Add(p.MaxAge + p.AttemptTimeout + c.run.Slack)
	if c.run.LivenessBound > 0 {
		from := accepted
		if c.run.HealedAt.After(from) {
			from = c.run.HealedAt
		}
		if b := from.Add(c.run.LivenessBound); b.Before(deadline) {
			deadline = b
		}
	}
	settled := v.doneAt
	if settled.IsZero() {
		if end.After(deadline) {
			c.fail(Liveness, id, -1, "not settled by %v after acceptance (run went on to %v)", deadline.Sub(accepted), end.Sub(accepted))
		}
		return
	}
	if settled.After(deadline) {
		c.fail(Liveness, id, -1, "settled %v after acceptance, past its deadline of %v", settled.Sub(accepted), deadline.Sub(accepted))
	}
}

// policy judges the policy rules as the log goes by.
type oldPolicy struct {
	run     Run
	fail    func(inv, id string, step int, format string, args ...any)
	events  map[string]*oldPolicyEvent
	slab    []oldPolicyEvent // where events live: one allocation for many (never grown in place)
	workers map[string]*oldWorkerState
	live    int        // events whose latest record is not terminal
	due     oldDueHeap // retries of the single sender, by NextAt
	oldLeases
	oldProducers
}

type oldPolicyEvent struct {
	first     identity
	rec       machine.Record
	oldWriter oldWriter // worker and incarnation that persisted rec
	failedAt  time.Time // when its latest attempt was persisted as failed
}

type oldFlight struct {
	attempt int
	at      time.Time
}

// workerState is what one worker's machine must be doing, as far as the
// log shows: its circuit, its failure streak, its probe, what it owes.
type oldWorkerState struct {
	name      string
	inc       int
	circuit   machine.Circuit
	circuitAt time.Time            // when the circuit last changed
	flying    map[string]oldFlight // attempts of this incarnation not yet landed
	replies   map[string]*Entry    // the latest reply per in-flight event (into Run.Entries)
	known     map[string]bool      // events its machine holds
	streak    int                  // consecutive retryable failures
	probeOut  bool                 // a probe is unanswered
	probeAt   time.Time            // when the unanswered probe was sent
	probeOwed int                  // step of the failure that owes a probe; -1 if none
	probeNext bool                 // recovered: the next thing sent must be a probe
	recovered bool                 // Restarted: the next circuit is the recovered one
	parkOwed  map[string]int       // waiting records not yet persisted parked, with the step that owes it
}

// reset readies p for run, keeping the room its maps and slabs have. A
// worker it knew is kept, as fresh as worker would make it.
func (p *oldPolicy) reset(run Run) {
	p.run = run
	if p.events == nil {
		p.events = make(map[string]*oldPolicyEvent, len(run.Final))
		p.workers = map[string]*oldWorkerState{}
		p.oldLeases = oldLeases{tokens: map[uint64]oldLease{}, held: map[string]uint64{}}
		p.oldProducers = oldProducers{acked: map[string]uint64{}, pending: map[string]int{}}
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

func (p *oldPolicy) worker(name string) *oldWorkerState {
	w := p.workers[name]
	if w == nil {
		w = &oldWorkerState{flying: map[string]oldFlight{}, replies: map[string]*Entry{}, known: map[string]bool{}, parkOwed: map[string]int{}}
		w.reset(name, 1)
		p.workers[name] = w
	}
	return w
}

// reset makes w incarnation inc of worker name, owing nothing: its maps
// are emptied, their room kept.
func (w *oldWorkerState) reset(name string, inc int) {
	clear(w.flying)
	clear(w.replies)
	clear(w.known)
	clear(w.parkOwed)
	*w = oldWorkerState{name: name, inc: inc, flying: w.flying, replies: w.replies,
		known: w.known, parkOwed: w.parkOwed, probeOwed: -1}
}

// writer names a worker's incarnation. It is compared on every persisted
// entry and printed only in a violation, so it is kept unformatted.
type oldWriter struct {
	name string
	inc  int
}

func (w oldWriter) String() string { return fmt.Sprintf("%s#%d", w.name, w.inc) }

func (w *oldWorkerState) oldWriter() oldWriter { return oldWriter{w.name, w.inc} }

// entry judges one observation. It runs before the safety checker sees it.
func (p *oldPolicy) entry(e *Entry) {
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
		p.oldLease(e)
	case Offered, Acked, Refused:
		p.producer(e)
	}
}

func (p *oldPolicy) persisted(e *Entry) {
	r := e.Record
	v := p.events[r.ID]
	if v == nil {
		// A new event: its previous version is the zero record (an event
		// accepted and sent in one batch is first persisted with attempt 1).
		if len(p.slab) == cap(p.slab) {
			p.slab = make([]oldPolicyEvent, 0, oldSlabSize(len(p.run.Final), len(p.events)))
		}
		p.slab = append(p.slab, oldPolicyEvent{first: identityOf(&r), rec: machine.Record{NextAt: r.AcceptedAt}})
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
		v.oldWriter = w.oldWriter()
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
func (p *oldPolicy) started(e *Entry, w *oldWorkerState, v *oldPolicyEvent) {
	r, prev, pol := e.Record, v.rec, p.run.Policy
	if deadline := v.first.acceptedAt.Add(pol.MaxAge + p.run.Skew); !e.At.Before(deadline) {
		p.fail(Age, r.ID, e.Step, "attempt %d started %v after acceptance; MaxAge is %v", r.Attempts, e.At.Sub(v.first.acceptedAt), pol.MaxAge)
	}
	if r.Attempts == prev.Attempts+1 && prev.State != machine.Parked && e.At.Add(p.run.Skew).Before(prev.NextAt) {
		inv := Recovery
		if v.oldWriter == w.oldWriter() {
			inv = RetryTiming
		}
		p.fail(inv, r.ID, e.Step, "attempt %d started %v before the NextAt persisted with attempt %d (by %s)",
			r.Attempts, prev.NextAt.Sub(e.At), prev.Attempts, v.oldWriter)
	}
	w.flying[r.ID] = oldFlight{attempt: r.Attempts, at: e.At}
	delete(w.replies, r.ID)
}

// landed judges the persisted outcome of the attempt w had in flight.
func (p *oldPolicy) landed(e *Entry, w *oldWorkerState, v *oldPolicyEvent) {
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

func (p *oldPolicy) probeUnanswered(w *oldWorkerState, at time.Time) bool {
	return w.probeOut && at.Before(w.probeAt.Add(p.run.Policy.ProbeTimeout))
}

func (p *oldPolicy) sent(e *Entry) {
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

func (p *oldPolicy) probed(e *Entry) {
	w := p.worker(e.Worker)
	w.probeOut, w.probeAt = true, e.At
	w.probeOwed = -1
	w.probeNext = false
	p.parkingDue(e, w, "probe")
}

// parkingDue reports a waiting record that w should have parked before
// this send or probe (the first by sequence), once per opening.
func (p *oldPolicy) parkingDue(e *Entry, w *oldWorkerState, what string) {
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

func (p *oldPolicy) circuit(e *Entry) {
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
func (p *oldPolicy) recoveredCircuit(e *Entry, w *oldWorkerState) {
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

// leases follows the store's grants: the newest token, and each token's
// holder and expiry as the store last reported it.
type oldLeases struct {
	newest uint64
	tokens map[uint64]oldLease
	held   map[string]uint64 // per worker, the token it was last granted
}

type oldLease struct {
	worker string
	until  time.Time
}

func (p *oldPolicy) oldLease(e *Entry) {
	switch e.Kind {
	case LeaseGranted:
		if e.Token <= p.newest {
			p.fail(Leases, "", e.Step, "lease token %d granted to %s after token %d: fencing tokens must grow", e.Token, e.Worker, p.newest)
		}
		p.newest = max(p.newest, e.Token)
		p.tokens[e.Token] = oldLease{worker: e.Worker, until: e.Until}
		p.held[e.Worker] = e.Token
	case LeaseRenewed:
		if held := p.held[e.Worker]; e.Token != held {
			p.fail(Leases, "", e.Step, "%s renewed lease token %d and got token %d: a renewal keeps the token", e.Worker, held, e.Token)
		}
		l, ok := p.tokens[e.Token]
		if ok && e.Until.Before(l.until) {
			p.fail(Leases, "", e.Step, "%s's renewal moved the expiry of token %d %v earlier", e.Worker, e.Token, l.until.Sub(e.Until))
		}
		p.tokens[e.Token] = oldLease{worker: e.Worker, until: e.Until}
	}
}

// leaseValid judges a worker's write: it was made under the newest lease,
// before that lease expired. Writes without leases (a single sender) are
// not judged.
func (p *oldPolicy) leaseValid(e *Entry) {
	if e.Token == 0 {
		return
	}
	l, ok := p.tokens[e.Token]
	switch {
	case !ok:
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d, which the store never granted", e.Worker, e.Token)
	case e.Token != p.newest:
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d, superseded by token %d", e.Worker, e.Token, p.newest)
	case !e.At.Before(l.until):
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d %v after it expired", e.Worker, e.Token, e.At.Sub(l.until))
	}
}

// producers follows the producer's offers of IDs already acknowledged.
type oldProducers struct {
	acked   map[string]uint64 // ID -> the sequence it was acknowledged as
	pending map[string]int    // re-offers of acknowledged IDs not yet answered, by step
}

func (p *oldPolicy) producer(e *Entry) {
	switch e.Kind {
	case Offered:
		if _, ok := p.acked[e.ID]; ok {
			if _, waiting := p.pending[e.ID]; !waiting {
				p.pending[e.ID] = e.Step
			}
		}
	case Acked:
		if seq, ok := p.acked[e.ID]; ok && seq != e.Seq {
			p.fail(Producers, e.ID, e.Step, "acknowledged again as seq %d; it was acknowledged as seq %d", e.Seq, seq)
		} else if !ok {
			p.acked[e.ID] = e.Seq
		}
		delete(p.pending, e.ID)
	case Refused:
		if _, waiting := p.pending[e.ID]; waiting && e.Detail == "queue full" {
			p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID was refused (%s); it must be acknowledged again", e.Detail)
		}
		delete(p.pending, e.ID) // a store outage may refuse anything
	}
}

// duplicateChanged judges a record persisted while a re-offer of its ID
// is being answered: the offer may change nothing of its identity.
func (p *oldPolicy) duplicateChanged(e *Entry, v *oldPolicyEvent) {
	if _, waiting := p.pending[e.ID]; !waiting {
		return
	}
	r := e.Record
	if r.Seq != v.first.seq || !r.AcceptedAt.Equal(v.first.acceptedAt) || !bytes.Equal(r.Payload, v.first.payload) {
		p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID changed its record (seq, acceptance time or payload)")
	}
}

// final reports re-offers that were never answered.
func (p *oldPolicy) final() {
	ids := make([]string, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(p.pending[a], p.pending[b]) })
	for _, id := range ids {
		p.fail(Producers, id, p.pending[id], "a re-offer of an acknowledged ID was never acknowledged")
	}
}

// The late half of retry-timing: a retry is not only scheduled within the
// policy's greatest delay (judged on the NextAt persisted with the
// failure), it also goes out at that NextAt when nothing holds it back.
// Judged for the single sender only (Entry.Worker ""), whose clock is the
// log's and whose timers fire on time; a worker of a cluster may stall or
// lose its lease, which no log entry excuses in advance.
//
// Nothing holds a retry back when, at its NextAt, the same machine still
// runs, its circuit has been closed since before that instant, and the
// window cannot be full: every non-terminal event fits in it at once (in
// strict order, the retry is the only non-terminal event). The check runs
// once the log has moved past NextAt, so that everything that happened at
// that instant counts.

type oldDueRetry struct {
	at      time.Time
	id      string
	attempt int // the attempt that failed; the retry is attempt+1
	inc     int
	step    int // where the failure was persisted
}

// dueHeap is a min-heap of retries by NextAt, then by step. Its push and
// pop are typed copies of container/heap's (same sift order), so that a
// retry is not boxed in an interface, an allocation each.
type oldDueHeap []oldDueRetry

func (h oldDueHeap) less(i, j int) bool {
	return h[i].at.Before(h[j].at) || h[i].at.Equal(h[j].at) && h[i].step < h[j].step
}

func (h *oldDueHeap) push(d oldDueRetry) {
	*h = append(*h, d)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if i == j || !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *oldDueHeap) pop() oldDueRetry {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && q.less(j2, j1) {
			j = j2 // right child
		}
		if !q.less(j, i) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	d := q[n]
	*h = q[:n]
	return d
}

// expectRetry notes a failure persisted in retry by the single sender.
func (p *oldPolicy) expectRetry(e *Entry, w *oldWorkerState) {
	if e.Worker != "" || e.Record.State != machine.Retry {
		return
	}
	p.due.push(oldDueRetry{at: e.Record.NextAt, id: e.Record.ID, attempt: e.Record.Attempts, inc: w.inc, step: e.Step})
}

// retriesDue judges every retry due before now, as the log reaches now.
func (p *oldPolicy) retriesDue(now time.Time, step int) {
	for len(p.due) > 0 && p.due[0].at.Before(now) {
		d := p.due.pop()
		v, w := p.events[d.id], p.worker("")
		switch {
		case v.rec.State != machine.Retry || v.rec.Attempts != d.attempt || !v.rec.NextAt.Equal(d.at):
			continue // it went out, died, or was parked
		case w.inc != d.inc || w.circuit != machine.Closed || !w.circuitAt.Before(d.at):
			continue // another machine, or the circuit held it
		case p.run.Policy.Ordering == machine.Strict && p.live > 1:
			continue // an earlier event may hold the stream
		case p.live > max(p.run.Policy.Window, 1):
			continue // the window may be full
		}
		p.fail(RetryTiming, d.id, step, "attempt %d was due at its NextAt %v after its failure (step %d), with the circuit closed and room in the window, and had not gone out by %v",
			d.attempt+1, d.at.Sub(p.events[d.id].failedAt), d.step, now.Sub(d.at))
	}
}

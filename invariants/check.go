package invariants

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/machine"
)

// The invariants, by the name a Violation carries.
const (
	// NothingLost: every event the producer was told is accepted was
	// persisted first, stays in the store, and ends applied by the
	// receiver or dead with its reason (or, in a run stopped early, still
	// queued). "delivered" in the store means the receiver applied it.
	NothingLost = "nothing-lost"
	// AppliedOnce: the receiver applied each ID at most once, only IDs
	// that were accepted, and acceptance of a known ID made no new event.
	AppliedOnce = "applied-once"
	// Order: in strict mode the sender starts an attempt of event s only
	// when every earlier event is delivered or dead, and the receiver
	// applies events in increasing acceptance order.
	Order = "order"
	// BoundedSends: no event is sent more than MaxAttempts times across
	// restarts; each attempt is persisted before it is sent and numbered
	// above the last; nothing is sent after the event is terminal; and
	// nothing but probes is sent while the circuit is checking or open.
	BoundedSends = "bounded-sends"
	// DeadKept: a dead event stays in the store, dead, with its reason.
	DeadKept = "dead-kept"
	// Monotonic: a terminal state never changes, an attempt count never
	// decreases, and no owner tries to write a record against its history
	// (which the store refuses, but only an owner that lost track of who
	// owns the stream would try).
	Monotonic = "monotonic"
	// DeadDeserved: an event is dead only for a reason that holds:
	// exhausted after MaxAttempts attempts; expired at MaxAge, or when its
	// next attempt (at most MaxBackoff or MaxRetryAfter away) would fall
	// after it; rejected after the channel refused it, or for a payload
	// over MaxPayloadBytes.
	DeadDeserved = "dead-deserved"
	// ChannelTrue (judged with Run.ReceiverVerdicts): the channel tells
	// the sender what the receiver said, and the receiver hears the
	// sender: an attempt answered refused was refused by the receiver (a
	// delivery of the event Discarded as fenced, or as rejected by its
	// endpoint's status policy), an attempt the receiver answered with a
	// status its endpoint rejects (DiscardRejected) is answered refused,
	// and no delivery fails the receiver's signature check. A channel
	// that takes a retryable answer for a refusal, retries what its
	// endpoint rejects, or signs what the receiver cannot verify, breaks
	// it.
	ChannelTrue = "channel-true"
	// Liveness: every event is delivered or dead by its deadline: MaxAge
	// plus one AttemptTimeout after acceptance, and LivenessBound after
	// the faults healed (or after its acceptance, if later).
	Liveness = "liveness"
	// PauseHeld: while an operator has the stream paused (Paused until
	// Resumed), no worker takes it over and delivers: nothing is sent
	// under a lease granted after the pause and before the resume (less
	// Run.Stall: a worker may read the pause on a stale clock). The owner
	// the pause found asks again at its next renewal: it may start
	// attempts until Run.Recheck (plus Skew and Stall) after the pause, no
	// later, and then only finishes those it has out. The availability half is liveness:
	// Run.Slack counts every pause, so an event that waited on a pause
	// settles by its deadline plus the pause, no later.
	PauseHeld = "pause"
	// LeaseKept: a worker does not give up a lease the store would still
	// honour by more than Run.ClockMargin + 2*Run.Skew (its clock may lag
	// or lead by Skew at the renewal and at the drop; Skew includes
	// stalls): a store outage or a refused renewal shorter than the lease
	// must not cost the stream, since a prompt retry would have kept it.
	// Judged on LeaseDropped, against the expiry the store last told the
	// worker for the token (LeaseGranted, LeaseRenewed; not a renewal whose
	// reply was lost); a token a newer grant or a replay superseded was no
	// longer valid.
	LeaseKept = "lease-kept"
)

// Names lists every invariant, in the order reports show them.
var Names = append([]string{NothingLost, AppliedOnce, Order, BoundedSends, DeadKept, DeadDeserved, Monotonic, ChannelTrue, Liveness, PauseHeld, LeaseKept, OwnerWait,
	FanoutOnce, FanoutOnlySubscribed, DisabledGetsNothing, ReplaySince, ReplayMissing}, PolicyNames...)

// LivenessBound is how long after the faults heal every event must settle,
// derived from the policy: the longest the sender can still be waiting
// (a probe backoff and timeout, an attempt timeout, the longest retry
// delay), then one round trip of at most 2*latency per event (and, with a
// rate limit, a window and each event's share of the limit), then the
// whole budget of each poison (or stubborn) event, which keeps failing
// after the channel heals.
func LivenessBound(p machine.Config, events, poison int, latency time.Duration) time.Duration {
	settle := p.ProbeMaxInterval + p.ProbeTimeout + p.AttemptTimeout + max(p.MaxBackoff, p.MaxRetryAfter)
	perEvent := 2 * latency
	perPoison := time.Duration(p.MaxAttempts) * (max(p.MaxBackoff, p.MaxRetryAfter) + p.AttemptTimeout + p.ProbeTimeout + 2*latency)
	if p.RateLimit > 0 {
		// A rate limit spaces the starts, and a recovery waits a window.
		settle += p.RatePer
		perEvent += p.RatePer/time.Duration(p.RateLimit) + 1
	}
	return settle + time.Duration(events)*perEvent + time.Duration(poison)*perPoison
}

// event is what the checker follows of one event, in one slice indexed by
// its number: what both checkers read (its first identity, its latest
// record), then what each keeps of its own.
type event struct {
	persisted   bool
	first       identity       // as first persisted
	rec         machine.Record // latest persisted; zero before
	eventView                  // the safety checker's
	policyEvent                // the policy checker's
}

// eventView is what the safety checker keeps of one event.
type eventView struct {
	pos     int  // position in acceptance order (checker.order)
	refused bool // the channel refused an attempt of it
	fenced  bool // the receiver refused a delivery of it for good
	// mustRefuse is the attempt the receiver answered with a status its
	// endpoint rejects (DiscardRejected), whose reply must say refused.
	mustRefuse int
	rewritten  bool      // its identity changed (reported once)
	doneAt     time.Time // when it was first persisted terminal
	sends      int
	sent       []int // the attempt numbers sent, in the order sent
	applied    int
	everDead   bool
	startedAt  time.Time          // when its latest attempt's start was persisted
	deadAs     machine.DeadReason // the reason it was first persisted dead with
	settled    bool               // an operator discarded it, a dead letter
	deleted    bool               // retention deleted it (judged when it was)
	// replayToken is the fencing token of the latest replay of it (0:
	// never replayed): a send under an older token belongs to an earlier
	// budget, the late send of an owner the replay fenced off.
	replayToken uint64
}

// identity is what of a record may never change once it is accepted.
type identity struct {
	seq        uint64
	acceptedAt time.Time
	payload    []byte
}

func identityOf(r *machine.Record) identity {
	return identity{seq: r.Seq, acceptedAt: r.AcceptedAt, payload: r.Payload}
}

// Check judges a run and returns every violation found, in step order
// (final-state ones last). No violations means every invariant held.
func Check(run Run) []Violation {
	var k Checker
	return k.Check(run)
}

// Checker judges runs one after another, as Check does, keeping its
// slices and maps from one run to the next (a simulator judges each of a
// run's streams, and many runs, with one). The zero Checker is ready to
// use. It is not safe for concurrent use.
type Checker struct {
	c       checker
	p       policy
	ids     names // the run's event IDs
	workers names // the run's worker names
}

// ref is what an entry is about, by number (see names).
type ref struct {
	ev int // the event: Record.ID on Persisted, ID otherwise; -1 for none
	id int // ID's number: ev's, unless a Persisted entry's ID is not its record's
	wk int // Worker's
}

// Check judges run as the package's Check does. The result is the
// caller's: the Checker keeps nothing of it.
func (k *Checker) Check(run Run) []Violation {
	k.Begin(run)
	for i := range run.Entries {
		k.Observe(&run.Entries[i])
	}
	return k.End(run.Final, run.Finished)
}

// Begin readies k to judge a run as it happens, entry by entry, without
// keeping its log: run gives the policy and the bounds (Begin reads
// neither its Entries nor its Final). Observe then judges each entry in
// log order, and End the store's final content. Check is Begin, Observe
// for every entry, End.
func (k *Checker) Begin(run Run) {
	c, p := &k.c, &k.p
	// When the final records are known (Check), they are nearly every
	// event of the run: room for them at once.
	k.ids.reset(len(run.Final))
	k.workers.reset(0)
	c.reset(run, &k.ids)
	p.reset(run, &k.ids)
	p.events = c.events // one state per event, which both checkers follow
	if p.fail == nil {
		p.fail = c.fail
	}
	p.single = k.worker("")
}

// Observe judges the next entry of the run. It keeps nothing e points
// to but the payload of a persisted record, which the caller must not
// change.
func (k *Checker) Observe(e *Entry) {
	k.judge(e)
	k.c.last = e.At
}

// End judges the store's final content (final) and whether the run went
// on until nothing was left to do (finished, as Run.Finished), and
// returns every violation of the run, in step order (final-state ones
// last). The result is the caller's.
func (k *Checker) End(final []machine.Record, finished bool) []Violation {
	c, p := &k.c, &k.p
	c.run.Final, c.run.Finished = final, finished
	p.run.Final, p.run.Finished = final, finished
	p.final()
	c.final()
	c.fan.final(c)
	out := c.out
	c.out = nil
	return out
}

// OwnerWaits returns the waits for an owner that owner-wait judged in
// the run judged last (one per grant that ended a wait with due work:
// its length, from the later of the due work and the end of the last
// lease), in log order. The result is the caller's.
func (k *Checker) OwnerWaits() []time.Duration { return slices.Clone(k.c.waits) }

// event returns the number of event ID id, giving an event seen for the
// first time its state.
func (k *Checker) event(id string) int {
	ev, isNew := k.ids.of(id)
	if isNew {
		k.c.events = append(k.c.events, event{})
		k.p.events = k.c.events // one state per event, which both checkers follow
	}
	return ev
}

// worker returns the number of worker name, giving a worker seen for the
// first time its state.
func (k *Checker) worker(name string) int {
	wk, isNew := k.workers.of(name)
	if isNew {
		k.c.workers = append(k.c.workers, checkerWorker{})
		k.p.workers = append(k.p.workers, newWorkerState(name, len(k.c.events)))
	}
	return wk
}

// namesEvent reports whether an entry of kind k is about an event the
// checker follows: its ID's (on Persisted, its record's).
func (k Kind) namesEvent() bool {
	switch k {
	case Acked, Persisted, Sent, Applied, Replied, Offered, Refused, Adopted, DeadDiscarded, Deleted, Replayed:
		return true
	}
	return false // Discarded and WriteRejected are judged by nothing numbered
}

// namesWorker reports whether an entry of kind k is about the worker that
// acted, which the checker follows.
func (k Kind) namesWorker() bool {
	switch k {
	case Persisted, Sent, Probed, CircuitChanged, Restarted, LeaseGranted, Replied, ProbeReplied, LeaseRenewed, Adopted, LeaseDropped:
		return true
	}
	return false
}

// reset readies c for run.
func (c *checker) reset(run Run, ids *names) {
	c.run, c.ids = run, ids
	c.events = slices.Grow(c.events[:0], len(run.Final))
	c.workers = c.workers[:0]
	c.order = c.order[:0]
	c.strict.reset()
	c.newest, c.applied, c.out, c.last = 0, 0, nil, time.Time{}
	c.pause.reset()
	c.fan.reset()
	c.owner, c.heldUntil, c.waits = ownerState{}, time.Time{}, c.waits[:0]
}

type checker struct {
	run       Run
	ids       *names
	events    []event         // per event, by number; shared with policy
	order     []int           // events in order of first persistence (acceptance order)
	strict    strictOrder     // the same order, indexed for the order check
	workers   []checkerWorker // per worker, by number
	newest    uint64          // the newest fencing token granted
	applied   uint64          // highest seq applied (strict)
	last      time.Time       // when the latest entry was observed
	pause     pauseState      // the operator's pauses of the stream
	fan       fanState        // the platform's fan-out and bulk replays (fanout.go)
	owner     ownerState      // the stream's owner, for owner-wait (ownerwait.go)
	heldUntil time.Time       // what the store holds a parked stream until (ownerwait.go)
	waits     []time.Duration // the waits for an owner owner-wait judged, in log order
	out       []Violation
}

// checkerWorker is what the checker follows of one worker.
type checkerWorker struct {
	circuit machine.Circuit
	// flying holds the attempts started (persisted) and not yet answered,
	// with their start: an attempt ends at its reply or, at the latest,
	// AttemptTimeout after it started. They are few: about a window's
	// worth.
	flying []flyingAttempt
}

type flyingAttempt struct {
	ev      int
	attempt int
	at      time.Time
}

// worker returns worker wk's state.
func (c *checker) worker(wk int) *checkerWorker { return &c.workers[wk] }

// land forgets attempt n of event ev, if it is in flight.
func (w *checkerWorker) land(ev, n int) {
	for i, f := range w.flying {
		if f.ev == ev && f.attempt == n {
			last := len(w.flying) - 1
			w.flying[i] = w.flying[last]
			w.flying = w.flying[:last]
			return
		}
	}
}

func (c *checker) fail(inv, id string, step int, format string, args ...any) {
	c.out = append(c.out, Violation{Invariant: inv, ID: id, Step: step, Detail: fmt.Sprintf(format, args...)})
}

// judge judges one observation: the policy checker first, then the
// safety checker.
func (k *Checker) judge(e *Entry) {
	p, c := &k.p, &k.c
	at := ref{ev: -1, id: -1, wk: -1}
	if e.Kind.namesWorker() {
		at.wk = k.worker(e.Worker)
	}
	if e.Kind.namesEvent() {
		at.id = k.event(e.ID)
		at.ev = at.id
		if e.Kind == Persisted && e.Record.ID != e.ID {
			at.ev = k.event(e.Record.ID)
		}
	}
	p.retriesDue(e.At, e.Step, c.pause.first)
	c.fan.observe(c, e)
	switch e.Kind {
	case Persisted:
		k.persisted(e, at)
	case Sent:
		p.sent(e, at)
		c.sent(e, at)
	case Replied:
		p.replied(e, at)
		c.replied(e, at)
	case Offered, Refused:
		p.producer(e, at)
	case Acked:
		p.producer(e, at)
		c.acked(e, at)
	case Applied:
		c.appliedBy(e, at)
	case LeaseGranted:
		c.ownerGranted(e)
		p.lease(e, at)
		c.newest = max(c.newest, e.Token)
		c.pause.granted(e)
	case LeaseRenewed:
		c.owner.renewed(e)
		p.lease(e, at)
	case Probed:
		p.probed(e, at)
	case ProbeReplied:
		p.worker(at.wk).probeOut = false
	case Adopted:
		p.adopted(e, at)
	case CircuitChanged:
		p.circuit(e, at)
		c.worker(at.wk).circuit = e.Circuit
	case Restarted:
		p.restarted(at)
		p.rate.restarted(e)
		c.restarted(at)
	case WriteRejected:
		c.fail(Monotonic, e.ID, e.Step, "the store refused a write by %s (token %d): %s", e.Worker, e.Token, e.Detail)
	case DeadDiscarded:
		c.discarded(e, at)
	case Deleted:
		c.deleted(e, at)
	case Replayed:
		c.owner.revoked(e)
		c.heldUntilAfter(e)
		k.replayed(e, at)
		c.events[at.ev].mustRefuse = 0 // a fresh budget: its attempts count from 1 again
	case Paused, Resumed:
		c.pause.changed(e, c.run.Stall)
	case LeaseDropped:
		p.dropped(e)
	case LeaseReleased:
		c.owner.released(e)
		c.heldUntilAfter(e)
	case Discarded:
		if c.run.ReceiverVerdicts {
			c.receiverDiscarded(e, k.event(e.ID))
		}
	}
}

// receiverDiscarded notes the receiver's final refusal of event ev, and
// judges a delivery it could not verify.
func (c *checker) receiverDiscarded(e *Entry, ev int) {
	switch {
	case e.Detail == DiscardFenced:
		c.events[ev].fenced = true
	case e.Detail == DiscardRejected:
		c.events[ev].fenced = true
		if !c.events[ev].beforeReplay(e.Token) { // an attempt of before a replay, arriving late, owes no reply
			c.events[ev].mustRefuse = e.Attempt
		}
	case strings.HasPrefix(e.Detail, DiscardUnverified):
		c.fail(ChannelTrue, e.ID, e.Step, "attempt %d did not verify at the receiver (%s)", e.Attempt, e.Detail)
	}
}

// restarted gives the worker a fresh machine, which owes nothing to the
// old one's attempts.
func (c *checker) restarted(at ref) {
	w := c.worker(at.wk)
	w.circuit = 0
	w.flying = w.flying[:0]
}

// acked judges the producer's acknowledgement of an event.
func (c *checker) acked(e *Entry, at ref) {
	v := &c.events[at.ev]
	if !v.persisted {
		c.fail(NothingLost, e.ID, e.Step, "acknowledged before it was persisted")
	}
	if seq := v.first.seq; seq != 0 && seq != e.Seq {
		c.fail(AppliedOnce, e.ID, e.Step, "acknowledged as seq %d, but it is seq %d: a known ID made a new event", e.Seq, seq)
	}
}

// appliedBy judges the receiver applying an event.
func (c *checker) appliedBy(e *Entry, at ref) {
	v := &c.events[at.ev]
	v.applied++
	if v.applied > 1 {
		c.fail(AppliedOnce, e.ID, e.Step, "applied %d times", v.applied)
	}
	if !v.persisted {
		c.fail(AppliedOnce, e.ID, e.Step, "applied, but never accepted")
		return
	}
	if c.run.Policy.Ordering == machine.Strict && c.run.ReceiverFences {
		if v.first.seq <= c.applied {
			c.fail(Order, e.ID, e.Step, "applied seq %d after seq %d", v.first.seq, c.applied)
		}
		c.applied = max(c.applied, v.first.seq)
	}
}

// replied lands the attempt a reply answers.
func (c *checker) replied(e *Entry, at ref) {
	if v := &c.events[at.ev]; v.mustRefuse > 0 && v.mustRefuse == e.Attempt {
		v.mustRefuse = 0
		if e.Detail != machine.OutcomeRefused.String() {
			c.fail(ChannelTrue, e.ID, e.Step, "attempt %d answered %s, but the receiver answered it with a status the endpoint rejects at once", e.Attempt, e.Detail)
		}
	}
	if e.Detail == machine.OutcomeRefused.String() {
		v := &c.events[at.ev]
		if c.run.ReceiverVerdicts && !v.fenced {
			c.fail(ChannelTrue, e.ID, e.Step, "attempt %d answered refused, but the receiver never refused the event", e.Attempt)
		}
		v.refused = true
	}
	c.worker(at.wk).land(at.ev, e.Attempt)
}

// persisted judges a persisted record: the policy checker first, then the
// safety checker. Both read the event's record before (prev: nil on its
// first persistence) and its first identity, noted here.
func (k *Checker) persisted(e *Entry, at ref) {
	c, r := &k.c, &e.Record
	v := &c.events[at.ev]
	var prev *machine.Record
	if v.persisted {
		before := v.rec
		prev = &before
	} else {
		v.persisted, v.first = true, identityOf(r)
		c.order = append(c.order, at.ev)
		v.pos = c.strict.add(r.Seq)
	}
	k.p.persisted(e, at, v, prev) // its violations come first
	c.persisted(e, at, v, prev)
	if r.Attempts > v.rec.Attempts {
		v.startedAt = e.At
	}
	v.rec = *r
}

// persisted judges a persisted record for the safety checker.
func (c *checker) persisted(e *Entry, at ref, v *event, prev *machine.Record) {
	r := &e.Record
	if prev != nil {
		if prev.Seq != r.Seq {
			c.fail(AppliedOnce, r.ID, e.Step, "persisted as seq %d, but it is seq %d", r.Seq, prev.Seq)
		}
		if !v.rewritten && (!r.AcceptedAt.Equal(v.first.acceptedAt) || !bytes.Equal(r.Payload, v.first.payload)) {
			v.rewritten = true // reported once
			c.fail(Monotonic, r.ID, e.Step, "its acceptance time or payload changed after it was accepted")
		}
		if prev.State.Terminal() && (prev.State != r.State || prev.Reason != r.Reason) {
			c.terminalChanged(e, prev)
		}
		if r.Attempts < prev.Attempts {
			c.fail(Monotonic, r.ID, e.Step, "attempts went from %d down to %d", prev.Attempts, r.Attempts)
		}
		switch {
		case r.Attempts > prev.Attempts && (r.State == machine.Pending || r.State == machine.Retry):
			c.started(e, at) // a new attempt goes out from pending or retry
		case r.Attempts == prev.Attempts && r.State != prev.State:
			// The attempt landed: failed into retry or parked, delivered,
			// dead. (A reply, when there is one, already said so.)
			c.worker(at.wk).land(at.ev, r.Attempts)
		}
	}
	if r.State.Terminal() && v.doneAt.IsZero() {
		v.doneAt = e.At
	}
	if r.State == machine.Dead && !v.everDead {
		v.everDead, v.deadAs = true, r.Reason
		c.deserved(e, v)
	}
	c.strict.set(v.pos, r.State.Terminal())
}

// terminalChanged reports a terminal record persisted changed from prev.
func (c *checker) terminalChanged(e *Entry, prev *machine.Record) {
	inv := Monotonic
	if prev.State == machine.Dead {
		inv = DeadKept
	}
	c.fail(inv, e.Record.ID, e.Step, "terminal state %s changed to %s", describe(*prev), describe(e.Record))
}

// started checks the window when Worker starts attempt Record.Attempts (a
// persisted attempt count that grew): at most one attempt in flight in
// strict order, at most Window in independent order. An attempt stops
// counting at its reply or AttemptTimeout after its start, when the
// machine gives up waiting for it (less Run.Stall: a stalled worker
// stamps the start early).
func (c *checker) started(e *Entry, at ref) {
	p := &c.run.Policy
	window := p.Window
	if p.Ordering == machine.Strict {
		window = 1
	}
	w := c.worker(at.wk)
	// Keep the attempts still counting (their order does not matter:
	// only the count is used) and note whether this one is among them.
	fl, n, again := w.flying[:0], e.Record.Attempts, -1
	for _, f := range w.flying {
		if !e.At.Before(f.at.Add(p.AttemptTimeout - c.run.Stall)) {
			continue
		}
		if f.ev == at.id && f.attempt == n {
			again = len(fl)
		}
		fl = append(fl, f)
	}
	if len(fl) >= window {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d started with %d attempts in flight; the window is %d", n, len(fl), window)
	}
	if again >= 0 {
		fl[again].at = e.At
	} else { // keyed by the entry's ID, as a reply names it
		fl = append(fl, flyingAttempt{ev: at.id, attempt: n, at: e.At})
	}
	w.flying = fl
}

// deserved checks the reason an event was first persisted dead.
func (c *checker) deserved(e *Entry, v *event) {
	p, r := &c.run.Policy, &e.Record
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

func (c *checker) sent(e *Entry, at ref) {
	v := &c.events[at.ev]
	p := &c.run.Policy
	if step, rule, ok := c.pause.heldBy(e.Token); ok {
		c.fail(rule, e.ID, e.Step, "attempt %d sent by %s under token %d, granted while the stream was paused (step %d)", e.Attempt, nameOf(e.Worker), e.Token, step)
	} else if late, ok := c.pause.overdue(v.startedAt, c.run.Recheck+c.run.Skew+c.run.Stall); ok && c.run.Recheck > 0 && v.rec.Attempts == e.Attempt {
		c.fail(c.pause.rule, e.ID, e.Step, "attempt %d sent by %s, started %v after the pause of step %d: an owner must stop starting attempts within a renewal (%v, plus skew and stall)", e.Attempt, nameOf(e.Worker), late, c.pause.step, c.run.Recheck)
	}
	if !v.persisted {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent, but the event was never persisted", e.Attempt)
		return
	}
	if v.beforeReplay(e.Token) {
		// Persisted in a budget before the latest replay, by an owner the
		// replay fenced off: it counts against that budget, not this one.
		return
	}
	v.sends++
	switch {
	case v.sends > p.MaxAttempts:
		c.fail(BoundedSends, e.ID, e.Step, "sent %d times; MaxAttempts is %d", v.sends, p.MaxAttempts)
	}
	if slices.Contains(v.sent, e.Attempt) {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent twice: an attempt number was reused", e.Attempt)
	}
	v.sent = append(v.sent, e.Attempt)
	if v.rec.Attempts < e.Attempt {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent before it was persisted (store has %d)", e.Attempt, v.rec.Attempts)
	}
	// Only a fenced-off owner (a newer lease exists) may still send, late,
	// an attempt it persisted before it lost the stream.
	zombie := e.Token < c.newest
	if v.rec.State.Terminal() && !zombie {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent after the event was %s", e.Attempt, v.rec.State)
	}
	if cs := c.worker(at.wk).circuit; cs == machine.Open || cs == machine.Checking {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent while the circuit was %s", e.Attempt, cs)
	}
	if v.rec.State == machine.Parked && !zombie {
		c.fail(BoundedSends, e.ID, e.Step, "attempt %d sent while the event was parked", e.Attempt)
	}
	if p.Ordering == machine.Strict {
		// A blocker replayed after this send's lease was granted was
		// terminal when the send was persisted: the late send of an owner
		// the replay fenced off.
		if pos, blocked := c.strict.blocker(v.first.seq); blocked && !c.events[c.order[pos]].beforeReplay(e.Token) {
			ev := c.order[pos]
			w := &c.events[ev]
			c.fail(Order, e.ID, e.Step, "seq %d sent while earlier seq %d (%s) was %s", v.first.seq, w.first.seq, c.ids.list[ev], w.rec.State)
		}
	}
}

func (c *checker) final() {
	end := c.last
	finalOf := c.indexFinal()
	for _, ev := range c.order {
		v, id := &c.events[ev], c.ids.list[ev]
		if finalOf[ev] < 0 {
			if v.deleted {
				// Judged when it was deleted: a settled record is gone by
				// design, an unsettled one was reported then.
				c.liveness(id, v, end)
				continue
			}
			if v.everDead {
				c.fail(DeadKept, id, -1, "was dead (%s), and the store no longer has it", v.deadAs)
			} else {
				c.fail(NothingLost, id, -1, "accepted (seq %d) but missing from the store", v.first.seq)
			}
			continue
		}
		r := c.run.Final[finalOf[ev]]
		switch {
		case v.everDead && (r.State != machine.Dead || r.Reason != v.deadAs):
			c.fail(DeadKept, id, -1, "was dead (%s), store now has %s", v.deadAs, describe(r))
		case r.State == machine.Delivered && v.applied == 0:
			c.fail(NothingLost, id, -1, "delivered in the store, but the receiver never applied it")
		case !r.State.Terminal() && c.run.Finished:
			c.fail(Liveness, id, -1, "still %s when the run finished", describe(r))
			continue
		}
		c.liveness(id, v, end)
	}
}

// indexFinal returns, per event number, the index in Run.Final of its
// record (-1: none; the last, should a broken store list an ID twice).
// Records of IDs the log never named are no event's: final ignores them.
func (c *checker) indexFinal() []int {
	finalOf := make([]int, len(c.ids.list))
	for i := range finalOf {
		finalOf[i] = -1
	}
	for i, r := range c.run.Final {
		if ev, ok := c.ids.lookup(r.ID); ok {
			finalOf[ev] = i
		}
	}
	return finalOf
}

// liveness checks that the event settled by its deadline: MaxAge plus
// one AttemptTimeout (plus Slack) after its acceptance, or LivenessBound
// after the later of acceptance and healing if that is earlier.
func (c *checker) liveness(id string, v *event, end time.Time) {
	p := &c.run.Policy
	accepted := v.first.acceptedAt // the final record's could have been rewritten
	deadline := accepted.Add(p.MaxAge + p.AttemptTimeout + c.run.Slack)
	if c.run.LivenessBound > 0 {
		from := accepted
		if c.run.HealedAt.After(from) {
			from = c.run.HealedAt
		}
		if healed := from.Add(c.run.LivenessBound); healed.Before(deadline) {
			deadline = healed
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

func describe(r machine.Record) string {
	if r.State == machine.Dead {
		return "dead (" + r.Reason.String() + ")"
	}
	return r.State.String()
}

// discarded judges an operator's discard: only a dead letter may be
// discarded (it stays dead, and becomes settled). Discarding anything
// else settles an event that is still owed a delivery, which retention
// may then delete: lost.
func (c *checker) discarded(e *Entry, at ref) {
	v := &c.events[at.ev]
	if !v.persisted || v.rec.State != machine.Dead {
		c.fail(NothingLost, e.ID, e.Step, "discarded by %s while %s: only a dead letter may be discarded", e.Worker, c.stateOf(v))
		return
	}
	if e.Record.State != machine.Dead || e.Record.Reason != v.deadAs {
		c.fail(DeadKept, e.ID, e.Step, "discarding the dead letter (%s) left it %s", v.deadAs, describe(e.Record))
	}
	v.settled = true
}

// deleted judges retention deleting a record: only a settled one, that
// is delivered, or a dead letter an operator discarded. Anything else is
// lost (or, for an undiscarded dead letter, not kept).
func (c *checker) deleted(e *Entry, at ref) {
	v := &c.events[at.ev]
	v.deleted = true
	switch {
	case v.persisted && v.rec.State == machine.Delivered:
	case v.persisted && v.rec.State == machine.Dead && v.settled:
	case v.persisted && v.rec.State == machine.Dead:
		c.fail(DeadKept, e.ID, e.Step, "deleted by retention while an undiscarded dead letter (%s)", v.deadAs)
	default:
		c.fail(NothingLost, e.ID, e.Step, "deleted by retention while %s: only a settled record may be deleted", c.stateOf(v))
	}
}

// stateOf is the event's state as the log last showed it.
func (c *checker) stateOf(v *event) string {
	if !v.persisted {
		return "never persisted"
	}
	return describe(v.rec)
}

// beforeReplay reports whether an act under lease token came before the
// event's latest replay: the replay fenced that lease off. Without leases
// (token 0) the log cannot tell.
func (v *eventView) beforeReplay(token uint64) bool {
	return token != 0 && token < v.replayToken
}

// replayed judges an operator's replay and gives the event the fresh
// budget the replay gives it: only an undiscarded dead letter may be
// replayed, and the store must hand it back pending with no attempts.
// From then on the event is judged as a newly accepted one whose MaxAge
// counts from the replay (its sends, its attempt numbers, why it may die,
// its liveness deadline), but it stays the same event for the receiver:
// its effect must still take place at most once (applied-once), and in
// strict order its sequence is where it was.
func (k *Checker) replayed(e *Entry, at ref) {
	c, p := &k.c, &k.p
	v := &c.events[at.ev]
	if !v.persisted || v.rec.State != machine.Dead || v.settled {
		what := c.stateOf(v)
		if v.settled {
			what = "a discarded dead letter"
		}
		c.fail(Monotonic, e.ID, e.Step, "replayed by %s while %s: only an undiscarded dead letter may be replayed", e.Worker, what)
	}
	r := &e.Record
	if r.State != machine.Pending || r.Attempts != 0 || r.Reason != 0 {
		c.fail(Monotonic, e.ID, e.Step, "the replay left it %s with %d attempts, not pending with a fresh budget", describe(*r), r.Attempts)
	}
	if !v.persisted {
		return
	}
	// The replay fences every lease granted before it.
	c.newest = max(c.newest, e.Token)
	p.newest = max(p.newest, e.Token)
	if v.rec.State.Terminal() && !r.State.Terminal() {
		p.live++
	}
	v.rec = *r
	v.first.acceptedAt = r.AcceptedAt // the fresh budget's start
	v.replayToken = e.Token
	v.sends, v.sent = 0, v.sent[:0]
	v.refused, v.everDead, v.deadAs, v.doneAt = false, false, 0, time.Time{}
	v.failedAt = time.Time{}
	c.strict.set(v.pos, r.State.Terminal())
}

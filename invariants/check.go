package invariants

import (
	"bytes"
	"fmt"
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
	// Liveness: every event is delivered or dead by its deadline: MaxAge
	// plus one AttemptTimeout after acceptance, and LivenessBound after
	// the faults healed (or after its acceptance, if later).
	Liveness = "liveness"
)

// Names lists every invariant, in the order reports show them.
var Names = append([]string{NothingLost, AppliedOnce, Order, BoundedSends, DeadKept, DeadDeserved, Monotonic, Liveness}, PolicyNames...)

// LivenessBound is how long after the faults heal every event must settle,
// derived from the policy: the longest the sender can still be waiting
// (a probe backoff and timeout, an attempt timeout, the longest retry
// delay), then one round trip of at most 2*latency per event, then the
// whole budget of each poison (or stubborn) event, which keeps failing
// after the channel heals.
func LivenessBound(p machine.Config, events, poison int, latency time.Duration) time.Duration {
	settle := p.ProbeMaxInterval + p.ProbeTimeout + p.AttemptTimeout + max(p.MaxBackoff, p.MaxRetryAfter)
	perEvent := 2 * latency
	perPoison := time.Duration(p.MaxAttempts) * (max(p.MaxBackoff, p.MaxRetryAfter) + p.AttemptTimeout + p.ProbeTimeout + 2*latency)
	return settle + time.Duration(events)*perEvent + time.Duration(poison)*perPoison
}

type eventView struct {
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

// identity is what of a record may never change once it is accepted.
// Views keep it rather than the first record whole: they are many, and
// the rest of that record is never read again.
type identity struct {
	seq        uint64
	acceptedAt time.Time
	payload    []byte
}

func identityOf(r *machine.Record) identity {
	return identity{seq: r.Seq, acceptedAt: r.AcceptedAt, payload: r.Payload}
}

// slabSize is the room of a new slab of per-event state, given the store's
// final records (nearly every event of the stream, but only that stream's)
// and the events already held: the first slab fits the final records, a
// later one (a broken run, with events the store lost) as many again.
func slabSize(final, held int) int { return max(8, final, held) }

// Check judges a run and returns every violation found, in step order
// (final-state ones last). No violations means every invariant held.
func Check(run Run) []Violation {
	var k Checker
	return k.Check(run)
}

// Checker judges runs one after another, as Check does, reusing its maps
// and slabs from one run to the next: a simulator that judges each of a
// run's streams, or many runs, allocates them once. The zero Checker is
// ready to use. It is not safe for concurrent use.
type Checker struct {
	c checker
	p policy
}

// Check judges run as the package's Check does. The result is the
// caller's: the Checker keeps nothing of it.
func (k *Checker) Check(run Run) []Violation {
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
func (c *checker) reset(run Run) {
	c.run = run
	if c.events == nil {
		// The store's final records are nearly every event: size for them.
		c.events = make(map[string]*eventView, len(run.Final))
		c.circuit = map[string]machine.Circuit{}
		c.flying = map[string]map[attemptKey]time.Time{}
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

type checker struct {
	run     Run
	events  map[string]*eventView
	slab    []eventView                // where views live: one allocation for many (never grown in place)
	order   []string                   // IDs in order of first persistence (acceptance order)
	strict  strictOrder                // the same order, indexed for the order check
	circuit map[string]machine.Circuit // per worker
	// flying holds, per worker, the attempts started (persisted) and not
	// yet answered, with their start: an attempt ends at its reply or, at
	// the latest, AttemptTimeout after it started.
	flying  map[string]map[attemptKey]time.Time
	newest  uint64 // the newest fencing token granted
	applied uint64 // highest seq applied (strict)
	out     []Violation
	// finalByID indexes Run.Final for final, kept for the next run.
	finalByID map[string]*machine.Record
}

func (c *checker) fail(inv, id string, step int, format string, args ...any) {
	c.out = append(c.out, Violation{Invariant: inv, ID: id, Step: step, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) view(id string) *eventView {
	v := c.events[id]
	if v == nil {
		if len(c.slab) == cap(c.slab) {
			c.slab = make([]eventView, 0, slabSize(len(c.run.Final), len(c.events)))
		}
		c.slab = append(c.slab, eventView{})
		v = &c.slab[len(c.slab)-1]
		c.events[id] = v
	}
	return v
}

func (c *checker) entry(e *Entry) {
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
		delete(c.flying[e.Worker], attemptKey{e.ID, e.Attempt})
	case WriteRejected:
		c.fail(Monotonic, e.ID, e.Step, "the store refused a write by %s (token %d): %s", e.Worker, e.Token, e.Detail)
	case Probed, Discarded:
	}
}

func (c *checker) persisted(e *Entry) {
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
			delete(c.flying[e.Worker], attemptKey{r.ID, r.Attempts})
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

type attemptKey struct {
	id      string
	attempt int
}

// started checks the window when Worker starts attempt Record.Attempts (a
// persisted attempt count that grew): at most one attempt in flight in
// strict order, at most Window in independent order. An attempt stops
// counting at its reply or AttemptTimeout after its start, when the
// machine gives up waiting for it (less Run.Stall: a stalled worker
// stamps the start early).
func (c *checker) started(e *Entry) {
	p := c.run.Policy
	window := p.Window
	if p.Ordering == machine.Strict {
		window = 1
	}
	fl := c.flying[e.Worker]
	if fl == nil {
		fl = map[attemptKey]time.Time{}
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
	fl[attemptKey{e.ID, e.Record.Attempts}] = e.At
}

// deserved checks the reason an event was first persisted dead.
func (c *checker) deserved(e *Entry, v *eventView) {
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

func (c *checker) sent(e *Entry) {
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
func (v *eventView) sentBefore(n int) bool {
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

func (c *checker) final() {
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
func (c *checker) liveness(id string, v *eventView, r machine.Record, end time.Time) {
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

func describe(r machine.Record) string {
	if r.State == machine.Dead {
		return "dead (" + r.Reason.String() + ")"
	}
	return r.State.String()
}

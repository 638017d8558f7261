// Package reference is the delivery machine as it was before it was
// indexed (main at 0004c3d), kept as an executable specification: the
// differential test in package machine feeds the same inputs to both and
// requires identical batches and records. Only the planted-bug hooks were
// stripped, and the types, errors and policy helpers are machine's own.
// Nothing but tests may import it.
//
// Do not improve this code: its value is that it is the old machine.
package reference

import (
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/machine"
)

// The machine's data types, shared so that outputs compare directly.
type (
	Record        = machine.Record
	Config        = machine.Config
	State         = machine.State
	DeadReason    = machine.DeadReason
	Circuit       = machine.Circuit
	Batch         = machine.Batch
	Ack           = machine.Ack
	Send          = machine.Send
	Probe         = machine.Probe
	CircuitChange = machine.CircuitChange
	Input         = machine.Input
	Accept        = machine.Accept
	Adopt         = machine.Adopt
	Tick          = machine.Tick
	Result        = machine.Result
	ProbeResult   = machine.ProbeResult
	Stats         = machine.Stats
)

const (
	Pending   = machine.Pending
	Retry     = machine.Retry
	Parked    = machine.Parked
	Delivered = machine.Delivered
	Dead      = machine.Dead

	NotDead   = machine.NotDead
	Exhausted = machine.Exhausted
	Expired   = machine.Expired
	Rejected  = machine.Rejected

	Closed   = machine.Closed
	Checking = machine.Checking
	Open     = machine.Open

	OutcomeDelivered = machine.OutcomeDelivered
	OutcomeFailed    = machine.OutcomeFailed
	OutcomeRefused   = machine.OutcomeRefused
	OutcomeTimedOut  = machine.OutcomeTimedOut

	Strict     = machine.Strict
	MaxIDBytes = machine.MaxIDBytes
)

var (
	ErrTimeWentBackwards = machine.ErrTimeWentBackwards
	ErrBadInput          = machine.ErrBadInput
	ErrNoSuchAttempt     = machine.ErrNoSuchAttempt
	ErrQueueFull         = machine.ErrQueueFull
	ErrBadRecord         = machine.ErrBadRecord
)

// inputAt is the unexported Input.at of the old machine.
func inputAt(in Input) time.Time {
	switch in := in.(type) {
	case Accept:
		return in.At
	case Adopt:
		return in.At
	case Tick:
		return in.At
	case Result:
		return in.At
	case ProbeResult:
		return in.At
	}
	return time.Time{}
}

// maxAge, window and retryDelay are the old Config's unexported helpers.
func maxAge(c *Config) time.Duration { return c.MaxAge }

func window(c *Config) int {
	if c.Ordering == Strict {
		return 1
	}
	return c.Window
}

func retryDelay(c *Config, id string, n int, retryAfter time.Duration) time.Duration {
	d := c.Backoff(id, n)
	if c.MaxRetryAfter > 0 && retryAfter > 0 {
		retryAfter = min(retryAfter, c.MaxRetryAfter)
		d = max(d, retryAfter)
	}
	return d
}

// entry is a record plus what only memory knows about it.
type entry struct {
	rec      Record
	inFlight bool // rec.Attempts is out on the channel, outcome unknown
	sentAt   time.Time
	dirty    bool // changed in the current step
}

// deadline is e's Record.Deadline, without copying the record and the
// config on the hot path of every step.
func (e *entry) deadline(c *Config) time.Time { return e.rec.AcceptedAt.Add(maxAge(c)) }

// Machine decides, for the events of one stream, what to persist, send,
// probe and acknowledge. It is not safe for concurrent use; it does no I/O
// and reads no clock.
type Machine struct {
	cfg     Config
	now     time.Time
	byID    map[string]*entry
	all     []*entry // every entry in Seq order, terminal ones included
	live    []*entry // non-terminal entries in Seq order; compacted lazily
	lastSeq uint64
	queued  int // non-terminal entries
	flying  int // entries in flight

	circuit    Circuit
	streak     int // consecutive retryable failures, any event
	probeN     uint64
	probeOut   bool // probe probeN is in flight
	probeSent  time.Time
	probeFails int       // consecutive failed probes while open
	probeNext  time.Time // next probe while open and none is out

	stats Stats
	out   Batch
	dirty []*entry
}

// New returns a machine with no events, for a stream that has never had any.
// To restart a stream, use Recover with the store's records.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Machine{cfg: cfg, byID: make(map[string]*entry), circuit: Closed}, nil
}

// Recover rebuilds a machine from the records the store holds, as at time
// now, and returns the first batch of the new incarnation.
//
// What memory knew is gone, and Recover assumes the worst of it: every
// attempt counted in a record may have reached the receiver, and its
// outcome will never be reported (a Result for it is ignored as stale).
// Such an event waits until its persisted NextAt and is then sent as the
// next attempt; if it has no attempts left it is dead (exhausted). If any
// record is parked, the circuit starts open and a probe goes out at once;
// otherwise, if a waiting record has an attempt behind it, the circuit
// starts checking (a probe, no send until it answers). The batch lists no
// circuit change for this: read Circuit() after Recover.
func Recover(cfg Config, now time.Time, records []Record) (*Machine, Batch, error) {
	m, err := New(cfg)
	if err != nil {
		return nil, Batch{}, err
	}
	recs := slices.Clone(records)
	slices.SortFunc(recs, func(a, b Record) int { return cmpUint64(a.Seq, b.Seq) })
	for i, r := range recs {
		if err := checkRecord(r); err != nil {
			return nil, Batch{}, err
		}
		if i > 0 && recs[i-1].Seq == r.Seq {
			return nil, Batch{}, fmt.Errorf("%w: %q and %q share seq %d", ErrBadRecord, recs[i-1].ID, r.ID, r.Seq)
		}
		if _, dup := m.byID[r.ID]; dup {
			return nil, Batch{}, fmt.Errorf("%w: ID %q appears twice", ErrBadRecord, r.ID)
		}
		e := &entry{rec: r}
		m.byID[r.ID] = e
		m.all = append(m.all, e)
		m.lastSeq = r.Seq
		if !r.State.Terminal() {
			m.live = append(m.live, e)
			m.queued++
		}
	}
	m.now = now
	// Only records that can still be sent say anything about the channel:
	// one out of attempts dies here, one past MaxAge dies in advance.
	parked, troubled := false, false
	for _, e := range m.live {
		if e.rec.Attempts >= cfg.MaxAttempts {
			m.kill(e, Exhausted)
			continue
		}
		if !now.Before(e.deadline(&m.cfg)) {
			continue
		}
		parked = parked || e.rec.State == Parked
		troubled = troubled || e.rec.Attempts > 0
	}
	switch {
	case parked:
		// The store says the channel was down: stay open, probe at once.
		m.circuit = Open
		m.probeNext = now
	case troubled:
		// An attempt failed or its outcome was lost with the old memory,
		// and the failure streak was lost with it. Check the channel before
		// sending again, so that restarts during an outage cannot keep the
		// breaker from ever tripping while they burn the events' attempts.
		m.circuit = Checking
		m.sendProbe()
	}
	m.advance()
	return m, m.flush(), nil
}

func checkRecord(r Record) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: record %q: %s", ErrBadRecord, r.ID, fmt.Sprintf(format, args...))
	}
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: record with seq %d has an empty ID", ErrBadRecord, r.Seq)
	case len(r.ID) > MaxIDBytes:
		return bad("ID of %d bytes exceeds %d", len(r.ID), MaxIDBytes)
	case r.Seq == 0:
		return bad("seq is 0; sequences start at 1")
	case r.AcceptedAt.IsZero():
		return bad("no acceptance time")
	case (r.State < Pending || r.State > Dead):
		return bad("unknown state %d", uint8(r.State))
	case r.Attempts < 0:
		return bad("attempts is %d", r.Attempts)
	case r.State == Dead && (r.Reason == NotDead || r.Reason > Rejected):
		return bad("dead with no valid reason (%d)", uint8(r.Reason))
	case r.State != Dead && r.Reason != NotDead:
		return bad("state %s with dead reason %s", r.State, r.Reason)
	}
	return nil
}

// Config returns the machine's policy.
func (m *Machine) Config() Config { return m.cfg }

// Now returns the latest clock reading the machine has seen.
func (m *Machine) Now() time.Time { return m.now }

// Circuit returns the circuit's state.
func (m *Machine) Circuit() Circuit { return m.circuit }

// Stats returns the counters so far.
func (m *Machine) Stats() Stats { return m.stats }

// Queued returns the number of events that are not terminal.
func (m *Machine) Queued() int { return m.queued }

// Records returns a copy of every record, terminal ones included, in Seq
// order: what the store should hold after every batch was persisted.
func (m *Machine) Records() []Record {
	out := make([]Record, len(m.all))
	for i, e := range m.all {
		out[i] = e.rec
	}
	return out
}

// InFlight returns the attempts whose outcome the machine awaits, in Seq
// order.
func (m *Machine) InFlight() []Send {
	var out []Send
	for _, e := range m.live {
		if e.inFlight {
			out = append(out, Send{ID: e.rec.ID, Seq: e.rec.Seq, Attempt: e.rec.Attempts, Payload: e.rec.Payload})
		}
	}
	return out
}

// Step applies one input and returns what the caller must do, in the order
// Batch documents. An error means the input was misuse and nothing changed.
func (m *Machine) Step(in Input) (Batch, error) {
	switch in.(type) {
	case nil:
		return Batch{}, fmt.Errorf("%w: nil input", ErrBadInput)
	case *Accept, *Adopt, *Tick, *Result, *ProbeResult:
		return Batch{}, fmt.Errorf("%w: %T: pass inputs by value", ErrBadInput, in)
	}
	at := inputAt(in)
	if at.Before(m.now) {
		return Batch{}, fmt.Errorf("%w: input at %v is before the last reading %v", ErrTimeWentBackwards, at, m.now)
	}
	// Validate before touching anything, so an error changes nothing.
	if err := m.check(in); err != nil {
		return Batch{}, err
	}
	m.now = at
	switch in := in.(type) {
	case Accept:
		m.accept(in)
	case Adopt:
		m.adopt(in)
	case Tick:
		// Time alone: advance does the work.
	case Result:
		m.result(in)
	case ProbeResult:
		m.probeResult(in)
	}
	m.advance()
	return m.flush(), nil
}

func (m *Machine) check(in Input) error {
	switch in := in.(type) {
	case Accept:
		switch {
		case in.ID == "":
			return fmt.Errorf("%w: accept with an empty ID", ErrBadInput)
		case len(in.ID) > MaxIDBytes:
			return fmt.Errorf("%w: accept ID of %d bytes exceeds %d", ErrBadInput, len(in.ID), MaxIDBytes)
		case len(in.Payload) > m.cfg.MaxPayloadBytes:
			return fmt.Errorf("%w: accept %q: payload of %d bytes exceeds MaxPayloadBytes %d", ErrBadInput, in.ID, len(in.Payload), m.cfg.MaxPayloadBytes)
		}
		if _, dup := m.byID[in.ID]; !dup && m.queued >= m.cfg.MaxQueued {
			return fmt.Errorf("%w: %d events waiting (MaxQueued); %q not accepted", ErrQueueFull, m.queued, in.ID)
		}
	case Adopt:
		r := in.Record
		if err := checkRecord(r); err != nil {
			return err
		}
		if _, known := m.byID[r.ID]; known {
			return nil // ignored in adopt: the store may hand a record over twice
		}
		switch {
		case r.State != Pending || r.Attempts != 0:
			return fmt.Errorf("%w: adopt %q: a new record is pending with no attempt, not %s with %d", ErrBadRecord, r.ID, r.State, r.Attempts)
		case r.Seq <= m.lastSeq:
			return fmt.Errorf("%w: adopt %q: seq %d is not above the last seq %d", ErrBadRecord, r.ID, r.Seq, m.lastSeq)
		}
	case Tick:
	case Result:
		switch {
		case in.Outcome < OutcomeDelivered || in.Outcome > OutcomeTimedOut:
			return fmt.Errorf("%w: result for %q has unknown outcome %d", ErrBadInput, in.ID, uint8(in.Outcome))
		case in.Attempt < 1:
			return fmt.Errorf("%w: result for %q names attempt %d; attempts start at 1", ErrBadInput, in.ID, in.Attempt)
		case in.RetryAfter < 0:
			return fmt.Errorf("%w: result for %q has negative RetryAfter %v", ErrBadInput, in.ID, in.RetryAfter)
		case in.RetryAfter > 0 && in.Outcome != OutcomeFailed:
			return fmt.Errorf("%w: result for %q: RetryAfter goes only with outcome failed, not %s", ErrBadInput, in.ID, in.Outcome)
		}
		if e := m.byID[in.ID]; e != nil && in.Attempt > e.rec.Attempts {
			return fmt.Errorf("%w: result for %q attempt %d, but only %d were sent", ErrNoSuchAttempt, in.ID, in.Attempt, e.rec.Attempts)
		}
	case ProbeResult:
		if in.N == 0 {
			return fmt.Errorf("%w: probe 0 was never sent; probes count from 1", ErrNoSuchAttempt)
		}
	default:
		return fmt.Errorf("%w: unknown input type %T", ErrBadInput, in)
	}
	return nil
}

func (m *Machine) accept(in Accept) {
	if e := m.byID[in.ID]; e != nil {
		// Idempotent: nothing changes, not even the payload; ack again.
		m.stats.Duplicates++
		m.out.Acks = append(m.out.Acks, Ack{ID: in.ID, Seq: e.rec.Seq, Duplicate: true})
		return
	}
	m.lastSeq++
	state := Pending
	if m.circuit == Open {
		state = Parked
	}
	e := &entry{rec: Record{
		ID:         in.ID,
		Seq:        m.lastSeq,
		Payload:    slices.Clone(in.Payload),
		AcceptedAt: in.At,
		State:      state,
		NextAt:     in.At,
	}}
	m.byID[in.ID] = e
	m.all = append(m.all, e)
	m.live = append(m.live, e)
	m.queued++
	m.stats.Accepted++
	m.touch(e)
	m.out.Acks = append(m.out.Acks, Ack{ID: in.ID, Seq: e.rec.Seq})
}

// adopt takes over a record a shared store accepted. It is not refused
// when MaxQueued is reached: the store already acknowledged it.
func (m *Machine) adopt(in Adopt) {
	if e := m.byID[in.Record.ID]; e != nil {
		m.ignore("adopt %s, already known as seq %d", in.Record.ID, e.rec.Seq)
		return
	}
	r := in.Record
	r.Payload = slices.Clone(r.Payload)
	e := &entry{rec: r}
	m.byID[r.ID] = e
	m.all = append(m.all, e)
	m.live = append(m.live, e)
	m.lastSeq = r.Seq
	m.queued++
	m.stats.Accepted++
	switch {
	case len(r.Payload) > m.cfg.MaxPayloadBytes:
		// The store acknowledged it, so it cannot be refused; it cannot be
		// sent either. It becomes a dead letter, kept with its reason.
		m.kill(e, Rejected)
	case m.circuit == Open:
		m.setState(e, Parked, NotDead)
	}
}

// result handles the outcome of an attempt. Only the outcome of the
// attempt in flight counts; anything else is ignored and said so, because
// acting on it could only send twice or move a state backwards.
func (m *Machine) result(in Result) {
	e := m.byID[in.ID]
	switch {
	case e == nil:
		m.ignore("result for unknown event %s", in.ID)
		return
	case e.rec.State.Terminal():
		m.ignore("result for %s#%d, already %s", in.ID, in.Attempt, e.rec.State)
		return
	case !e.inFlight:
		m.ignore("result for %s#%d, no attempt in flight", in.ID, in.Attempt)
		return
	case in.Attempt != e.rec.Attempts:
		m.ignore("result for %s#%d, attempt %d is in flight", in.ID, in.Attempt, e.rec.Attempts)
		return
	}
	m.land(e)
	switch in.Outcome {
	case OutcomeDelivered:
		m.streak = 0
		m.setState(e, Delivered, NotDead)
	case OutcomeRefused:
		// The channel answered, so it is alive; the event is at fault.
		m.streak = 0
		m.kill(e, Rejected)
	case OutcomeFailed, OutcomeTimedOut:
		m.fail(e, in.RetryAfter)
	}
}

// land takes an entry off the wire.
func (m *Machine) land(e *entry) {
	e.inFlight = false
	m.flying--
}

// fail handles a retryable failure or a timeout of the attempt that was in
// flight.
func (m *Machine) fail(e *entry, retryAfter time.Duration) {
	m.streak++
	n := e.rec.Attempts
	switch {
	case n >= m.cfg.MaxAttempts:
		m.kill(e, Exhausted)
	default:
		next := m.now.Add(retryDelay(&m.cfg, e.rec.ID, n, retryAfter))
		if !next.Before(e.deadline(&m.cfg)) {
			m.kill(e, Expired)
		} else {
			state := Retry
			if m.circuit == Open {
				state = Parked
			}
			e.rec.NextAt = next
			m.setState(e, state, NotDead)
		}
	}
	if m.circuit == Closed && m.streak >= m.cfg.BreakerThreshold {
		m.setCircuit(Checking)
		m.sendProbe()
	}
}

func (m *Machine) probeResult(in ProbeResult) {
	switch {
	case in.N > m.probeN:
		// Probe numbers are not persisted: they start again with each
		// machine, so a result numbered past this machine's probes was
		// meant for an earlier one.
		m.ignore("probe-result %d, unknown to this machine (its last probe is %d)", in.N, m.probeN)
		return
	case !m.probeOut:
		m.ignore("probe-result %d, no probe in flight", in.N)
		return
	case in.N != m.probeN:
		m.ignore("probe-result %d, probe %d is the one in flight", in.N, m.probeN)
		return
	}
	m.probeOut = false
	if in.Healthy {
		m.probeHealthy()
	} else {
		m.probeFailed()
	}
}

func (m *Machine) probeHealthy() {
	m.streak = 0
	m.probeFails = 0
	switch m.circuit {
	case Checking:
		// The channel is fine, so whatever kept failing is at fault itself
		// (a poison event): it goes on with its own backoff and budget, and
		// the stream is not parked for it.
		m.setCircuit(Closed)
	case Open:
		// Half-open: the channel answered one probe, which proves little
		// on a flapping link, so the first failure of the drain checks
		// again at once instead of spending a whole streak of attempts.
		m.streak = m.cfg.BreakerThreshold - 1
		// Release the backlog; dispatch drains it in acceptance order.
		for _, e := range m.live {
			if e.rec.State == Parked {
				e.rec.NextAt = m.now
				m.setState(e, Pending, NotDead)
			}
		}
		m.setCircuit(Closed)
	default:
		panic(fmt.Sprintf("machine: invalid transition [probe healthy in %s]: no probe is sent while closed", m.circuit))
	}
}

func (m *Machine) probeFailed() {
	switch m.circuit {
	case Checking:
		m.setCircuit(Open)
		m.stats.CircuitOpenings++
		for _, e := range m.live {
			if !e.inFlight && !e.rec.State.Terminal() {
				m.setState(e, Parked, NotDead)
			}
		}
	case Open:
	default:
		panic(fmt.Sprintf("machine: invalid transition [probe failed in %s]: no probe is sent while closed", m.circuit))
	}
	m.probeFails++
	m.probeNext = m.now.Add(m.cfg.ProbeBackoff(m.probeFails))
}

// advance does everything that time alone makes due, then sends what may
// be sent, then computes the next wake-up.
func (m *Machine) advance() {
	// One pass: attempts that timed out fail, then events past MaxAge die.
	// (Each entry's outcome depends only on itself and the circuit, and
	// expiry never touches the circuit, so one pass equals two.)
	for _, e := range m.live {
		if e.inFlight && !m.now.Before(e.sentAt.Add(m.cfg.AttemptTimeout)) {
			m.land(e)
			m.fail(e, 0)
		}
		if !e.inFlight && !e.rec.State.Terminal() && !m.now.Before(e.deadline(&m.cfg)) {
			m.kill(e, Expired)
		}
	}
	if m.probeOut && !m.now.Before(m.probeSent.Add(m.cfg.ProbeTimeout)) {
		m.probeOut = false
		m.probeFailed()
	}
	// While open, probe only for events that wait: with none, the next
	// accepted event finds probeNext passed and probes at once.
	if m.circuit == Open && !m.probeOut && m.queued > 0 && !m.now.Before(m.probeNext) {
		m.sendProbe()
	}
	if m.circuit == Closed {
		m.dispatch()
	}
	m.compact()
	m.out.WakeAt = m.wakeAt()
}

// dispatch starts attempts, in acceptance order, while the window allows.
func (m *Machine) dispatch() {
	for _, e := range m.live {
		if m.flying >= window(&m.cfg) {
			return
		}
		if e.rec.State.Terminal() {
			continue
		}
		if e.inFlight || m.now.Before(e.rec.NextAt) {
			if m.cfg.Ordering == Strict {
				return // the head of the stream holds the rest
			}
			continue
		}
		m.start(e)
	}
}

func (m *Machine) start(e *entry) {
	if e.rec.State == Parked {
		panic(fmt.Sprintf("machine: invalid transition [parked -> send] for %s while the circuit is %s", e.rec.ID, m.circuit))
	}
	if e.rec.Attempts >= m.cfg.MaxAttempts {
		panic(fmt.Sprintf("machine: invalid transition [%s -> send] for %s: attempt %d would exceed MaxAttempts %d",
			e.rec.State, e.rec.ID, e.rec.Attempts+1, m.cfg.MaxAttempts))
	}
	e.rec.Attempts++
	e.rec.NextAt = m.now.Add(m.cfg.AttemptTimeout)
	e.inFlight = true
	e.sentAt = m.now
	m.flying++
	m.stats.Sends++
	m.touch(e)
	m.out.Sends = append(m.out.Sends, Send{ID: e.rec.ID, Seq: e.rec.Seq, Attempt: e.rec.Attempts, Payload: e.rec.Payload})
}

func (m *Machine) sendProbe() {
	m.probeN++
	m.probeOut = true
	m.probeSent = m.now
	m.stats.Probes++
	m.out.Probes = append(m.out.Probes, Probe{N: m.probeN})
}

func (m *Machine) wakeAt() time.Time {
	var wake time.Time
	consider := func(t time.Time) {
		if t.After(m.now) && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	if m.probeOut {
		consider(m.probeSent.Add(m.cfg.ProbeTimeout))
	} else if m.circuit == Open && m.queued > 0 {
		consider(m.probeNext)
	}
	for _, e := range m.live {
		switch {
		case e.rec.State.Terminal():
			continue
		case e.inFlight:
			consider(e.sentAt.Add(m.cfg.AttemptTimeout))
			continue
		}
		consider(e.deadline(&m.cfg))
		if m.circuit == Closed {
			consider(e.rec.NextAt)
		}
	}
	return wake
}

func (m *Machine) setState(e *entry, s State, why DeadReason) {
	from := e.rec.State
	if from.Terminal() {
		panic(fmt.Sprintf("machine: invalid transition [%s -> %s] for %s: %s is terminal", from, s, e.rec.ID, from))
	}
	if e.inFlight {
		panic(fmt.Sprintf("machine: invalid transition [%s -> %s] for %s while attempt %d is in flight", from, s, e.rec.ID, e.rec.Attempts))
	}
	e.rec.State = s
	e.rec.Reason = why
	if s.Terminal() {
		m.queued--
	}
	m.touch(e)
}

func (m *Machine) kill(e *entry, why DeadReason) { m.setState(e, Dead, why) }

func (m *Machine) setCircuit(to Circuit) {
	m.out.Circuit = append(m.out.Circuit, CircuitChange{From: m.circuit, To: to})
	m.circuit = to
}

func (m *Machine) ignore(format string, args ...any) {
	m.stats.Ignored++
	m.out.Ignored = fmt.Sprintf(format, args...)
}

func (m *Machine) touch(e *entry) {
	if !e.dirty {
		e.dirty = true
		m.dirty = append(m.dirty, e)
	}
}

// compact drops terminal entries from live once they pile up, keeping
// dispatch and wakeAt linear in the waiting events, not in history.
func (m *Machine) compact() {
	if len(m.live) < 2*m.queued+16 {
		return
	}
	m.live = slices.DeleteFunc(m.live, func(e *entry) bool { return e.rec.State.Terminal() })
}

func (m *Machine) flush() Batch {
	slices.SortFunc(m.dirty, func(a, b *entry) int { return cmpUint64(a.rec.Seq, b.rec.Seq) })
	for _, e := range m.dirty {
		m.out.Persist = append(m.out.Persist, e.rec)
		e.dirty = false
	}
	m.dirty = m.dirty[:0]
	out := m.out
	m.out = Batch{}
	return out
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

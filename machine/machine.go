package machine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Errors for misuse. Each is wrapped with the detail that names the input.
var (
	// ErrTimeWentBackwards: an input carried a clock reading before the
	// previous one. Nothing was changed.
	ErrTimeWentBackwards = errors.New("machine: time went backwards")
	// ErrBadInput: an input is malformed (empty or long ID, unknown
	// outcome, oversized payload, ...). Nothing was changed.
	ErrBadInput = errors.New("machine: bad input")
	// ErrNoSuchAttempt: a Result names an attempt that was never sent.
	ErrNoSuchAttempt = errors.New("machine: no such attempt")
	// ErrQueueFull: MaxQueued events are waiting. Nothing was accepted and
	// nothing acknowledged; the producer should offer the event later.
	ErrQueueFull = errors.New("machine: queue full")
	// ErrBadRecord: Recover was given records that no machine could have
	// written (duplicate IDs or sequences, unknown states, ...).
	ErrBadRecord = errors.New("machine: bad record")
)

// entry is a record plus what only memory knows about it. While an
// attempt is in flight, rec.NextAt is the instant it times out.
type entry struct {
	rec Record
	ti  int32 // position in the time heap named by where
	xi  int32 // position in the expiry heap; -1 when not in it
	// idHash is the low half of the hash of rec.ID: where the ID index
	// looks for the entry when it forgets it (idindex.go).
	idHash uint32
	// where is the time heap the entry is in, if any; inFlight while
	// attempt rec.Attempts is out on the channel, its outcome unknown.
	where     queue
	dirty     bool // changed in the current step
	adopted   bool // came with Adopt: forgotten as soon as it settles, when the window is bounded
	forgotten bool // settled and out of the idempotency window; dropped from Machine.all lazily
}

// inFlight reports whether an attempt of e is out on the channel, its
// outcome unknown: the entry is then in the flight heap.
func (e *entry) inFlight() bool { return e.where == inFlight }

func newEntry(r Record) *entry { return &entry{rec: r, ti: -1, xi: -1} }

// deadline is e's Record.Deadline, without copying the record and the
// config on the hot path of every step.
func (e *entry) deadline(c *Config) time.Time { return e.rec.AcceptedAt.Add(c.MaxAge) }

// Stats are counters for observation; nothing in the machine reads them.
type Stats struct {
	Accepted        int // new events accepted
	Duplicates      int // accepts of an ID already known
	Sends           int // attempts sent
	Probes          int // probes sent
	CircuitOpenings int // transitions to Open
	Ignored         int // inputs that changed nothing (stale outcomes, ...)
}

// Machine decides, for the events of one stream, what to persist, send,
// probe and acknowledge. It is not safe for concurrent use; it does no I/O
// and reads no clock.
type Machine struct {
	cfg     Config
	now     time.Time
	byID    idIndex  // every entry not forgotten, by ID (idindex.go)
	all     []*entry // every entry in Seq order, forgotten ones until compact drops them
	head    int      // all[:head] are settled: the strict head is at or after it
	nForgot int      // forgotten entries still in all
	lastSeq uint64
	queued  int // non-terminal entries
	flying  int // entries in flight

	// The indexes (index.go): what each step looks for, without a scan.
	flight heap // in flight, by timeout
	future heap // waiting, due after now, by NextAt
	due    heap // waiting and due, by Seq (independent order only)
	expiry heap // waiting, by deadline

	// The idempotency window: settled entries, oldest first, and the
	// instant each settled (kept only with KeepSettledFor, the one reader).
	settled   ring[*entry]
	settledAt ring[time.Time]

	// The rate limit (config.go): the last RateLimit attempt starts, and
	// whether the current step's dispatch stopped at the limit.
	starts   ring[time.Time]
	rateHeld bool

	circuit    Circuit
	streak     int // consecutive retryable failures, any event
	probeN     uint64
	probeOut   bool // probe probeN is in flight
	probeSent  time.Time
	probeFails int       // consecutive failed probes while open
	probeNext  time.Time // next probe while open and none is out

	stats Stats
	out   Batch    // the batch of the current step, handed out by flush
	dirty []*entry // the entries the current step changed

	// faults are the planted bugs switched on in this machine: none,
	// but in a build with the tag plant (see faults.go).
	faults faults
	// reverseDrain: the planted bug DrainOutOfOrder struck when the
	// circuit last closed.
	reverseDrain bool
}

// New returns a machine with no events, for a stream that has never had any.
// To restart a stream, use Recover with the store's records.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Machine{
		faults:  plantedFaults(),
		cfg:     cfg,
		byID:    idIndex{seed: cfg.Seed},
		circuit: Closed,
		flight:  heap{key: byNextAt, q: inFlight},
		future:  heap{key: byNextAt, q: inFuture},
		due:     heap{key: bySeq, q: inDue},
		expiry:  heap{key: byAccepted, q: inNone},
	}, nil
}

// Recover rebuilds a machine from the records the store holds, as at time
// now, and returns the first batch of the new incarnation.
//
// What memory knew is gone, and Recover assumes the worst of it: every
// attempt counted in a record may have reached the receiver, and its
// outcome will never be reported (a Result for it is ignored as stale).
// Such an event waits until its persisted NextAt and is then sent as the
// next attempt; if it has no attempts left it is dead (exhausted), and if
// its payload is over MaxPayloadBytes it cannot be sent and is dead
// (rejected), as Adopt makes it. Only records that can still be sent say
// anything about the channel: if one of them is parked, the circuit starts
// open and a probe goes out at once; otherwise, if one of them has an
// attempt behind it, the circuit starts checking (a probe, no send until
// it answers). A parked record that is already past MaxAge, out of
// attempts or oversized dies instead and opens nothing. The batch lists no
// circuit change for this: read Circuit() after Recover.
func Recover(cfg Config, now time.Time, records []Record) (*Machine, Batch, error) {
	m, err := New(cfg)
	if err != nil {
		return nil, Batch{}, err
	}
	if err := m.load(records, now); err != nil {
		return nil, Batch{}, err
	}
	// The old machine's starts are unknown: count a full window of them
	// now, the latest they can have been.
	for range cfg.RateLimit {
		m.starts.push(now)
	}
	// Only records that can still be sent say anything about the channel:
	// one out of attempts dies here, one that cannot be sent (its payload
	// is over the limit, as Adopt treats it) too, one past MaxAge dies in
	// advance.
	parked, troubled := false, false
	for _, e := range m.all {
		switch {
		case e.rec.State.Terminal():
			continue
		case e.rec.Attempts >= cfg.MaxAttempts:
			m.kill(e, Exhausted)
			continue
		case len(e.rec.Payload) > cfg.MaxPayloadBytes:
			m.kill(e, Rejected)
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

// load takes the store's records into a new machine, in Seq order, and
// indexes them as at time now.
func (m *Machine) load(records []Record, now time.Time) error {
	recs := slices.Clone(records)
	slices.SortFunc(recs, func(a, b Record) int { return cmpUint64(a.Seq, b.Seq) })
	m.all = make([]*entry, 0, len(recs))
	for i, r := range recs {
		if err := checkRecord(&r); err != nil {
			return err
		}
		if i > 0 && recs[i-1].Seq == r.Seq {
			return fmt.Errorf("%w: %q and %q share seq %d", ErrBadRecord, recs[i-1].ID, r.ID, r.Seq)
		}
		if m.byID.get(r.ID) != nil {
			return fmt.Errorf("%w: ID %q appears twice", ErrBadRecord, r.ID)
		}
		e := newEntry(r)
		m.byID.put(e)
		m.all = append(m.all, e)
		m.lastSeq = r.Seq
		if !r.State.Terminal() {
			m.queued++
		}
	}
	m.now = now
	for _, e := range m.all {
		if e.rec.State.Terminal() {
			m.settle(e)
		} else {
			m.place(e)
		}
	}
	return nil
}

func checkRecord(r *Record) error {
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
	case !r.State.valid():
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

// ProbeOut reports whether a health probe the machine sent awaits its
// result (until ProbeTimeout counts it failed).
func (m *Machine) ProbeOut() bool { return m.probeOut }

// Records returns a copy of every record, terminal ones included, in Seq
// order: what the store should hold after every batch was persisted.
//
// With an idempotency window (Config.KeepSettled, KeepSettledFor), settled
// records out of the window are no longer held, and so not returned.
func (m *Machine) Records() []Record {
	out := make([]Record, 0, len(m.all)-m.nForgot)
	for _, e := range m.all {
		if !e.forgotten {
			out = append(out, e.rec)
		}
	}
	return out
}

// InFlight returns the attempts whose outcome the machine awaits, in Seq
// order.
func (m *Machine) InFlight() []Send {
	var out []Send
	for _, e := range m.flight.items {
		out = append(out, Send{ID: e.rec.ID, Seq: e.rec.Seq, Attempt: e.rec.Attempts, Payload: e.rec.Payload})
	}
	slices.SortFunc(out, func(a, b Send) int { return cmpUint64(a.Seq, b.Seq) })
	return out
}

// accept takes a new event; e is the entry already known by its ID, if
// any, and h the hash of its ID.
func (m *Machine) accept(in *Accept, e *entry, h uint64) {
	if e != nil {
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
	e = newEntry(Record{
		ID:         in.ID,
		Seq:        m.lastSeq,
		Payload:    slices.Clone(in.Payload), // the caller may reuse its buffer
		AcceptedAt: in.At,
		State:      state,
		NextAt:     in.At,
	})
	m.byID.putHashed(e, h)
	m.all = append(m.all, e)
	m.place(e)
	m.queued++
	m.stats.Accepted++
	m.touch(e)
	m.out.Acks = append(m.out.Acks, Ack{ID: in.ID, Seq: e.rec.Seq})
}

// adopt takes over a record a shared store accepted. It is not refused
// when MaxQueued is reached: the store already acknowledged it. e is the
// entry already known by its ID, if any, and h the hash of its ID.
func (m *Machine) adopt(in *Adopt, e *entry, h uint64) {
	if e != nil {
		m.ignore("adopt %s, already known as seq %d", in.Record.ID, e.rec.Seq)
		return
	}
	e = newEntry(in.Record)
	e.rec.Payload = slices.Clone(in.Record.Payload) // the caller may reuse its buffer
	e.adopted = true
	r := &e.rec
	m.byID.putHashed(e, h)
	m.all = append(m.all, e)
	m.place(e)
	m.lastSeq = r.Seq
	m.queued++
	m.stats.Accepted++
	switch {
	case len(r.Payload) > m.cfg.MaxPayloadBytes:
		// The store acknowledged it, so it cannot be refused; it cannot be
		// sent either. It becomes a dead letter, kept with its reason.
		m.kill(e, Rejected)
	case m.circuit == Open:
		// setState(e, Parked, NotDead) but for its place(e), just done:
		// a pending entry is parked where it waits.
		e.rec.State = Parked
		m.touch(e)
	}
}

// result handles the outcome of an attempt. Only the outcome of the
// attempt in flight counts; anything else is ignored and said so, because
// acting on it could only send twice or move a state backwards. e is the
// entry in names, nil if unknown.
func (m *Machine) result(in *Result, e *entry) {
	switch {
	case e == nil:
		m.ignore("result for unknown event %s", in.ID)
		return
	case e.rec.State.Terminal():
		m.ignore("result for %s#%d, already %s", in.ID, in.Attempt, e.rec.State)
		return
	case !e.inFlight():
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
	m.flight.remove(e)
	m.flying--
}

// fail handles a retryable failure or a timeout of the attempt that was in
// flight.
func (m *Machine) fail(e *entry, retryAfter time.Duration) {
	m.streak++
	n := e.rec.Attempts
	switch {
	case n >= m.cfg.MaxAttempts && m.faults.poisonBlocksForever:
		e.rec.NextAt = m.now.Add(100 * 365 * 24 * time.Hour)
		m.setState(e, Retry, NotDead)
	case n >= m.cfg.MaxAttempts && !m.faults.unboundedRetries,
		n >= m.cfg.MaxAttempts-1 && m.faults.exhaustEarly:
		m.kill(e, Exhausted)
	default:
		next := m.now.Add(m.cfg.retryDelay(e.rec.ID, n, retryAfter))
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
	if m.faults.rateResetOnProbe {
		m.starts = ring[time.Time]{}
	}
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
		m.reverseDrain = m.faults.drainOutOfOrder
		// Release the backlog; dispatch drains it in acceptance order.
		// Every parked entry is waiting (in the expiry heap), but for one
		// sent while open under the planted bug SendWhileOpen. The heaps
		// are copied: setState moves entries within them.
		for _, e := range slices.Concat(m.flight.items, m.expiry.items) {
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
		// Every waiting entry is in the expiry heap, and parking moves
		// none out of it.
		for _, e := range m.expiry.items {
			m.setState(e, Parked, NotDead)
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
	// Attempts that timed out fail, then events past MaxAge die. (Each
	// entry's outcome depends only on itself and the circuit, and expiry
	// never touches the circuit, so the order between them is free; the
	// timeouts go in Seq order all the same.)
	m.timeouts()
	if !m.faults.poisonBlocksForever {
		for m.expiry.len() > 0 && !m.now.Before(m.expiry.items[0].deadline(&m.cfg)) {
			m.kill(m.expiry.items[0], Expired)
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
	m.migrate()
	m.rateHeld = false
	if m.circuit == Closed || m.faults.sendWhileOpen {
		m.dispatch()
	}
	m.forgetOld()
	m.compact()
	m.out.WakeAt = m.wakeAt()
}

// timeouts fails every attempt in flight whose timeout has come.
func (m *Machine) timeouts() {
	var timedOut []*entry
	for m.flight.len() > 0 && !m.now.Before(m.flight.items[0].rec.NextAt) {
		e := m.flight.items[0]
		m.land(e)
		timedOut = append(timedOut, e)
	}
	slices.SortFunc(timedOut, func(a, b *entry) int { return cmpUint64(a.rec.Seq, b.rec.Seq) })
	for _, e := range timedOut {
		m.fail(e, 0)
	}
}

// migrate moves the waiting entries that have become due out of the
// future heap.
func (m *Machine) migrate() {
	for m.future.len() > 0 && !m.now.Before(m.future.items[0].rec.NextAt) {
		e := m.future.items[0]
		m.future.remove(e)
		if m.cfg.Ordering == Independent {
			m.due.push(e)
		}
	}
}

// dispatch starts attempts, in acceptance order, while the window allows.
func (m *Machine) dispatch() {
	switch {
	case m.reverseDrain:
		m.dispatchScan(true)
	case m.cfg.Ordering == Strict:
		m.dispatchScan(false)
	default:
		m.dispatchDue()
	}
}

// dispatchScan walks the stream in acceptance order (reversed under the
// planted bug DrainOutOfOrder) from its head. In strict order the first
// entry that cannot go holds the rest, so a step looks at one entry.
func (m *Machine) dispatchScan(reverse bool) {
	for m.head < len(m.all) && m.all[m.head].rec.State.Terminal() {
		m.head++
	}
	i, end, step := m.head, len(m.all), 1
	if reverse {
		i, end, step = len(m.all)-1, m.head-1, -1
	}
	for ; i != end; i += step {
		e := m.all[i]
		if m.flying >= m.window() {
			return
		}
		if e.rec.State.Terminal() {
			continue
		}
		if e.inFlight() || m.now.Before(e.rec.NextAt) || m.stuck(e) {
			if m.cfg.Ordering == Strict {
				return // the head of the stream holds the rest
			}
			continue
		}
		if !m.rateAllows() {
			m.rateHeld = true
			return
		}
		m.start(e)
	}
}

// dispatchDue starts the due entries of an independent stream, lowest Seq
// first.
func (m *Machine) dispatchDue() {
	var stuck []*entry
	for m.flying < m.window() && m.due.len() > 0 {
		e := m.due.items[0]
		if m.stuck(e) {
			m.due.remove(e)
			stuck = append(stuck, e)
			continue
		}
		if !m.rateAllows() {
			m.rateHeld = true
			break
		}
		m.start(e)
	}
	for _, e := range stuck {
		m.due.push(e)
	}
}

// stuck is the planted bug PoisonBlocksForever: an exhausted event that
// is never sent nor given up.
func (m *Machine) stuck(e *entry) bool {
	return e.rec.Attempts >= m.cfg.MaxAttempts && m.faults.poisonBlocksForever
}

func (m *Machine) start(e *entry) {
	if e.rec.State == Parked && !m.faults.sendWhileOpen {
		panic(fmt.Sprintf("machine: invalid transition [parked -> send] for %s while the circuit is %s", e.rec.ID, m.circuit))
	}
	if e.rec.Attempts >= m.cfg.MaxAttempts && !m.faults.unboundedRetries {
		panic(fmt.Sprintf("machine: invalid transition [%s -> send] for %s: attempt %d would exceed MaxAttempts %d",
			e.rec.State, e.rec.ID, e.rec.Attempts+1, m.cfg.MaxAttempts))
	}
	m.unplace(e)
	e.rec.Attempts++
	e.rec.NextAt = m.now.Add(m.cfg.AttemptTimeout)
	m.flight.push(e)
	m.flying++
	m.started()
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

// wakeAt is the earliest instant after now at which time alone makes
// something due, zero if none.
//
// Every instant it looks at is after now, as advance leaves them: the
// attempts and the probe that had timed out by now landed, the events
// past MaxAge died, the due entries left the future heap, a probe went
// out if one was due, and what was sent or probed since times out after
// now (timeouts are positive). So none is compared with now again.
// TestModel checks that each WakeAt is after now, and TestDifferential
// that it is the reference's.
func (m *Machine) wakeAt() time.Time {
	var wake time.Time
	consider := func(t time.Time) {
		if wake.IsZero() || t.Before(wake) {
			wake = t
		}
	}
	if m.probeOut {
		consider(m.probeSent.Add(m.cfg.ProbeTimeout))
	} else if m.circuit == Open && m.queued > 0 {
		consider(m.probeNext)
	}
	// Each heap's top is its earliest instant.
	if m.flight.len() > 0 {
		consider(m.flight.items[0].rec.NextAt)
	}
	if m.expiry.len() > 0 {
		if !m.faults.poisonBlocksForever {
			consider(m.expiry.items[0].deadline(&m.cfg))
		} else {
			// The planted bug keeps expired events: the earliest
			// deadline still to come.
			for _, e := range m.expiry.items {
				if d := e.deadline(&m.cfg); d.After(m.now) {
					consider(d)
				}
			}
		}
	}
	if m.circuit == Closed && m.future.len() > 0 {
		consider(m.future.items[0].rec.NextAt)
	}
	if m.rateHeld {
		// A start the rate limit held back: rateNext is after now, or
		// dispatch would have started it.
		consider(m.rateNext())
	}
	return wake
}

func (m *Machine) setState(e *entry, s State, why DeadReason) {
	from := e.rec.State
	if from.Terminal() {
		panic(fmt.Sprintf("machine: invalid transition [%s -> %s] for %s: %s is terminal", from, s, e.rec.ID, from))
	}
	if e.inFlight() {
		panic(fmt.Sprintf("machine: invalid transition [%s -> %s] for %s while attempt %d is in flight", from, s, e.rec.ID, e.rec.Attempts))
	}
	e.rec.State = s
	e.rec.Reason = why
	if s.Terminal() {
		m.queued--
		m.unplace(e)
		m.settle(e)
	} else {
		m.place(e)
	}
	m.touch(e)
}

// place puts a waiting entry in the expiry heap, if it is not there, and
// in the time heap its NextAt calls for.
func (m *Machine) place(e *entry) {
	if e.xi < 0 {
		m.expiry.push(e)
	}
	want := inNone
	switch {
	case e.rec.NextAt.After(m.now):
		want = inFuture
	case m.cfg.Ordering == Independent:
		want = inDue
	}
	switch {
	case e.where == want && want == inFuture:
		m.future.fix(e) // its NextAt may have moved
	case e.where == want:
	default:
		m.unqueue(e)
		switch want {
		case inFuture:
			m.future.push(e)
		case inDue:
			m.due.push(e)
		}
	}
}

// unplace takes an entry out of the waiting indexes.
func (m *Machine) unplace(e *entry) {
	if e.xi >= 0 {
		m.expiry.remove(e)
	}
	m.unqueue(e)
}

func (m *Machine) unqueue(e *entry) {
	switch e.where {
	case inFuture:
		m.future.remove(e)
	case inDue:
		m.due.remove(e)
	}
}

// settle enters a settled entry in the idempotency window, or forgets it
// at once if it came with Adopt; the oldest beyond KeepSettled goes.
func (m *Machine) settle(e *entry) {
	if !m.cfg.forgets() {
		return
	}
	if e.adopted {
		m.forget(e)
		return
	}
	m.settled.push(e)
	if m.cfg.KeepSettledFor > 0 {
		m.settledAt.push(m.now)
	}
	if m.cfg.KeepSettled > 0 && m.settled.len() > m.cfg.KeepSettled {
		m.forgetOldest()
	}
}

// forgetOld forgets the settled entries older than KeepSettledFor, if
// that bound is set.
func (m *Machine) forgetOld() {
	if m.cfg.KeepSettledFor <= 0 {
		return
	}
	for m.settled.len() > 0 && !m.now.Before(m.settledAt.front().Add(m.cfg.KeepSettledFor)) {
		m.forgetOldest()
	}
}

// forgetOldest takes the entry settled longest ago out of the window and
// forgets it.
func (m *Machine) forgetOldest() {
	if m.cfg.KeepSettledFor > 0 {
		m.settledAt.pop()
	}
	m.forget(m.settled.pop())
}

func (m *Machine) forget(e *entry) {
	m.byID.del(e)
	e.forgotten = true
	m.nForgot++
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

// compact drops forgotten entries from all once they are half of it (and
// at least 64), so that memory follows the idempotency window, not
// history. Nothing else points to a forgotten entry: it left the ID index,
// the window's ring and every heap when it settled.
func (m *Machine) compact() {
	if m.nForgot < 64 || 2*m.nForgot < len(m.all) {
		return
	}
	kept, head := 0, 0
	for i, e := range m.all {
		if i == m.head {
			head = kept
		}
		if !e.forgotten {
			m.all[kept] = e
			kept++
		}
	}
	if m.head >= len(m.all) {
		head = kept
	}
	clear(m.all[kept:])
	m.all, m.head, m.nForgot = m.all[:kept], head, 0
}

// flush hands out the step's batch and starts the next one. The batch is
// the caller's: the machine keeps no reference to its lists.
func (m *Machine) flush() Batch {
	if len(m.dirty) > 0 {
		slices.SortFunc(m.dirty, func(a, b *entry) int { return cmpUint64(a.rec.Seq, b.rec.Seq) })
		m.out.Persist = make([]Record, len(m.dirty))
		for i, e := range m.dirty {
			m.out.Persist[i] = e.rec
			e.dirty = false
		}
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

package machine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/internal/plant"
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

// entryBlock is how many entries takeEntry carves from one allocation at
// most. A block of 1, 2 or 4 entries is a size class of its own, so its
// entries take no more room than as many 128-byte allocations. Larger
// blocks would save allocations but leave more unused at the end of a
// machine's life, and the simulator starts many machines.
const entryBlock = 4

// blockSize is the size of a machine's next block, for a machine that
// holds n entries: n, but at least least and at most most. A machine of a
// few events (a simulator starts dozens) then leaves little of its last
// block unused, no more than it holds, and a large one allocates once
// per most.
func blockSize(n, least, most int) int { return min(most, max(least, n)) }

// takeEntry is newEntry, reusing an entry compact dropped if there is
// one, or else carving it from a block (see blockSize): one allocation
// per entryBlock new entries, not one each. An entry never leaves its
// machine's structures but for the free list, so a block lives no longer
// than the machine's entries in it.
func (m *Machine) takeEntry(r *Record) *entry {
	var e *entry
	if n := len(m.free); n > 0 {
		e = m.free[n-1]
		m.free[n-1] = nil
		m.free = m.free[:n-1]
	} else {
		if len(m.entries) == 0 {
			m.entries = make([]entry, blockSize(len(m.all), 1, entryBlock))
		}
		e = &m.entries[0]
		m.entries = m.entries[1:]
	}
	*e = entry{rec: *r, ti: -1, xi: -1}
	return e
}

// deadline is e's Record.Deadline, without copying the record and the
// config on the hot path of every step.
func (e *entry) deadline(c *Config) time.Time { return e.rec.AcceptedAt.Add(c.maxAge()) }

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
	flight  heap // in flight, by timeout
	future  heap // waiting, due after now, by NextAt
	due     heap // waiting and due, by Seq (independent order only)
	expiry  heap // waiting, by deadline
	scratch []*entry

	// The deadline of the expiry heap's top as expiryDeadline last
	// computed it, and the Seq of the record it is for.
	topSeq      uint64
	topDeadline time.Time

	// The idempotency window: settled entries, oldest first, and the
	// instant each settled (kept only with KeepSettledFor, the one reader).
	settled   ring[*entry]
	settledAt ring[time.Time]

	circuit    Circuit
	streak     int // consecutive retryable failures, any event
	probeN     uint64
	probeOut   bool // probe probeN is in flight
	probeSent  time.Time
	probeFails int       // consecutive failed probes while open
	probeNext  time.Time // next probe while open and none is out

	stats   Stats
	out     Batch
	dirty   []*entry
	free    []*entry // forgotten entries compact dropped, for takeEntry to reuse
	entries []entry  // what is left of takeEntry's block, never used yet
	block   []Record // what is left of persistRoom's block, never handed out yet
	bytes   []byte   // what is left of clonePayload's block, never handed out yet

	reverseDrain bool // planted bug DrainOutOfOrder only
}

// New returns a machine with no events, for a stream that has never had any.
// To restart a stream, use Recover with the store's records.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Machine{
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
	var b Batch
	m.flush(&b)
	return m, b, nil
}

// load takes the store's records into a new machine, in Seq order, and
// indexes them as at time now.
func (m *Machine) load(records []Record, now time.Time) error {
	recs := records
	if !increasingSeq(records) {
		recs = slices.Clone(records)
		slices.SortFunc(recs, func(a, b Record) int { return cmpUint64(a.Seq, b.Seq) })
	}
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
		if plant.On(plant.RecoveryForgetsInFlight) && !r.State.Terminal() && r.Attempts > 0 {
			continue
		}
		e := m.takeEntry(&r)
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

// increasingSeq reports whether records are in strictly increasing Seq
// order, as a store hands them: load then reads them where they are,
// without the copy and the sort. Anything else (a tie included, whose
// order the sort decides) takes the sorted copy, as before.
func increasingSeq(records []Record) bool {
	for i := 1; i < len(records); i++ {
		if records[i-1].Seq >= records[i].Seq {
			return false
		}
	}
	return true
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
	e = m.takeEntry(&Record{
		ID:         in.ID,
		Seq:        m.lastSeq,
		Payload:    m.clonePayload(in.Payload),
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

// payloadBlock is how many bytes clonePayload carves small payloads
// from at most; a payload over payloadBlock/8 bytes gets an allocation of
// its own. A block is sized by blockSize, at 32 bytes per entry held.
const payloadBlock = 256

// clonePayload is slices.Clone (nil stays nil, empty stays empty), with a
// small payload carved from a shared block instead of allocated alone: an
// accepted event then costs no allocation of its own for its payload. No
// one writes to a payload once accepted (see Record), and each is capped
// at its own length, so that an append to one cannot reach the next. A
// payload that lives on keeps its block alive: no more than payloadBlock
// bytes for one payload of at most payloadBlock/8.
func (m *Machine) clonePayload(p []byte) []byte {
	n := len(p)
	switch {
	case p == nil:
		return nil
	case n == 0 || n > payloadBlock/8:
		c := make([]byte, n)
		copy(c, p)
		return c
	}
	if len(m.bytes) < n {
		m.bytes = make([]byte, blockSize(32*len(m.all), payloadBlock/8, payloadBlock))
	}
	c := m.bytes[:n:n]
	m.bytes = m.bytes[n:]
	copy(c, p)
	return c
}

// adopt takes over a record a shared store accepted. It is not refused
// when MaxQueued is reached: the store already acknowledged it. e is the
// entry already known by its ID, if any, and h the hash of its ID.
func (m *Machine) adopt(in *Adopt, e *entry, h uint64) {
	if e != nil {
		m.ignore("adopt %s, already known as seq %d", in.Record.ID, e.rec.Seq)
		return
	}
	// The record goes straight into the entry, then its payload is
	// replaced by a copy: a record is 112 bytes, not worth copying twice.
	e = m.takeEntry(&in.Record)
	e.rec.Payload = m.clonePayload(in.Record.Payload)
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
	case n >= m.cfg.MaxAttempts && plant.On(plant.PoisonBlocksForever):
		e.rec.NextAt = m.now.Add(100 * 365 * 24 * time.Hour)
		m.setState(e, Retry, NotDead)
	case n >= m.cfg.MaxAttempts && !plant.On(plant.UnboundedRetries),
		n >= m.cfg.MaxAttempts-1 && plant.On(plant.ExhaustEarly):
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
		m.reverseDrain = plant.On(plant.DrainOutOfOrder)
		// Release the backlog; dispatch drains it in acceptance order.
		// Every parked entry is waiting (in the expiry heap), but for one
		// sent while open under the planted bug SendWhileOpen.
		m.scratch = append(append(m.scratch[:0], m.flight.items...), m.expiry.items...)
		for _, e := range m.scratch {
			if e.rec.State == Parked {
				e.rec.NextAt = m.now
				m.setState(e, Pending, NotDead)
			}
		}
		clear(m.scratch)
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
	// timeouts go in Seq order all the same.) Each kind of work is looked
	// for here, where the check inlines: most steps have none of it to do.
	if m.flight.len() > 0 && !m.now.Before(m.flight.items[0].rec.NextAt) {
		m.timeouts()
	}
	if !plant.On(plant.PoisonBlocksForever) {
		for m.expiry.len() > 0 && !m.now.Before(m.expiryDeadline()) {
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
	if m.future.len() > 0 {
		m.migrate()
	}
	if m.circuit == Closed || plant.On(plant.SendWhileOpen) {
		m.dispatch()
	}
	if m.cfg.KeepSettledFor > 0 {
		m.forgetOld()
	}
	if m.compactDue() {
		m.compact()
	}
	m.out.WakeAt = m.wakeAt()
}

// expiryDeadline is the deadline of the expiry heap's top, which must
// exist. Every step looks at it twice (advance, wakeAt) but the top
// changes far less often, so its deadline is kept with the Seq it is for,
// and time.Time.Add runs only for a new top. A Seq names one record for
// the machine's whole life (a new record's Seq is above every Seq the
// machine knew, and none is 0), and a record's AcceptedAt never changes.
func (m *Machine) expiryDeadline() time.Time {
	if e := m.expiry.items[0]; e.rec.Seq != m.topSeq {
		m.newTop(e) // apart, so that the check inlines
	}
	return m.topDeadline
}

// newTop computes the deadline of e, the expiry heap's new top.
func (m *Machine) newTop(e *entry) {
	m.topSeq, m.topDeadline = e.rec.Seq, e.deadline(&m.cfg)
}

// timeouts fails every attempt in flight whose timeout has come.
func (m *Machine) timeouts() {
	m.scratch = m.scratch[:0]
	for m.flight.len() > 0 && !m.now.Before(m.flight.items[0].rec.NextAt) {
		e := m.flight.items[0]
		m.land(e)
		m.scratch = append(m.scratch, e)
	}
	if len(m.scratch) > 1 {
		slices.SortFunc(m.scratch, func(a, b *entry) int { return cmpUint64(a.rec.Seq, b.rec.Seq) })
	}
	for _, e := range m.scratch {
		m.fail(e, 0)
	}
	clear(m.scratch)
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
		if m.flying >= m.cfg.window() {
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
		m.start(e)
	}
}

// dispatchDue starts the due entries of an independent stream, lowest Seq
// first.
func (m *Machine) dispatchDue() {
	m.scratch = m.scratch[:0]
	for m.flying < m.cfg.window() && m.due.len() > 0 {
		e := m.due.items[0]
		if m.stuck(e) {
			m.due.remove(e)
			m.scratch = append(m.scratch, e)
			continue
		}
		m.start(e)
	}
	for _, e := range m.scratch {
		m.due.push(e)
	}
	clear(m.scratch)
}

// stuck is the planted bug PoisonBlocksForever: an exhausted event that
// is never sent nor given up.
func (m *Machine) stuck(e *entry) bool {
	return e.rec.Attempts >= m.cfg.MaxAttempts && plant.On(plant.PoisonBlocksForever)
}

func (m *Machine) start(e *entry) {
	if e.rec.State == Parked && !plant.On(plant.SendWhileOpen) {
		panic(fmt.Sprintf("machine: invalid transition [parked -> send] for %s while the circuit is %s", e.rec.ID, m.circuit))
	}
	if e.rec.Attempts >= m.cfg.MaxAttempts && !plant.On(plant.UnboundedRetries) {
		panic(fmt.Sprintf("machine: invalid transition [%s -> send] for %s: attempt %d would exceed MaxAttempts %d",
			e.rec.State, e.rec.ID, e.rec.Attempts+1, m.cfg.MaxAttempts))
	}
	m.unplace(e)
	e.rec.Attempts++
	e.rec.NextAt = m.now.Add(m.cfg.AttemptTimeout)
	m.flight.push(e)
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

// wakeAt is the earliest instant after now at which time alone makes
// something due, zero if none.
//
// Every instant it looks at is after now, as advance leaves them: the
// attempts and the probe that had timed out by now landed, the events
// past MaxAge died, the due entries left the future heap, a probe went
// out if one was due, and what was sent or probed since times out after
// now (timeouts are positive). So none is compared with now again: that
// was two comparisons a step. TestModel checks that each WakeAt is after
// now, and TestDifferential that it is the reference's.
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
		if !plant.On(plant.PoisonBlocksForever) {
			consider(m.expiryDeadline())
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

// forgetOld forgets the settled entries older than KeepSettledFor.
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

// compactDue reports whether forgotten entries are half of all (and at
// least 64), when compact drops them.
func (m *Machine) compactDue() bool { return m.nForgot >= 64 && 2*m.nForgot >= len(m.all) }

// compact drops forgotten entries from all once they are half of it (see
// compactDue), so that memory follows the idempotency window, not history. Nothing else
// points to a forgotten entry (it left the ID index, the window's ring
// and every heap when it settled), so compact keeps the ones it drops for
// takeEntry to reuse: in a steady stream with a window, each accept then
// reuses an entry instead of allocating one, and the free list holds no
// more than all held before it was compacted.
func (m *Machine) compact() {
	kept, head := 0, 0
	for i, e := range m.all {
		if i == m.head {
			head = kept
		}
		switch {
		case !e.forgotten:
			m.all[kept] = e
			kept++
		case !e.dirty: // one the batch of this step persists is read by flush
			*e = entry{} // drop its ID and payload
			m.free = append(m.free, e)
		}
	}
	if m.head >= len(m.all) {
		head = kept
	}
	clear(m.all[kept:])
	m.all, m.head, m.nForgot = m.all[:kept], head, 0
}

// flush hands the step's batch out into out, a zero Batch, and starts the
// next one.
//
// The batch is built in m.out. A list that holds something is handed out
// and is the caller's until it recycles it; an empty one is handed out as
// nil, as it always was, and its buffer stays in m.out for the next batch.
// So between steps m.out holds only empty buffers, and Recycle can put a
// handed-back list straight there.
func (m *Machine) flush(out *Batch) {
	if len(m.dirty) > 1 { // most steps touch one entry
		slices.SortFunc(m.dirty, func(a, b *entry) int { return cmpUint64(a.rec.Seq, b.rec.Seq) })
	}
	// Room for every record at once (Persist is empty here: only flush
	// fills it), so that a caller that does not recycle its batches (one
	// that keeps them; the worker recycles) pays one allocation per batch
	// and not one per doubling.
	if cap(m.out.Persist) < len(m.dirty) {
		m.out.Persist = m.persistRoom(len(m.dirty))
	}
	persist := m.out.Persist[:len(m.dirty)]
	for i, e := range m.dirty {
		persist[i] = e.rec
		e.dirty = false
	}
	m.out.Persist = persist
	m.dirty = m.dirty[:0]
	// out is the zero Batch Step returns: only what holds something is
	// written to it.
	handOut(&out.Persist, &m.out.Persist)
	handOut(&out.Acks, &m.out.Acks)
	handOut(&out.Sends, &m.out.Sends)
	handOut(&out.Probes, &m.out.Probes)
	handOut(&out.Circuit, &m.out.Circuit)
	out.WakeAt = m.out.WakeAt
	if m.out.Ignored != "" {
		out.Ignored, m.out.Ignored = m.out.Ignored, ""
	}
}

// persistBlock is how many records persistRoom carves from one
// allocation. Small: a caller that recycles (the worker) asks a new
// machine for a list once and reuses it, so most of a larger block was
// never used (16 cost a simulated swarm run 23% more bytes).
const persistBlock = 4

// persistRoom returns an empty list with room for n records. A caller
// may keep a batch's Persist for good instead of recycling it, so a list is
// never written again once handed out; but the lists need not be
// allocated one by one: small ones are carved from a shared block, each
// capped at its own room so that an append past it cannot reach the
// next one's. A kept list keeps its block alive, no more than a block.
func (m *Machine) persistRoom(n int) []Record {
	if n > persistBlock/4 {
		return make([]Record, 0, n)
	}
	if len(m.block) < n {
		m.block = make([]Record, persistBlock)
	}
	room := m.block[:0:n]
	m.block = m.block[n:]
	return room
}

// handOut settles who owns a list after a step: the caller if it holds
// something (the machine lets go of it), the machine if it is empty (the
// caller's stays nil).
func handOut[T any](out, kept *[]T) {
	if len(*kept) > 0 {
		*out, *kept = *kept, nil
	}
}

// Recycle hands back a Batch the caller has acted on, so that the
// machine reuses its slices for a later batch instead of allocating new
// ones: a runtime that recycles every batch makes a steady step allocate
// nothing but the accepted event. After Recycle the caller must not read
// b again, and must recycle a batch at most once. Recycling is optional.
func (m *Machine) Recycle(b Batch) {
	// Drop the IDs and payloads the lists point to. Field by field, not
	// clear: a list holds an element or two, and clear of a list of
	// pointerful structs is a runtime call that costs more than the stores.
	for i := range b.Persist {
		b.Persist[i].ID, b.Persist[i].Payload = "", nil
	}
	for i := range b.Sends {
		b.Sends[i].ID, b.Sends[i].Payload = "", nil
	}
	for i := range b.Acks {
		b.Acks[i].ID = ""
	}
	// Between steps the next batch's lists are empty (see flush): a list
	// with no buffer takes the one handed back.
	takeBack(&m.out.Persist, b.Persist)
	takeBack(&m.out.Acks, b.Acks)
	takeBack(&m.out.Sends, b.Sends)
	takeBack(&m.out.Probes, b.Probes)
	takeBack(&m.out.Circuit, b.Circuit)
}

// takeBack makes the buffer of a handed-back list the next batch's list,
// if it has one and that list has none. (Most lists of a batch are nil:
// storing nil over nil cost Recycle a third of its time.)
func takeBack[T any](next *[]T, back []T) {
	if cap(back) > 0 && cap(*next) == 0 {
		*next = back[:0]
	}
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

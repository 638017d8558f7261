package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Store is an in-memory store.Store. The zero value is not usable; build
// one with New.
type Store struct {
	// mu serialises every method. Enqueue, Pending and Save, which a
	// simulated run calls hundreds of times, unlock by hand around a
	// function doing the work, not by defer, which cost each call more
	// than the lock: nothing under the lock panics but the clock and the
	// failure injector the store was given.
	mu          sync.Mutex
	now         func() time.Time
	unavailable func() bool

	streams map[string]*stream
	// byName is every stream of streams, sorted by name: the order
	// ClaimDue and Streams take, kept rather than sorted on every call.
	// Streams are never removed, so a new one is inserted in its place.
	byName []*stream
	// ids locates every record by ID, across streams: IDs are unique in
	// the whole store, not per stream.
	ids map[string]*rec
	// lastToken is the token of the latest lease granted, on any stream,
	// or taken by a replay. Tokens are global so that a token alone orders
	// every grant.
	lastToken uint64
	// granted remembers the stream of each grant by its token modulo its
	// length: workers present a lease on every Renew, Pending and Save,
	// and finding its stream here costs a compare where s.streams costs a
	// string hash. A slot may be stale or overwritten; held trusts it only
	// when the stream's current token and name are the lease's, and asks
	// s.streams otherwise.
	granted [grantedSlots]*stream
	// found remembers the records Save found by ID, each in a slot
	// picked from the address of its ID's bytes: a worker names a record
	// by the very string Pending gave it, which is the one Enqueue kept,
	// and comparing addresses costs a fraction of hashing the ID. A slot
	// is trusted only if its record is not deleted and its ID is the
	// same string, not merely an equal one; Save asks s.ids otherwise.
	found [foundSlots]*rec
	// named is found for streams, by the address of their name's bytes:
	// a producer names a stream in the same string each time. Streams
	// are never removed, so a slot needs no more than the same name.
	named [namedSlots]*stream
	// batches counts the Saves that got past the lease check, and batch
	// holds the records of the current one: Save's scratch, kept to be
	// reused, empty between calls.
	batches uint64
	batch   []*rec
	// claimable lets ClaimDue answer "nothing" without a scan while no
	// stream can be claimable yet (see claimBound).
	claimable claimBound
	// slab is where newRec cuts the next records from, and blocks the
	// first slabs it allocated (at most keptBlocks), of which the first
	// reused are in use: Reset zeroes them for the next records, which
	// it can since a record never leaves the store, only copies of it.
	slab   []rec
	blocks [][]rec
	reused int
	// spare are streams of before the last Reset, emptied, that stream
	// hands out again with the room their records took.
	spare []*stream
	// made counts the records newRec made since New or Reset: Reset
	// drops a map that many records may have grown past what it keeps.
	made int
	// kept is where copyBytes cuts the payloads the store keeps from, and
	// handed the copies it hands out: apart, so that a chunk of copies
	// dies with the callers' use of them, not with the store.
	kept, handed []byte
	// pages is where page cuts Pending's next answers from.
	pages []machine.Record
	// plain turns every shortcut off (granted and held's valid case, found,
	// named, Pending's nothing-new answer, Save's marks, ClaimDue's
	// bound and due summaries, toMachine's reading in place): set only
	// by the tests, which run a plain store beside a normal one and
	// compare every answer.
	plain bool
}

// grantedSlots is the length of Store.granted: more than the streams a
// simulated fleet holds at once, whose tokens are mostly consecutive.
const grantedSlots = 64

// foundSlots is the length of Store.found: twice or so a standard
// simulated run's events (40 to 80), so that few of them share a slot.
// Twice as many slots found a few more records without a map lookup, but
// made New's Store 3 KB where it is 2 (see TestStoreFitsSizeClass).
const (
	foundBits  = 7
	foundSlots = 1 << foundBits
)

// namedSlots is the length of Store.named.
const (
	namedBits  = 4
	namedSlots = 1 << namedBits
)

// stream holds one stream's records and its current lease. A stream can
// exist with no records, when a lease was acquired on it before anything
// was enqueued, or once retention deleted them all.
type stream struct {
	name    string
	recs    []*rec // in Seq order; retention leaves gaps
	lastSeq uint64 // the highest Seq ever assigned: never reused
	lease   store.Held
	due     dueSummary // of recs, for ClaimDue (see Store.dueAt)
}

// rec is a stored record, with what Save needs to find a record named
// twice in one batch without a set of the batch's IDs.
type rec struct {
	store.Record
	// batch is the number (Store.batches) of the latest Save that named
	// the record, or deleted once it left s.ids, so that Store.found never
	// answers with it again. (A field of its own for that made a record
	// 264 bytes, and newRec's slab of 16 a size class of 4864 bytes where
	// it was 4096: see TestRecFitsSlab.)
	batch uint64
}

// deleted is rec.batch once the record is deleted: a Save number no
// store reaches.
const deleted = math.MaxUint64

var (
	_ store.Store  = (*Store)(nil)
	_ store.Pinger = (*Store)(nil)
)

// idsHint is the room New makes for IDs: about a simulated run's events.
const idsHint = 64

// batchHint is the room New makes in Save's scratch.
const batchHint = 8

// New returns an empty store whose authoritative clock is now. It panics
// if now is nil: a store without a clock cannot judge a lease.
func New(now func() time.Time) *Store {
	if now == nil {
		panic("memstore.New: nil clock")
	}
	return &Store{
		now:     now,
		streams: make(map[string]*stream),
		// Room for a simulated run's events from the start: growing the
		// map from empty cost a simulated Enqueue more than the rest of
		// it.
		ids: make(map[string]*rec, idsHint),
		// Room for a worker's batches, which grew the scratch from
		// empty at a simulated run's first Saves.
		batch: make([]*rec, 0, batchHint),
	}
}

// SetUnavailable installs f as the store's failure injector: while f
// returns true, every method that writes (Enqueue, ClaimDue, Acquire,
// Renew, Release, Save, Replay, Discard, DeleteSettled) fails with an
// error wrapping store.ErrUnavailable and changes nothing. Reads (Pending,
// Get, DeadLetters, Records, Streams) keep working. f is called once per
// write, after the argument checks, with the store's lock held, so it
// must not call the store. A nil f makes the store available again.
func (s *Store) SetUnavailable(f func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = f
}

// Records returns a copy of every record of stream, in Seq order and in
// the machine's form, whatever its state and whoever holds the stream. It
// is for the simulator and tests, which must see what the store holds
// without taking a lease.
func (s *Store) Records(streamName string) []machine.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[streamName]
	if st == nil {
		return nil
	}
	return s.appendRecords(make([]machine.Record, 0, len(st.recs)), st)
}

// AppendRecords appends what Records returns to dst and returns the
// extended slice: Records for a caller that reads stream after stream
// into one buffer it reuses (the simulator, at the end of every run).
func (s *Store) AppendRecords(dst []machine.Record, streamName string) []machine.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.streams[streamName]; st != nil {
		dst = s.appendRecords(dst, st)
	}
	return dst
}

func (s *Store) appendRecords(dst []machine.Record, st *stream) []machine.Record {
	dst = slices.Grow(dst, len(st.recs))
	for _, r := range st.recs {
		dst = append(dst, s.toMachine(r))
	}
	return dst
}

// Streams returns the names of the streams that hold at least one record,
// sorted.
func (s *Store) Streams() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.byName))
	for _, st := range s.byName {
		if len(st.recs) > 0 {
			names = append(names, st.name)
		}
	}
	return names
}

// StateCounts returns how many records of stream are in each state,
// indexed by machine.State, whoever holds the stream. It is Records for a
// caller that needs only the states (is everything settled? which states
// were reached?), without copying a record.
func (s *Store) StateCounts(streamName string) [machine.Dead + 1]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n [machine.Dead + 1]int
	if st := s.streams[streamName]; st != nil {
		for _, r := range st.recs {
			n[r.State]++
		}
	}
	return n
}

// State returns the state of the record with id, and false if there is
// none: Get for a caller that needs only the state, without copying the
// record or building an error.
func (s *Store) State(id string) (machine.State, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.ids[id]; ok {
		return r.State, true
	}
	return 0, false
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, streamName, id string, payload []byte) (rec store.Record, created bool, err error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, false, err
	}
	if err := store.CheckEnqueue(streamName, id); err != nil {
		return store.Record{}, false, err
	}
	s.mu.Lock()
	created, err = s.enqueue(&rec, streamName, id, payload)
	s.mu.Unlock()
	return rec, created, err
}

// enqueue is Enqueue under s.mu. It writes the record Enqueue returns
// into *out, which is Enqueue's own result: built in place, a record of
// 250 bytes is not copied from call to call on its way out.
func (s *Store) enqueue(out *store.Record, streamName, id string, payload []byte) (bool, error) {
	now := s.clock()
	if err := s.checkAvailable("enqueue"); err != nil {
		if plant.On(plant.AckBeforePersist) {
			// The planted bug: the producer is told yes before the write,
			// which the outage then loses.
			*out = store.Record{Event: store.Event{Stream: streamName, ID: id, Payload: bytes.Clone(payload), AcceptedAt: now}}
			return true, nil
		}
		return false, err
	}
	if r, ok := s.ids[id]; ok && !plant.On(plant.AcceptNotIdempotent) {
		if r.Stream != streamName {
			return false, fmt.Errorf("%w: enqueue %q on stream %q: the ID belongs to stream %q", store.ErrBadArgument, id, streamName, r.Stream)
		}
		s.cloneInto(out, &r.Record)
		return false, nil
	}
	st := s.stream(streamName)
	st.lastSeq++
	// Field by field into the zero record: a composite literal was built
	// aside and then copied, all 250 bytes of it.
	r := s.newRec()
	r.Stream, r.ID, r.Seq, r.Payload, r.AcceptedAt = streamName, id, st.lastSeq, copyBytes(&s.kept, payload), now
	r.State, r.NextAt = machine.Pending, now
	st.recs = append(st.recs, r)
	s.ids[id] = r
	s.found[slotOf(id, foundBits)] = r // the worker will save it under this ID
	s.changed(st)
	s.cloneInto(out, &r.Record)
	return true, nil
}

// newRec returns a zero record, cut from s.slab: records are allocated
// recSlab at a time, one allocation where Enqueue made one each. A
// deleted record's memory goes back only with the rest of its slab,
// which an in-memory store can afford.
func (s *Store) newRec() *rec {
	if len(s.slab) == 0 {
		s.slab = s.nextBlock()
	}
	r := &s.slab[0]
	s.slab = s.slab[1:]
	s.made++
	return r
}

// nextBlock returns recSlab zero records: a block a past Reset zeroed if
// one is left, else a new one, kept for later Resets while fewer than
// keptBlocks are.
func (s *Store) nextBlock() []rec {
	if s.reused < len(s.blocks) {
		s.reused++
		return s.blocks[s.reused-1]
	}
	b := make([]rec, recSlab)
	if len(s.blocks) < keptBlocks {
		s.blocks = append(s.blocks, b)
		s.reused++
	}
	return b
}

// spareStreams empties the streams of s.byName for stream to hand out
// again, each with room for its records, as long as those are few.
// Streams never leave the store: a lease names its stream by name.
func (s *Store) spareStreams() {
	for _, st := range s.byName {
		if len(s.spare) == keptStreams {
			return
		}
		if cap(st.recs) > keptBlocks*recSlab {
			continue // a long run's: room no later run is likely to need
		}
		clear(st.recs)
		*st = stream{recs: st.recs[:0]}
		s.spare = append(s.spare, st)
	}
}

// keptStreams is how many emptied streams Reset keeps for stream.
const keptStreams = 32

// recSlab is how many records newRec allocates at once.
const recSlab = 16

// keptBlocks bounds the records a Store keeps room for across a Reset
// (keptBlocks*recSlab, 64 KB): a few times a standard simulated run's
// events, so that one long run does not leave room for all of its
// records to every later run.
const keptBlocks = 16

// Reset empties s for reuse, as if New(now) had just built it and
// SetUnavailable(unavailable) had been called, keeping only memory no
// caller can hold: the blocks records are cut from (at most keptBlocks;
// a record is only ever handed out as a copy), the maps of streams and
// IDs (cleared, unless more records or streams than the blocks hold may
// have grown them), emptied streams with room for their records (at
// most keptStreams) and Save's scratch. The chunks of payload copies and
// Pending's pages were handed out, and are not reused. It panics if now
// is nil, as New does.
func (s *Store) Reset(now func() time.Time, unavailable func() bool) {
	if now == nil {
		panic("memstore.Reset: nil clock")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now, s.unavailable = now, unavailable
	for _, b := range s.blocks[:s.reused] {
		clear(b) // what the records point to, and a zero record for newRec
	}
	s.slab, s.reused = nil, 0
	const keptRecs = keptBlocks * recSlab
	s.spareStreams()
	if s.made > keptRecs || len(s.streams) > keptRecs {
		s.streams, s.ids, s.byName = make(map[string]*stream), make(map[string]*rec, idsHint), nil
	} else {
		clear(s.streams)
		clear(s.ids)
		clear(s.byName)
		s.byName = s.byName[:0]
	}
	s.made = 0
	s.lastToken, s.batches = 0, 0
	s.granted, s.found, s.named = [grantedSlots]*stream{}, [foundSlots]*rec{}, [namedSlots]*stream{}
	if cap(s.batch) > keptRecs {
		s.batch = make([]*rec, 0, batchHint) // Save clears it after each call
	}
	s.claimable = claimBound{}
	// The payloads the store keeps are only ever handed out as copies
	// (copyBytes into handed): the chunk they were cut from is free.
	s.kept = s.kept[:0]
	s.handed, s.pages = nil, nil
}

// ClaimDue implements store.Store.
func (s *Store) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckName("claim due", "owner", owner); err != nil {
		return nil, err
	}
	switch {
	case ttl <= 0:
		return nil, fmt.Errorf("%w: claim due for %q: ttl %v is not positive", store.ErrBadArgument, owner, ttl)
	case max < 1:
		return nil, fmt.Errorf("%w: claim due for %q: max %d is below 1", store.ErrBadArgument, owner, max)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("claim due"); err != nil {
		return nil, err
	}
	var out []store.Lease
	if s.claimable.after(now) && !s.plain {
		return out, nil // workers ask every poll; most polls find nothing
	}
	// The scan learns, besides what it grants, when the next call could
	// find something: every stream it passes over is claimable no sooner
	// than its lease expires or its earliest record comes due.
	next := claimBound{known: true, from: endOfTime}
	// Name order, not map order: which streams a claimer gets must not
	// depend on the run. A stream with no record has nothing due.
	for _, st := range s.byName {
		if len(out) == max {
			next.known = false // the streams left were not looked at
			break
		}
		if len(st.recs) == 0 || st.due.settled() && !s.plain {
			continue // nothing will come due before a change lowers the bound
		}
		if st.lease.ValidAt(now) {
			next.lower(st.lease.Expires)
			continue
		}
		if due, at := s.dueAt(st, now); !due {
			next.lower(at)
			continue
		}
		out = append(out, s.grant(st, owner, now, ttl))
		next.lower(st.lease.Expires)
	}
	s.claimable = next
	return out, nil
}

// Acquire implements store.Store.
func (s *Store) Acquire(ctx context.Context, streamName, owner string, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	if err := store.CheckName("acquire", "stream", streamName); err != nil {
		return store.Lease{}, err
	}
	if err := store.CheckName("acquire", "owner", owner); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, fmt.Errorf("%w: acquire stream %q: ttl %v is not positive", store.ErrBadArgument, streamName, ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("acquire"); err != nil {
		return store.Lease{}, err
	}
	st := s.stream(streamName)
	if st.lease.ValidAt(now) {
		// The same owner is refused too: it must Renew, so that a lease
		// is only ever extended under the token it was granted with.
		return store.Lease{}, fmt.Errorf("%w: acquire stream %q for %q: held by %q with token %d until %s",
			store.ErrLeaseHeld, streamName, owner, st.lease.Owner, st.lease.Token, st.lease.Expires.Format(time.RFC3339Nano))
	}
	return s.grant(st, owner, now, ttl), nil
}

// Renew implements store.Store.
func (s *Store) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, fmt.Errorf("%w: renew stream %q: ttl %v is not positive", store.ErrBadArgument, l.Stream, ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("renew"); err != nil {
		return store.Lease{}, err
	}
	st, err := s.held("renew", &l, now)
	if err != nil {
		return store.Lease{}, err
	}
	if until := now.Add(ttl); until.After(st.lease.Expires) || plant.On(plant.RenewShrinks) {
		st.lease.Expires = until
		s.claimable.lower(until) // it never falls, but for the planted bug
	}
	return st.lease.Lease(l.Stream), nil
}

// Release implements store.Store.
func (s *Store) Release(ctx context.Context, l store.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("release"); err != nil {
		return err
	}
	st, err := s.held("release", &l, now)
	if err != nil {
		return err
	}
	st.lease.Released = true
	s.claimable.known = false // st is free at once if it has due work
	return nil
}

// Pending implements store.Store.
func (s *Store) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: pending on stream %q: limit %d is below 1", store.ErrBadArgument, l.Stream, limit)
	}
	s.mu.Lock()
	page, err := s.pending(&l, after, limit)
	s.mu.Unlock()
	return page, err
}

// pending is Pending under s.mu. It judges the lease at the clock's
// reading as it comes, not rounded (clock): Pending keeps no instant, and
// held's valid case compares the reading only with the lease's end, which
// holds no monotonic reading, so Before compares wall times either way.
// held rounds it for anything else. Pending is the owner's poll, and the
// rounding's call cost it more than the rest of a nothing-new answer.
func (s *Store) pending(l *store.Lease, after uint64, limit int) ([]machine.Record, error) {
	st, err := s.held("pending", l, s.now())
	if err != nil {
		return nil, err
	}
	if after+1 > st.lastSeq && !s.plain {
		// Nothing was ever enqueued above after: the owner's poll for
		// new records, answered without a search. (after+1 wraps to 0
		// for MaxUint64, which goes the long way as it always did.)
		return nil, nil
	}
	// Two passes: the first finds the page, so that the second can copy
	// it into a slice of its length (from page; the payloads come from
	// copyBytes).
	recs := st.recs[st.firstAfter(after):]
	n, end := 0, 0
	for ; end < len(recs) && n < limit; end++ {
		if !recs[end].State.Terminal() {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	out := s.page(n)
	for _, r := range recs[:end] {
		if !r.State.Terminal() {
			out = append(out, s.toMachine(r))
		}
	}
	return out, nil
}

// Save implements store.Store. Every update is checked before any is
// written, so a batch with one bad update changes nothing.
func (s *Store) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	err := s.save(&l, ups)
	s.mu.Unlock()
	return err
}

// save is Save under s.mu.
func (s *Store) save(l *store.Lease, ups []store.Update) error {
	now := s.clock()
	if err := s.checkAvailable("save"); err != nil {
		return err
	}
	st, err := s.held("save", l, now)
	if err != nil {
		return err
	}
	batch, err := s.checkBatch(l.Stream, ups)
	if err == nil {
		s.apply(batch, ups, now) // which clears batch as it goes
	} else {
		clear(batch) // the scratch keeps no record alive
	}
	s.batch = batch[:0]
	s.changed(st)
	return err
}

// checkBatch finds and checks the records of ups, in order, and returns
// them in s.batch, which the caller clears. Each is found once and marked
// with the batch's number: a mark already there is a second mention,
// found without a set of the batch's IDs.
func (s *Store) checkBatch(stream string, ups []store.Update) ([]*rec, error) {
	s.batches++
	batch := s.batch[:0]
	for i := range ups {
		u := &ups[i]
		r, ok := s.find(u.ID)
		switch {
		case !ok && store.CheckName("save", "update id", u.ID) != nil:
			// Checked only on a miss: every stored ID is a name.
			return batch, store.CheckName("save", "update id", u.ID)
		case !ok:
			return batch, fmt.Errorf("%w: record %q: no such record", store.ErrInvalidWrite, u.ID)
		case s.twice(batch, r):
			// Two versions of one record in one batch: which one is
			// the new history is ambiguous, so neither is.
			return batch, fmt.Errorf("%w: record %q: appears twice in the batch", store.ErrInvalidWrite, u.ID)
		case !equal(r.Stream, stream):
			return batch, fmt.Errorf("%w: record %q: belongs to stream %q, not the lease's stream %q", store.ErrInvalidWrite, u.ID, r.Stream, stream)
		}
		r.batch = s.batches
		if err := store.CheckUpdate(&r.Record, u); err != nil {
			return batch, err
		}
		batch = append(batch, r)
	}
	return batch, nil
}

// apply writes ups into their records, batch, all checked, and clears
// batch, so that the scratch keeps no record alive: a batch holds a
// record or two, and clearing it as it is read costs less than calling
// the runtime to clear it.
func (s *Store) apply(batch []*rec, ups []store.Update, now time.Time) {
	for i := range ups { // by index: an Update is 80 bytes
		r := batch[i]
		batch[i] = nil
		if r.State.Terminal() {
			continue // checked equal: a terminal record never changes at all
		}
		store.Apply(&r.Record, ups[i], now)
		if r.State == machine.Dead && plant.On(plant.DeadLettersDropped) {
			s.drop(r) // the planted bug: a dead letter is deleted, not kept
		}
	}
}

// twice reports whether r is in batch already, as Save's mark says; the
// plain store searches batch instead.
func (s *Store) twice(batch []*rec, r *rec) bool {
	if s.plain {
		return slices.Contains(batch, r)
	}
	return r.batch == s.batches
}

// find returns the record with id, as s.ids does, asking s.found first
// (the plain store does not).
func (s *Store) find(id string) (*rec, bool) {
	slot := &s.found[slotOf(id, foundBits)]
	if r := *slot; r != nil && r.batch != deleted && same(r.ID, id) && !s.plain {
		return r, true
	}
	r, ok := s.ids[id]
	if ok {
		*slot = r
	}
	return r, ok
}

// slotOf is str's slot in a table of 1<<bits (Store.found, Store.named):
// the address of its bytes, scrambled (Fibonacci hashing), since strings
// allocated together lie a few bytes apart.
func slotOf(str string, bits uint) uint {
	return uint(uint64(uintptr(unsafe.Pointer(unsafe.StringData(str)))) * 0x9e3779b97f4a7c15 >> (64 - bits))
}

// same reports whether a and b are the same string: the same bytes, not
// merely equal ones.
func same(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// remove deletes r from s.ids.
func (s *Store) remove(r *rec) {
	delete(s.ids, r.ID)
	r.batch = deleted
}

// drop deletes a record outright (the planted bug DeadLettersDropped).
func (s *Store) drop(r *rec) {
	s.remove(r)
	st := s.streams[r.Stream]
	st.recs = slices.DeleteFunc(st.recs, func(o *rec) bool { return o == r })
	st.due.known = false
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.ids[id]
	if !ok {
		// Every stored ID is a name (CheckName), so only a miss needs
		// the check: the simulator's coverage Gets every ID it knows.
		if err := store.CheckName("get", "id", id); err != nil {
			return store.Record{}, err
		}
		return store.Record{}, &notFound{id: id}
	}
	return s.clone(&r.Record), nil
}

// notFound is Get's store.ErrNotFound, which the simulator's coverage
// gets for every ID it asks about before the producer has enqueued it. It
// is one allocation, formatted only when read, into the text
// fmt.Errorf("%w: get %q", store.ErrNotFound, id) would give.
type notFound struct{ id string }

func (e *notFound) Error() string { return store.ErrNotFound.Error() + ": get " + strconv.Quote(e.id) }

func (e *notFound) Unwrap() error { return store.ErrNotFound }

// DeadLetters implements store.Store.
func (s *Store) DeadLetters(ctx context.Context, streamName string, after uint64, limit int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckName("dead letters", "stream", streamName); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("%w: dead letters of stream %q: limit %d is below 1", store.ErrBadArgument, streamName, limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[streamName]
	if st == nil {
		return nil, nil
	}
	var out []store.Record
	for _, r := range st.recs[st.firstAfter(after):] {
		if len(out) == limit {
			break
		}
		if r.State == machine.Dead {
			out = append(out, s.clone(&r.Record))
		}
	}
	return out, nil
}

// Replay implements store.Store.
func (s *Store) Replay(ctx context.Context, id, by string) (store.Record, error) {
	return s.operate(ctx, "replay", id, by, func(r *store.Record, st *stream, now time.Time) {
		// The replay's own token: every lease granted before it is stale,
		// and the stream is free to claim at once.
		s.lastToken++
		st.lease = store.Held{Token: s.lastToken, Expires: now, Released: true}
		store.ApplyReplay(r, by, now, s.lastToken)
		s.changed(st) // pending again, and free to claim: the lease is released
	})
}

// Discard implements store.Store.
func (s *Store) Discard(ctx context.Context, id, by string) (store.Record, error) {
	return s.operate(ctx, "discard", id, by, func(r *store.Record, _ *stream, now time.Time) {
		store.ApplyDiscard(r, by, now)
	})
}

// operate runs an operator action on the dead letter id.
func (s *Store) operate(ctx context.Context, op, id, by string, act func(*store.Record, *stream, time.Time)) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	if err := store.CheckOperator(op, id, by); err != nil {
		return store.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable(op); err != nil {
		return store.Record{}, err
	}
	r, ok := s.ids[id]
	if !ok {
		return store.Record{}, fmt.Errorf("%w: %s %q", store.ErrNotFound, op, id)
	}
	if err := store.CheckDeadLetter(op, r.Record); err != nil {
		return store.Record{}, err
	}
	act(&r.Record, s.streams[r.Stream], now)
	return s.clone(&r.Record), nil
}

// DeleteSettled implements store.Store.
func (s *Store) DeleteSettled(ctx context.Context, retention time.Duration, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	switch {
	case retention <= 0:
		return 0, fmt.Errorf("%w: delete settled: retention %v is not positive", store.ErrBadArgument, retention)
	case limit < 1:
		return 0, fmt.Errorf("%w: delete settled: limit %d is below 1", store.ErrBadArgument, limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("delete settled"); err != nil {
		return 0, err
	}
	cutoff := now.Add(-retention)
	var old []*rec
	for _, r := range s.ids {
		if !r.SettledAt.IsZero() && !r.SettledAt.After(cutoff) {
			old = append(old, r)
		}
	}
	// Oldest first, then by ID, so that which records a limited call
	// deletes does not depend on map order.
	slices.SortFunc(old, func(a, b *rec) int {
		return cmp.Or(a.SettledAt.Compare(b.SettledAt), cmp.Compare(a.ID, b.ID))
	})
	old = old[:min(limit, len(old))]
	for _, r := range old {
		s.remove(r)
		st := s.streams[r.Stream]
		st.recs = slices.DeleteFunc(st.recs, func(x *rec) bool { return x == r })
		st.due.known = false // only settled records go, but recompute anyway
	}
	return len(old), nil
}

// clock reads the store's clock, once per call and under the lock, so
// that every decision of one call is judged at one instant and calls are
// judged in the order they hold the lock. The monotonic reading is
// dropped: a stored time is a wall-clock instant, as a database keeps it.
// It is not truncated to the microsecond: the simulator's instants are
// kept exactly, which the contract allows.
func (s *Store) clock() time.Time { return s.now().Round(0) }

// Ping implements store.Pinger: it answers unless a failure is injected
// (SetUnavailable), as a write would.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkAvailable("ping")
}

// checkAvailable reports the injected failure, if any, for a write.
func (s *Store) checkAvailable(op string) error {
	if s.unavailable != nil && s.unavailable() {
		return fmt.Errorf("%w: %s refused by failure injection", store.ErrUnavailable, op)
	}
	return nil
}

// stream returns the stream named name, creating it empty if needed. It
// asks s.named first (the plain store does not).
func (s *Store) stream(name string) *stream {
	slot := &s.named[slotOf(name, namedBits)]
	if st := *slot; st != nil && same(st.name, name) && !s.plain {
		return st
	}
	st := s.streams[name]
	if st == nil {
		st = s.newStream(name)
		s.streams[name] = st
		i, _ := slices.BinarySearchFunc(s.byName, name, func(o *stream, name string) int { return cmp.Compare(o.name, name) })
		s.byName = slices.Insert(s.byName, i, st)
	}
	*slot = st
	return st
}

// newStream returns an empty stream named name: a spare one if Reset
// left any, else a new one with room for a few records, since appending
// from empty grew the slice at almost every other Enqueue of a simulated
// run.
func (s *Store) newStream(name string) *stream {
	if n := len(s.spare); n > 0 {
		st := s.spare[n-1]
		s.spare[n-1] = nil
		s.spare = s.spare[:n-1]
		st.name = name
		return st
	}
	return &stream{name: name, recs: make([]*rec, 0, 8)}
}

// firstAfter is the index of the first record with Seq above after.
// It is the binary search slices.BinarySearchFunc would make for Seq
// after+1, written out: Pending asks on every poll, and the generic
// search's call per probe cost more than the probe. after+1 wraps as it
// always did: after = MaxUint64 starts at the first record.
func (st *stream) firstAfter(after uint64) int {
	seq := after + 1
	lo, hi := 0, len(st.recs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if st.recs[m].Seq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// grant gives owner a new lease on st, under the next token. The lease
// names the stream in st.name, whatever string the caller named it in,
// so that held finds it the same string when it is presented.
func (s *Store) grant(st *stream, owner string, now time.Time, ttl time.Duration) store.Lease {
	s.lastToken++
	st.lease = store.Held{Owner: owner, Token: s.lastToken, Expires: now.Add(ttl)}
	s.granted[s.lastToken%grantedSlots] = st
	return st.lease.Lease(st.name)
}

// equal is a == b, asking the runtime only when the strings are not the
// same bytes: Save compares a record's stream, named by the producer,
// with the lease's, and a producer names a stream in one string.
func equal(a, b string) bool { return same(a, b) || a == b }

// held returns l's stream if l is its valid current lease, or an error
// wrapping store.ErrStaleLease that says why it is not. now may carry a
// monotonic reading (see pending), which the valid case's Before ignores
// against a lease end without one and judgeHeld never sees. The valid case,
// as CheckHeld judges it, is settled here from s.granted, by pointer and
// without copying the lease or the arguments an error needs, which cost
// more than the checks; anything else goes to judgeHeld. The planted
// bugs let a lease through that is not valid, never the other way, so
// they are judgeHeld's alone.
func (s *Store) held(op string, l *store.Lease, now time.Time) (*stream, error) {
	if st := s.granted[l.Token%grantedSlots]; st != nil && !s.plain {
		// The same strings, not merely equal ones: the lease is presented
		// in the strings it was granted in (see grant). A lease in equal
		// strings is judgeHeld's, which compares their bytes.
		if h := &st.lease; h.Token == l.Token && h.Token != 0 && !h.Released && same(st.name, l.Stream) &&
			same(h.Owner, l.Owner) && now.Before(h.Expires) {
			return st, nil
		}
	}
	return s.judgeHeld(op, *l, now.Round(0))
}

// judgeHeld is held for a lease that is not plainly valid. Only such a
// lease can carry a name that is not text (every granted one is), so it
// is checked for one here, before it is judged, and not on the way in.
func (s *Store) judgeHeld(op string, l store.Lease, now time.Time) (*stream, error) {
	if err := store.CheckLease(op, l); err != nil {
		return nil, err
	}
	st := s.granted[l.Token%grantedSlots]
	if st == nil || st.lease.Token != l.Token || st.name != l.Stream || s.plain {
		st = s.streams[l.Stream]
	}
	switch {
	case st != nil && st.lease.Token != 0 && plant.On(plant.SkipFencing):
		return st, nil // the planted bug: any lease on the stream will do
	case st == nil:
		return nil, store.CheckHeld(op, store.Held{}, l, now)
	}
	if plant.On(plant.WriteAfterExpiry) {
		now = time.Time{} // the planted bug: an expired lease still writes
	}
	if err := store.CheckHeld(op, st.lease, l, now); err != nil {
		return nil, err
	}
	return st, nil
}

// dueAt reports whether st holds due work at now: a parked record (a
// probe is owed, whatever its NextAt) or a pending or retry record whose
// NextAt has come. If not, it returns when the first of them comes due
// (endOfTime if none waits). It reads st.due, computed again only after
// st's records changed: ClaimDue asks about every unleased stream, most
// of them settled, at every scan.
func (s *Store) dueAt(st *stream, now time.Time) (bool, time.Time) {
	if !st.due.known || s.plain {
		st.due = dueOf(st.recs)
	}
	switch d := &st.due; {
	case d.parked:
		return true, now
	case !d.waiting:
		return false, endOfTime
	case !d.first.After(now):
		return true, now
	default:
		return false, d.first
	}
}

// dueSummary is what makes a stream due, whatever the time.
type dueSummary struct {
	known   bool      // false: st.recs changed since it was computed
	parked  bool      // a record is parked: due at any time
	waiting bool      // a record is pending or in retry, due from first
	first   time.Time // the earliest NextAt of those
}

// settled reports whether d is known to hold nothing that can come due:
// every record is delivered or dead.
func (d *dueSummary) settled() bool { return d.known && !d.parked && !d.waiting }

// dueOf summarises recs.
func dueOf(recs []*rec) dueSummary {
	d := dueSummary{known: true}
	for _, r := range recs {
		switch r.State {
		case machine.Parked:
			d.parked = true
		case machine.Pending, machine.Retry:
			if !d.waiting || r.NextAt.Before(d.first) {
				d.waiting, d.first = true, r.NextAt
			}
		}
	}
	return d
}

// claimBound is a lower bound on when ClaimDue can find a stream to
// claim. A stream is claimable once it is due and its lease is not valid,
// and both only become truer as time passes: due work stays due, an
// expired lease stays expired. So until something changes, no stream is
// claimable before the earliest instant the last scan saw one could be,
// and a change lowers the bound to what it allows (Store.changed).
type claimBound struct {
	known bool      // false: a scan must find out
	from  time.Time // if known: nothing is claimable before it
}

// endOfTime is a bound no change has lowered yet: nothing is waiting.
// It is only a bound, so a clock that reached it would scan, not err.
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// after reports whether the bound says nothing is claimable at now.
func (b *claimBound) after(now time.Time) bool { return b.known && now.Before(b.from) }

// lower makes t the bound if t is earlier.
func (b *claimBound) lower(t time.Time) {
	if b.known && t.Before(b.from) {
		b.from = t
	}
}

// changed notes a change to st's records (a new one, a new state or
// NextAt): st's due summary is out of date, and st may now be claimable
// as soon as its lease lets it, or at once if it has none.
func (s *Store) changed(st *stream) {
	st.due.known = false
	if st.lease.Token != 0 && !st.lease.Released {
		s.claimable.lower(st.lease.Expires)
		return
	}
	s.claimable.known = false
}

// toMachine is r in the machine's form (store.Record.Machine) with its
// own copy of the payload. It reads r's fields where they are: calling
// r.Machine() copied the whole record to call a method on its value, and
// so did BudgetFrom, which only a replayed record needs. The plain store
// calls r.Machine().
func (s *Store) toMachine(r *rec) machine.Record {
	if s.plain {
		m := r.Machine()
		m.Payload = copyBytes(&s.handed, m.Payload)
		return m
	}
	from := r.AcceptedAt
	if len(r.History) > 0 {
		from = r.BudgetFrom()
	}
	return machine.Record{
		ID: r.ID, Seq: r.Seq, Payload: copyBytes(&s.handed, r.Payload), AcceptedAt: from,
		State: r.State, Attempts: r.Attempts, NextAt: r.NextAt, Reason: r.Reason,
	}
}

// clone copies r with its own payload and history, so that no caller
// shares memory with the store. It takes r by pointer: a record is about
// 250 bytes, copied once here rather than again into the call.
func (s *Store) clone(r *store.Record) store.Record {
	var c store.Record
	s.cloneInto(&c, r)
	return c
}

// cloneInto is clone into *c.
func (s *Store) cloneInto(c, r *store.Record) {
	*c = *r
	c.Payload = copyBytes(&s.handed, r.Payload)
	c.History = slices.Clone(r.History)
}

// page returns an empty slice with room for n records, cut from
// s.pages: Pending's answers share a chunk, one allocation per pageChunk
// records where each page made one, and most pages hold one record. As
// with copyBytes, each slice's capacity ends at its own records, so the
// caller owns them alone, and keeps the chunk alive. The caller holds s.mu.
func (s *Store) page(n int) []machine.Record {
	switch {
	case n > pageChunk/4:
		return make([]machine.Record, 0, n) // a chunk would hold too few
	case cap(s.pages)-len(s.pages) < n:
		s.pages = make([]machine.Record, 0, pageChunk)
	}
	i := len(s.pages)
	s.pages = s.pages[:i+n]
	return s.pages[i : i : i+n]
}

// pageChunk is how many records page allocates at once.
const pageChunk = 16

// copyBytes returns a copy of p cut from *chunk: one allocation per
// bytesChunk bytes where bytes.Clone made one per payload (two per
// Enqueue, one per record a Pending page holds). Each copy's capacity
// ends at its length, so appending to one never reaches the next: a
// caller's copy is still the caller's alone. A copy keeps its whole
// chunk alive, which an in-memory store can afford. A nil p stays nil
// and an empty one empty, as bytes.Clone leaves them. The caller holds
// s.mu.
func copyBytes(chunk *[]byte, p []byte) []byte {
	n := len(p)
	switch {
	case p == nil:
		return nil
	case n == 0:
		return []byte{}
	case n > bytesChunk/4:
		return bytes.Clone(p) // a chunk would hold too few
	case cap(*chunk)-len(*chunk) < n:
		*chunk = make([]byte, 0, bytesChunk)
	}
	i := len(*chunk)
	*chunk = append(*chunk, p...)
	return (*chunk)[i : i+n : i+n]
}

// bytesChunk is how many bytes copyBytes allocates at once. A simulated
// run's store copies a few KB of payloads of some 30 bytes, kept and
// handed apart, and a chunk's unused end is lost with the store: chunks
// of 4096 bytes lost more than they held (B/op, outage: 131,133 with
// 4096, 124,092 with 2048, 123,068 with 1024, for 3 allocations more).
const bytesChunk = 1024

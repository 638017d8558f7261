package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Store is an in-memory store.Store. The zero value is not usable; build
// one with New.
type Store struct {
	mu          sync.Mutex // serialises every method
	now         func() time.Time
	unavailable func() bool

	streams map[string]*stream
	// byName is every stream of streams, sorted by name: the order
	// ClaimDue and Streams take, kept rather than sorted on every call.
	// Streams are never removed, so a new one is inserted in its place.
	byName []*stream
	// ids locates every record by ID, across streams: IDs are unique in
	// the whole store, not per stream.
	ids map[string]*store.Record
	// lastToken is the token of the latest lease granted, on any stream,
	// or taken by a replay. Tokens are global so that a token alone orders
	// every grant.
	lastToken uint64
	// sched orders the streams for ClaimDue (due.go).
	sched schedule
}

// stream holds one stream's records and its current lease. A stream can
// exist with no records, when a lease was acquired on it before anything
// was enqueued, or once retention deleted them all.
type stream struct {
	name    string
	recs    []*store.Record // in Seq order; retention leaves gaps
	lastSeq uint64          // the highest Seq ever assigned: never reused
	lease   store.Held
	// due is the stream's due instant (store.Store.ClaimDue) if hasDue;
	// releasedUntil the instant its last release named.
	due           time.Time
	hasDue        bool
	releasedUntil time.Time
	// waiting holds an entry for each pending or retry record (and stale
	// ones, popped lazily); nwaiting counts those records, parked the
	// parked ones (due.go).
	waiting  entryHeap
	nwaiting int
	parked   int
	// readyAt and leasedAt are the stream's indexes in the schedule's
	// heaps, -1 when it is not there.
	readyAt, leasedAt int
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Pinger = (*Store)(nil)
)

// New returns an empty store whose authoritative clock is now. It panics
// if now is nil: a store without a clock cannot judge a lease.
func New(now func() time.Time) *Store {
	if now == nil {
		panic("memstore.New: nil clock")
	}
	return &Store{
		now:     now,
		streams: make(map[string]*stream),
		ids:     make(map[string]*store.Record),
		sched:   newSchedule(),
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
	out := make([]machine.Record, 0, len(st.recs))
	for _, r := range st.recs {
		out = append(out, toMachine(r))
	}
	return out
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
func (s *Store) Enqueue(ctx context.Context, streamName, id string, payload []byte) (store.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, false, err
	}
	if err := store.CheckEnqueue(streamName, id); err != nil {
		return store.Record{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("enqueue"); err != nil {
		if plant.On(plant.AckBeforePersist) {
			// The planted bug: the producer is told yes before the write,
			// which the outage then loses.
			return store.Record{Event: store.Event{Stream: streamName, ID: id, Payload: bytes.Clone(payload), AcceptedAt: now}}, true, nil
		}
		return store.Record{}, false, err
	}
	if r, ok := s.ids[id]; ok && !plant.On(plant.AcceptNotIdempotent) {
		if r.Stream != streamName {
			return store.Record{}, false, fmt.Errorf("%w: enqueue %q on stream %q: the ID belongs to stream %q", store.ErrBadArgument, id, streamName, r.Stream)
		}
		return clone(r), false, nil
	}
	st := s.stream(streamName)
	st.lastSeq++
	r := &store.Record{
		Event: store.Event{Stream: streamName, ID: id, Seq: st.lastSeq, Payload: bytes.Clone(payload), AcceptedAt: now},
	}
	r.State, r.NextAt = machine.Pending, now
	st.recs = append(st.recs, r)
	s.ids[id] = r
	st.note(r, 0)
	st.enqueued(now)
	s.sched.place(st, now)
	return clone(r), true, nil
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
	if plant.On(plant.ClaimByName) {
		return s.claimByName(owner, now, ttl, max), nil
	}
	var out []store.Lease
	// Earliest due first, ties by name (the heap's order), not map
	// order: which streams a claimer gets must not depend on the run.
	for len(out) < max {
		st := s.sched.nextDue(now)
		if st == nil {
			break
		}
		out = append(out, s.grant(st, owner, now, ttl))
	}
	return out, nil
}

// claimByName is ClaimDue under the planted bug ClaimByName: due streams
// are granted in name order, whatever their due instants, so that a
// stream late in the alphabet waits behind every earlier one.
func (s *Store) claimByName(owner string, now time.Time, ttl time.Duration, max int) []store.Lease {
	var out []store.Lease
	for _, st := range s.byName {
		if len(out) == max {
			break
		}
		if !st.lease.ValidAt(now) && st.hasDue && !st.due.After(now) {
			out = append(out, s.grant(st, owner, now, ttl))
		}
	}
	return out
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
	at := now
	if plant.On(plant.RenewRevivesExpired) {
		at = time.Time{} // the planted bug: an expired lease may still be renewed
	}
	st, err := s.held("renew", l, at)
	if err != nil {
		return store.Lease{}, err
	}
	if until := now.Add(ttl); until.After(st.lease.Expires) || plant.On(plant.RenewShrinks) {
		st.lease.Expires = until
	}
	s.sched.place(st, now)
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
	st, err := s.held("release", l, now)
	if err != nil {
		return err
	}
	s.released(st, now, now)
	return nil
}

// ReleaseUntil implements store.Store.
func (s *Store) ReleaseUntil(ctx context.Context, l store.Lease, until time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("release until"); err != nil {
		return err
	}
	st, err := s.held("release until", l, now)
	if err != nil {
		return err
	}
	s.released(st, now, until.Round(0))
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
	defer s.mu.Unlock()
	st, err := s.held("pending", l, s.clock())
	if err != nil {
		return nil, err
	}
	var out []machine.Record
	for _, r := range st.recs[st.firstAfter(after):] {
		if len(out) == limit {
			break
		}
		if !r.State.Terminal() {
			out = append(out, toMachine(r))
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
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("save"); err != nil {
		return err
	}
	return s.save(l, ups, now)
}

// save makes one Save at now, under s.mu.
func (s *Store) save(l store.Lease, ups []store.Update, now time.Time) error {
	if _, err := s.held("save", l, now); err != nil {
		return err
	}
	batch, err := s.checkBatch(l.Stream, ups)
	if err != nil {
		return err
	}
	for i, r := range batch {
		if r.State.Terminal() {
			continue // checked equal: a terminal record never changes at all
		}
		before := r.State
		store.Apply(r, ups[i], now)
		s.streams[l.Stream].note(r, before)
		if r.State == machine.Dead && plant.On(plant.DeadLettersDropped) {
			s.drop(r) // the planted bug: a dead letter is deleted, not kept
		}
	}
	if len(batch) > 0 {
		st := s.streams[l.Stream]
		st.refreshDue()
		s.sched.place(st, now)
	}
	return nil
}

// checkBatch finds and checks the records of ups, in order, and returns
// them.
func (s *Store) checkBatch(stream string, ups []store.Update) ([]*store.Record, error) {
	batch := make([]*store.Record, 0, len(ups))
	seen := make(map[string]bool, len(ups))
	for i := range ups {
		u := &ups[i]
		r, ok := s.ids[u.ID]
		switch {
		case !ok:
			// An ID the store holds was checked when it was enqueued; one
			// it does not hold may not even be a name.
			if err := store.CheckName("save", "update id", u.ID); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: record %q: no such record", store.ErrInvalidWrite, u.ID)
		case seen[u.ID]:
			// Two versions of one record in one batch: which one is
			// the new history is ambiguous, so neither is.
			return nil, fmt.Errorf("%w: record %q: appears twice in the batch", store.ErrInvalidWrite, u.ID)
		case r.Stream != stream:
			return nil, fmt.Errorf("%w: record %q: belongs to stream %q, not the lease's stream %q", store.ErrInvalidWrite, u.ID, r.Stream, stream)
		}
		seen[u.ID] = true
		if err := store.CheckUpdate(r, u); err != nil {
			return nil, err
		}
		batch = append(batch, r)
	}
	return batch, nil
}

// drop deletes a record outright (the planted bug DeadLettersDropped).
func (s *Store) drop(r *store.Record) {
	delete(s.ids, r.ID)
	st := s.streams[r.Stream]
	st.recs = slices.DeleteFunc(st.recs, func(o *store.Record) bool { return o == r })
	st.recount()
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, err
	}
	if err := store.CheckName("get", "id", id); err != nil {
		return store.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.ids[id]
	if !ok {
		return store.Record{}, fmt.Errorf("%w: get %q", store.ErrNotFound, id)
	}
	return clone(r), nil
}

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
			out = append(out, clone(r))
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
		before := r.State
		store.ApplyReplay(r, by, now, s.lastToken)
		st.note(r, before)
		st.releasedUntil = now // the hold is lifted: the replayed record is due now
		st.refreshDue()
		s.sched.place(st, now)
	})
}

// Discard implements store.Store.
func (s *Store) Discard(ctx context.Context, id, by string) (store.Record, error) {
	return s.operate(ctx, "discard", id, by, func(r *store.Record, st *stream, now time.Time) {
		before := r.State
		store.ApplyDiscard(r, by, now)
		st.note(r, before) // a change only under the planted DiscardAnyRecord
		st.refreshDue()
		s.sched.place(st, now)
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
	if err := store.CheckDeadLetter(op, *r); err != nil && !plantedAnyRecord(op) {
		return store.Record{}, err
	}
	act(r, s.streams[r.Stream], now)
	return clone(r), nil
}

// plantedAnyRecord reports whether a planted bug lets the operator action
// op through on a record that is not an undiscarded dead letter.
func plantedAnyRecord(op string) bool {
	return op == "discard" && plant.On(plant.DiscardAnyRecord) || op == "replay" && plant.On(plant.ReplayAnyRecord)
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
	var old []*store.Record
	for _, r := range s.ids {
		settled := !r.SettledAt.IsZero() || plant.On(plant.RetentionDeletesUnsettled)
		if settled && !r.SettledAt.After(cutoff) {
			old = append(old, r)
		}
	}
	// Oldest first, then by ID, so that which records a limited call
	// deletes does not depend on map order.
	slices.SortFunc(old, func(a, b *store.Record) int {
		return cmp.Or(a.SettledAt.Compare(b.SettledAt), cmp.Compare(a.ID, b.ID))
	})
	old = old[:min(limit, len(old))]
	for _, r := range old {
		delete(s.ids, r.ID)
		st := s.streams[r.Stream]
		st.recs = slices.DeleteFunc(st.recs, func(x *store.Record) bool { return x == r })
		if !r.State.Terminal() { // only under the planted RetentionDeletesUnsettled
			st.recount()
			s.sched.place(st, now)
		}
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

// stream returns the stream named name, creating it empty if needed.
func (s *Store) stream(name string) *stream {
	st := s.streams[name]
	if st == nil {
		st = &stream{name: name, readyAt: -1, leasedAt: -1}
		s.streams[name] = st
		i, _ := slices.BinarySearchFunc(s.byName, name, func(o *stream, name string) int { return cmp.Compare(o.name, name) })
		s.byName = slices.Insert(s.byName, i, st)
	}
	return st
}

// firstAfter is the index of the first record with Seq above after: at
// or above after+1, which wraps as it always did, so that after =
// MaxUint64 starts at the first record.
func (st *stream) firstAfter(after uint64) int {
	seq := after + 1
	return sort.Search(len(st.recs), func(i int) bool { return st.recs[i].Seq >= seq })
}

// grant gives owner a new lease on st, under the next token.
func (s *Store) grant(st *stream, owner string, now time.Time, ttl time.Duration) store.Lease {
	s.lastToken++
	st.lease = store.Held{Owner: owner, Token: s.lastToken, Expires: now.Add(ttl)}
	s.sched.place(st, now)
	return st.lease.Lease(st.name)
}

// held returns l's stream if l is its valid current lease, or an error
// that says why it is not: ErrBadArgument if a name the lease carries is
// not text, else one wrapping store.ErrStaleLease. A lease that matches
// the stream's current one needs no name check: the store checked its
// stream and owner when it granted it. Only a lease that does not match
// is checked, so that a bad name is reported as what it is.
func (s *Store) held(op string, l store.Lease, now time.Time) (*stream, error) {
	st := s.streams[l.Stream]
	var h store.Held
	if st != nil {
		h = st.lease
	}
	if st != nil && h.Token != 0 && plant.On(plant.SkipFencing) {
		// The planted bug: any lease on the stream will do.
		if err := store.CheckLease(op, l); err != nil {
			return nil, err
		}
		return st, nil
	}
	if plant.On(plant.WriteAfterExpiry) {
		now = time.Time{} // the planted bug: an expired lease still writes
	}
	if err := store.CheckHeld(op, h, l, now); err != nil {
		if bad := store.CheckLease(op, l); bad != nil {
			return nil, bad
		}
		return nil, err
	}
	return st, nil
}

// toMachine is r in the machine's form, with its own copy of the payload.
func toMachine(r *store.Record) machine.Record {
	m := r.Machine()
	m.Payload = bytes.Clone(m.Payload)
	return m
}

// clone copies r with its own payload and history, so that no caller
// shares memory with the store.
func clone(r *store.Record) store.Record {
	c := *r
	c.Payload = bytes.Clone(r.Payload)
	c.History = slices.Clone(r.History)
	return c
}

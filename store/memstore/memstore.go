package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Store is an in-memory store.Store. The zero value is not usable; build
// one with New.
type Store struct {
	mu          sync.Mutex
	now         func() time.Time
	unavailable func() bool

	streams map[string]*stream
	// ids locates every record by ID, across streams: IDs are unique in
	// the whole store, not per stream.
	ids map[string]ref
	// lastToken is the token of the latest lease granted, on any stream.
	// Tokens are global so that a token alone orders every grant.
	lastToken uint64
}

// stream holds one stream's records and its current lease. A stream can
// exist with no records, when a lease was acquired on it before anything
// was enqueued.
type stream struct {
	// recs[i] has Seq i+1: records are never removed, so the index is
	// the sequence.
	recs  []machine.Record
	lease lease
}

// lease is the stream's current lease, valid or not. token 0 means none
// was ever granted.
type lease struct {
	owner    string
	token    uint64
	expires  time.Time
	released bool
}

type ref struct {
	stream string
	seq    uint64
}

var _ store.Store = (*Store)(nil)

// New returns an empty store whose authoritative clock is now. It panics
// if now is nil: a store without a clock cannot judge a lease.
func New(now func() time.Time) *Store {
	if now == nil {
		panic("memstore.New: nil clock")
	}
	return &Store{
		now:     now,
		streams: make(map[string]*stream),
		ids:     make(map[string]ref),
	}
}

// SetUnavailable installs f as the store's failure injector: while f
// returns true, every method that writes (Enqueue, ClaimDue, Acquire,
// Renew, Release, Save) fails with an error wrapping store.ErrUnavailable
// and changes nothing. Reads (Pending, Get, DeadLetters, Records,
// Streams) keep working. f is called once per write, after the argument
// checks, with the store's lock held, so it must not call the store. A
// nil f makes the store available again.
func (s *Store) SetUnavailable(f func() bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = f
}

// Records returns a copy of every record of stream, in Seq order, whatever
// its state and whoever holds the stream. It is for the simulator and
// tests, which must see what the store holds without taking a lease.
func (s *Store) Records(streamName string) []machine.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[streamName]
	if st == nil {
		return nil
	}
	out := make([]machine.Record, len(st.recs))
	for i, r := range st.recs {
		out[i] = clone(r)
	}
	return out
}

// Streams returns the names of the streams that hold at least one record,
// sorted.
func (s *Store) Streams() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streamNames()
}

// Enqueue implements store.Store.
func (s *Store) Enqueue(ctx context.Context, streamName, id string, payload []byte) (machine.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return machine.Record{}, false, err
	}
	switch {
	case streamName == "":
		return machine.Record{}, false, fmt.Errorf("%w: enqueue: stream is empty", store.ErrBadArgument)
	case id == "":
		return machine.Record{}, false, fmt.Errorf("%w: enqueue on stream %q: id is empty", store.ErrBadArgument, streamName)
	case len(id) > machine.MaxIDBytes:
		return machine.Record{}, false, fmt.Errorf("%w: enqueue on stream %q: id of %d bytes exceeds %d", store.ErrBadArgument, streamName, len(id), machine.MaxIDBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("enqueue"); err != nil {
		return machine.Record{}, false, err
	}
	if at, ok := s.ids[id]; ok {
		if at.stream != streamName {
			return machine.Record{}, false, fmt.Errorf("%w: enqueue %q on stream %q: the ID belongs to stream %q", store.ErrBadArgument, id, streamName, at.stream)
		}
		return clone(s.record(at)), false, nil
	}
	st := s.stream(streamName)
	rec := machine.Record{
		ID:         id,
		Seq:        uint64(len(st.recs)) + 1,
		Payload:    bytes.Clone(payload),
		AcceptedAt: now,
		State:      machine.Pending,
		NextAt:     now,
	}
	st.recs = append(st.recs, rec)
	s.ids[id] = ref{stream: streamName, seq: rec.Seq}
	return clone(rec), true, nil
}

// ClaimDue implements store.Store.
func (s *Store) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch {
	case owner == "":
		return nil, fmt.Errorf("%w: claim due: owner is empty", store.ErrBadArgument)
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
	// Name order, not map order: which streams a claimer gets must not
	// depend on the run.
	for _, name := range s.streamNames() {
		if len(out) == max {
			break
		}
		st := s.streams[name]
		if st.lease.validAt(now) || !hasDue(st.recs, now) {
			continue
		}
		out = append(out, s.grant(name, st, owner, now, ttl))
	}
	return out, nil
}

// Acquire implements store.Store.
func (s *Store) Acquire(ctx context.Context, streamName, owner string, ttl time.Duration) (store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return store.Lease{}, err
	}
	switch {
	case streamName == "":
		return store.Lease{}, fmt.Errorf("%w: acquire: stream is empty", store.ErrBadArgument)
	case owner == "":
		return store.Lease{}, fmt.Errorf("%w: acquire stream %q: owner is empty", store.ErrBadArgument, streamName)
	case ttl <= 0:
		return store.Lease{}, fmt.Errorf("%w: acquire stream %q: ttl %v is not positive", store.ErrBadArgument, streamName, ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("acquire"); err != nil {
		return store.Lease{}, err
	}
	st := s.stream(streamName)
	if st.lease.validAt(now) {
		// The same owner is refused too: it must Renew, so that a lease
		// is only ever extended under the token it was granted with.
		return store.Lease{}, fmt.Errorf("%w: acquire stream %q for %q: held by %q with token %d until %s",
			store.ErrLeaseHeld, streamName, owner, st.lease.owner, st.lease.token, st.lease.expires.Format(time.RFC3339Nano))
	}
	return s.grant(streamName, st, owner, now, ttl), nil
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
	st, err := s.held("renew", l, now)
	if err != nil {
		return store.Lease{}, err
	}
	if until := now.Add(ttl); until.After(st.lease.expires) || plant.On(plant.RenewShrinks) {
		st.lease.expires = until
	}
	return st.lease.public(l.Stream), nil
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
	st.lease.released = true
	return nil
}

// Pending implements store.Store.
func (s *Store) Pending(ctx context.Context, l store.Lease, after uint64) ([]machine.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	st, err := s.held("pending", l, now)
	if err != nil {
		return nil, err
	}
	var out []machine.Record
	for _, r := range st.recs[min(after, uint64(len(st.recs))):] {
		if !r.State.Terminal() {
			out = append(out, clone(r))
		}
	}
	return out, nil
}

// Save implements store.Store. Every record is checked before any is
// written, so a batch with one bad record changes nothing.
func (s *Store) Save(ctx context.Context, l store.Lease, recs []machine.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if err := s.checkAvailable("save"); err != nil {
		return err
	}
	if _, err := s.held("save", l, now); err != nil {
		return err
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if seen[r.ID] {
			// Two versions of one record in one batch: which one is
			// the new history is ambiguous, so neither is.
			return invalid(r.ID, "appears twice in the batch")
		}
		seen[r.ID] = true
		if err := s.checkWrite(l.Stream, r); err != nil {
			return err
		}
	}
	for _, r := range recs {
		at := s.ids[r.ID]
		stored := &s.streams[at.stream].recs[at.seq-1]
		if stored.State.Terminal() {
			// Checked identical in what matters; leave it untouched so
			// that a terminal record never changes at all.
			continue
		}
		*stored = clone(r)
	}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (machine.Record, error) {
	if err := ctx.Err(); err != nil {
		return machine.Record{}, err
	}
	if id == "" {
		return machine.Record{}, fmt.Errorf("%w: get: id is empty", store.ErrBadArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.ids[id]
	if !ok {
		return machine.Record{}, fmt.Errorf("%w: get %q", store.ErrNotFound, id)
	}
	return clone(s.record(at)), nil
}

// DeadLetters implements store.Store.
func (s *Store) DeadLetters(ctx context.Context, streamName string) ([]machine.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if streamName == "" {
		return nil, fmt.Errorf("%w: dead letters: stream is empty", store.ErrBadArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streams[streamName]
	if st == nil {
		return nil, nil
	}
	var out []machine.Record
	for _, r := range st.recs {
		if r.State == machine.Dead {
			out = append(out, clone(r))
		}
	}
	return out, nil
}

// clock reads the store's clock, once per call and under the lock, so
// that every decision of one call is judged at one instant and calls are
// judged in the order they hold the lock. The monotonic reading is
// dropped: a stored time is a wall-clock instant, as a database keeps it.
func (s *Store) clock() time.Time { return s.now().Round(0) }

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
		st = &stream{}
		s.streams[name] = st
	}
	return st
}

func (s *Store) record(at ref) machine.Record { return s.streams[at.stream].recs[at.seq-1] }

func (s *Store) streamNames() []string {
	names := make([]string, 0, len(s.streams))
	for name, st := range s.streams {
		if len(st.recs) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// grant gives owner a new lease on st, under the next token.
func (s *Store) grant(name string, st *stream, owner string, now time.Time, ttl time.Duration) store.Lease {
	s.lastToken++
	st.lease = lease{owner: owner, token: s.lastToken, expires: now.Add(ttl)}
	return st.lease.public(name)
}

// held returns l's stream if l is its valid current lease, or an error
// wrapping store.ErrStaleLease that says why it is not. Only the store's
// record of the lease counts: l.Expires is the caller's copy and may be
// older than a renewal.
func (s *Store) held(op string, l store.Lease, now time.Time) (*stream, error) {
	st := s.streams[l.Stream]
	var why string
	switch {
	case st == nil || st.lease.token == 0:
		why = "no lease was ever granted on the stream"
	case plant.On(plant.SkipFencing):
		return st, nil // the planted bug: any lease on the stream will do
	case st.lease.token != l.Token:
		why = fmt.Sprintf("the current token is %d", st.lease.token)
	case st.lease.owner != l.Owner:
		why = fmt.Sprintf("the token was granted to %q", st.lease.owner)
	case st.lease.released:
		why = "it was released"
	case !now.Before(st.lease.expires) && !plant.On(plant.WriteAfterExpiry):
		why = "it expired at " + st.lease.expires.Format(time.RFC3339Nano)
	default:
		return st, nil
	}
	return nil, fmt.Errorf("%w: %s on stream %q by %q with token %d: %s",
		store.ErrStaleLease, op, l.Stream, l.Owner, l.Token, why)
}

// checkWrite checks r against the stored record it would replace: the
// history a Save may not rewrite.
func (s *Store) checkWrite(streamName string, r machine.Record) error {
	at, ok := s.ids[r.ID]
	if !ok {
		return invalid(r.ID, "no such record")
	}
	if at.stream != streamName {
		return invalid(r.ID, fmt.Sprintf("belongs to stream %q, not the lease's stream %q", at.stream, streamName))
	}
	stored := s.record(at)
	switch {
	case r.Seq != stored.Seq:
		return invalid(r.ID, fmt.Sprintf("seq %d, stored %d", r.Seq, stored.Seq))
	case !r.AcceptedAt.Equal(stored.AcceptedAt):
		return invalid(r.ID, fmt.Sprintf("accepted at %s, stored %s",
			r.AcceptedAt.Format(time.RFC3339Nano), stored.AcceptedAt.Format(time.RFC3339Nano)))
	case !bytes.Equal(r.Payload, stored.Payload):
		return invalid(r.ID, "payload differs from the one accepted")
	case r.State < machine.Pending || r.State > machine.Dead:
		return invalid(r.ID, fmt.Sprintf("invalid state %v", r.State))
	case r.State == machine.Dead && (r.Reason < machine.Exhausted || r.Reason > machine.Rejected):
		return invalid(r.ID, fmt.Sprintf("dead with invalid reason %v", r.Reason))
	case r.State != machine.Dead && r.Reason != machine.NotDead:
		return invalid(r.ID, fmt.Sprintf("%v with dead reason %v", r.State, r.Reason))
	case stored.State.Terminal() && (r.State != stored.State || r.Reason != stored.Reason || r.Attempts != stored.Attempts):
		return invalid(r.ID, fmt.Sprintf("terminal record changed: %v %v attempts=%d, stored %v %v attempts=%d",
			r.State, r.Reason, r.Attempts, stored.State, stored.Reason, stored.Attempts))
	case r.Attempts < stored.Attempts:
		return invalid(r.ID, fmt.Sprintf("attempts fell from %d to %d", stored.Attempts, r.Attempts))
	case r.Attempts > stored.Attempts+1:
		return invalid(r.ID, fmt.Sprintf("attempts jumped from %d to %d", stored.Attempts, r.Attempts))
	}
	return nil
}

func invalid(id, what string) error {
	return fmt.Errorf("%w: record %q: %s", store.ErrInvalidWrite, id, what)
}

// hasDue reports whether recs hold due work at now: a parked record (a
// probe is owed, whatever its NextAt) or a pending or retry record whose
// NextAt has come.
func hasDue(recs []machine.Record, now time.Time) bool {
	for _, r := range recs {
		switch r.State {
		case machine.Parked:
			return true
		case machine.Pending, machine.Retry:
			if !r.NextAt.After(now) {
				return true
			}
		}
	}
	return false
}

func (l lease) validAt(now time.Time) bool {
	return l.token != 0 && !l.released && now.Before(l.expires)
}

func (l lease) public(streamName string) store.Lease {
	return store.Lease{Stream: streamName, Owner: l.owner, Token: l.token, Expires: l.expires}
}

// clone copies r with its own payload, so that no caller shares memory
// with the store.
func clone(r machine.Record) machine.Record {
	r.Payload = bytes.Clone(r.Payload)
	return r
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
	"github.com/courierlab/courier/worker/observe"
)

// recorder writes the observation log invariants.Check judges: what the
// producer was told and what the store persisted (recordingStore), what
// the worker sent and heard (observer), and what the receiver applied or
// discarded (the demo's receiver). One lock orders the log, and each
// store call is logged under it, so the log's order is the store's.
type recorder struct {
	mu  sync.Mutex
	run invariants.Run
	// out, if set, receives each entry as a line of JSON at once (serve
	// -record: a test merges the logs of processes it kills), and the
	// log is not kept in memory.
	out io.Writer
	// held are the entries waiting, in the log's order, behind the
	// persists of a Save whose worker has not yet stamped them: its
	// Persisted event stamps them with the clock reading its machine
	// stepped with (see recordingStore.Save). Each lease (owner and
	// token) has at most one Save unstamped; the entries of the others,
	// and everything logged meanwhile, wait behind it.
	held []heldEntry
	// granted is when each stream was last granted and its new owner has
	// not yet asked Policy about it; stall is the longest such wait seen
	// (see policy).
	granted map[string]time.Time
	stall   time.Duration
}

// heldEntry is an entry waiting in recorder.held: unstamped if it is a
// persist of the latest Save through owner's lease token, not yet
// stamped.
type heldEntry struct {
	e         invariants.Entry
	owner     string
	token     uint64
	unstamped bool
}

func (r *recorder) addLocked(e invariants.Entry) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	if len(r.held) > 0 {
		r.held = append(r.held, heldEntry{e: e})
		return
	}
	r.emitLocked(e)
}

func (r *recorder) emitLocked(e invariants.Entry) {
	if r.out != nil {
		b, _ := json.Marshal(e)
		_, _ = r.out.Write(append(b, '\n'))
		return
	}
	r.run.Add(e)
}

// holdLocked keeps the persists of a Save through owner's lease token
// until its Persisted event. An earlier Save through the same lease
// whose event never came (the worker reports every Save that returned
// nil, so none should) is released first, stamped now. A worker saving
// several streams' batches at once (worker.Worker.DeliverAll) has one
// Save unstamped per lease, each stamped by its own event.
func (r *recorder) holdLocked(owner string, token uint64, persists []invariants.Entry) {
	r.releaseLocked(owner, token, time.Now())
	for _, e := range persists {
		r.held = append(r.held, heldEntry{e: e, owner: owner, token: token, unstamped: true})
	}
}

// releaseLocked stamps the held persists of owner's lease token at, then
// logs what is held up to the first persist not stamped yet, in order.
func (r *recorder) releaseLocked(owner string, token uint64, at time.Time) {
	for i := range r.held {
		if h := &r.held[i]; h.unstamped && h.owner == owner && h.token == token {
			h.e.At, h.unstamped = at, false
		}
	}
	n := 0
	for n < len(r.held) && !r.held[n].unstamped {
		r.emitLocked(r.held[n].e)
		n++
	}
	r.held = append(r.held[:0], r.held[n:]...)
}

// add logs e at its At, or now: a worker's event carries the clock
// reading its machine stepped with, which is the time the policy rules
// must judge it by (the log's lock may be held by a slow store write).
func (r *recorder) add(e invariants.Entry) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(e)
}

// observer records what a worker sent and heard, its probes, circuit and
// adoptions (worker/observe, the mapping every recorder shares). Its
// persists are logged by recordingStore, in the store's order, and
// stamped here: a Persisted event carries the worker's clock reading for
// the step that made the batch.
func (r *recorder) observer() worker.Observer {
	return worker.ObserverFunc(func(ev worker.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if ev.Kind == worker.Persisted {
			r.releaseLocked(ev.Owner, ev.Token, ev.At)
			return
		}
		for _, e := range observe.Worker(nil, ev.Owner, ev) {
			r.addLocked(e)
		}
	})
}

// recordingStore logs acknowledgements, persists and leases.
type recordingStore struct {
	store.Store
	rec *recorder
}

func (s recordingStore) Enqueue(ctx context.Context, stream, id string, payload []byte) (store.Record, bool, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	r, created, err := s.Store.Enqueue(ctx, stream, id, payload)
	if err == nil {
		s.logEnqueued(r, created)
	}
	return r, created, err
}

// EnqueueBatch implements store.BatchEnqueuer as the store below does
// (store.EnqueueEach), and logs each event it enqueued as Enqueue does.
func (s recordingStore) EnqueueBatch(ctx context.Context, events []store.NewEvent) ([]store.Enqueued, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	out := store.EnqueueEach(ctx, s.Store, events)
	for _, o := range out {
		if o.Err == nil {
			s.logEnqueued(o.Record, o.Created)
		}
	}
	return out, nil
}

// logEnqueued logs an enqueued record and its acknowledgement; the log's
// lock is held.
func (s recordingStore) logEnqueued(r store.Record, created bool) {
	// Only a new record is a persist: a resend changes nothing. (Its
	// record, read here, may be older than a write another process made
	// and logged first, so logging it would show history going backwards
	// in merged logs. A first Enqueue whose log line died with its
	// process is read back from the store by the kill tests.)
	//
	// The persist is stamped with the store's acceptance, not now: in
	// another process, a worker may adopt the record and log its first
	// attempt, stamped with its own clock reading, before this process,
	// slowed by load, gets to this line; merged by time, the logs must
	// still show the record accepted before it was attempted.
	if created {
		s.rec.addLocked(invariants.Entry{At: r.AcceptedAt, Kind: invariants.Persisted, Worker: "store", ID: r.ID, Seq: r.Seq, Record: r.Machine()})
	}
	s.rec.addLocked(invariants.Entry{Kind: invariants.Acked, ID: r.ID, Seq: r.Seq})
}

func (s recordingStore) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	ls, err := s.Store.ClaimDue(ctx, owner, ttl, max)
	for _, l := range ls {
		s.rec.addLocked(invariants.Entry{Kind: invariants.LeaseGranted, Worker: owner, Token: l.Token, Until: l.Expires})
		if s.rec.granted == nil {
			s.rec.granted = map[string]time.Time{}
		}
		s.rec.granted[l.Stream] = time.Now()
	}
	return ls, err
}

// policy wraps the workers' Policy to measure how long after a grant the
// new owner asks whether the stream is paused: the run's Stall for the
// pause rule (invariants.Run.Stall). An owner granted a stream just before
// a resume may read the pause after it and rightly keep the stream; the
// rule forgives a grant that close to the resume, and how close is what a
// real process on a loaded machine shows, not zero.
func (r *recorder) policy(f func(string) (machine.Config, error)) func(string) (machine.Config, error) {
	return func(stream string) (machine.Config, error) {
		cfg, err := f(stream)
		read := time.Now() // the pause was read by now
		r.mu.Lock()
		defer r.mu.Unlock()
		if at, ok := r.granted[stream]; ok {
			r.stall = max(r.stall, read.Sub(at))
			delete(r.granted, stream)
		}
		return cfg, err
	}
}

// grantToPolicy is the longest an owner took, from a grant, to ask Policy
// about the stream granted.
func (r *recorder) grantToPolicy() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stall
}

func (s recordingStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	nl, err := s.Store.Renew(ctx, l, ttl)
	if err == nil {
		s.rec.addLocked(invariants.Entry{Kind: invariants.LeaseRenewed, Worker: l.Owner, Token: nl.Token, Until: nl.Expires})
	}
	return nl, err
}

// Save logs the records the store now holds, under the log's lock so
// that the log keeps the store's order, but unstamped: the worker made
// the batch at its clock reading for the step (from which its machine
// computed each NextAt), and reports that reading in the Persisted event
// it observes as soon as Save returns nil (recorder.observer). Any
// reading taken here would come later by whatever the worker waited for
// since its step began (the log's lock, held by a publish blocked behind
// a SQLite write, the write's own fsync, the loop's other work on a
// loaded machine), and the checker would judge that wait as backoff the
// policy never chose.
func (s recordingStore) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.logSaveLocked(ctx, l, ups, s.Store.Save(ctx, l, ups))
}

// SaveBatch implements store.BatchSaver as the store below does
// (store.SaveEach), and logs each save as Save does, in batch order.
func (s recordingStore) SaveBatch(ctx context.Context, saves []store.LeaseSave) ([]error, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	errs := store.SaveEach(ctx, s.Store, saves)
	for i, sv := range saves {
		errs[i] = s.logSaveLocked(ctx, sv.Lease, sv.Updates, errs[i])
	}
	return errs, nil
}

// logSaveLocked logs a Save through l that returned err: a refused write,
// or the persists it made, held until the worker stamps them. It returns
// the error the Save's caller gets.
func (s recordingStore) logSaveLocked(ctx context.Context, l store.Lease, ups []store.Update, err error) error {
	switch {
	case errors.Is(err, store.ErrInvalidWrite):
		s.rec.addLocked(invariants.Entry{Kind: invariants.WriteRejected, Worker: l.Owner, Token: l.Token, Detail: err.Error()})
		return err
	case err != nil:
		return err
	}
	persists := make([]invariants.Entry, 0, len(ups))
	for _, u := range ups {
		r, err := s.Store.Get(ctx, u.ID)
		if err != nil {
			// The save is durable, but the worker, told it failed,
			// reports no Persisted and re-reads: log what was read, now.
			for _, e := range persists {
				s.rec.addLocked(e)
			}
			return err
		}
		m := r.Machine()
		persists = append(persists, invariants.Entry{Kind: invariants.Persisted, Worker: l.Owner, Token: l.Token, ID: m.ID, Seq: m.Seq, Record: m})
	}
	s.rec.holdLocked(l.Owner, l.Token, persists)
	return nil
}

// Replay logs an operator's replay that the store made (Replayed), with
// the replay's fencing token and the record as the store now holds it.
func (s recordingStore) Replay(ctx context.Context, id, by string) (store.Record, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	r, err := s.Store.Replay(ctx, id, by)
	if err != nil {
		return r, err
	}
	var token uint64
	if h := r.History; len(h) > 0 {
		token = h[len(h)-1].Token
	}
	m := r.Machine()
	s.rec.addLocked(invariants.Entry{Kind: invariants.Replayed, ID: m.ID, Seq: m.Seq, Worker: by, Token: token, Record: m})
	return r, nil
}

// operator makes an operator's pause or resume of stream (change) and
// logs it as kind (invariants.Paused or Resumed), under the log's lock:
// no worker logs a send between the change and its entry, so a takeover
// the resume allowed is never logged before the resume. A nil recorder
// only makes the change.
func (r *recorder) operator(kind invariants.Kind, stream string, change func() error) error {
	if r == nil {
		return change()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := change(); err != nil {
		return err
	}
	r.addLocked(invariants.Entry{At: time.Now(), Kind: kind, Detail: stream})
	return nil
}

// leaseRules sets what the lease-kept and pause rules judge a recorded
// serve run of config c by: its workers' ClockMargin, and their
// RenewEvery, how soon an owner asks Policy again (Recheck). serve gives
// its workers c's lease_ttl and poll and leaves both to the worker's
// defaults.
func leaseRules(run *invariants.Run, c *Config) {
	wc := worker.Config{LeaseTTL: c.LeaseTTL.Duration, Poll: c.Poll.Duration}.WithDefaults()
	run.ClockMargin, run.Recheck = wc.ClockMargin, wc.RenewEvery
}

// hooks let the demo observe a serve run; serve passes nil.
type hooks struct {
	rec   *recorder
	store store.Store // set by serveConfig: the store, for the final state
}

// recorder is the run's recorder, nil without hooks.
func (h *hooks) recorder() *recorder {
	if h == nil {
		return nil
	}
	return h.rec
}

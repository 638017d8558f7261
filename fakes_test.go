package courier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
	"github.com/courierlab/courier/worker/observe"
)

// recorder builds the observation log that invariants.Check judges, one
// log per stream. Every entry is added under mu, and the store wrapper
// and the receiver hold mu across the change they record, so the log's
// order is the order things happened.
type recorder struct {
	mu      sync.Mutex
	entries []entry
}

type entry struct {
	stream string
	e      invariants.Entry
}

func (r *recorder) addLocked(stream string, e invariants.Entry) {
	e.At = time.Now()
	r.entries = append(r.entries, entry{stream, e})
}

// observer records a worker's events as the checker wants them
// (worker/observe), stamped when they are logged, under the name of the
// worker that acted (a Service with several Workers has one observer).
func (r *recorder) observer() worker.Observer {
	return worker.ObserverFunc(func(ev worker.Event) {
		if ev.Kind == worker.Persisted {
			return // logged by the store, under its lock (faultStore)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range observe.Worker(nil, ev.Owner, ev) {
			r.addLocked(ev.Stream, e)
		}
	})
}

// runs splits the log by stream.
func (r *recorder) runs(base invariants.Run, final func(stream string) []machine.Record) map[string]invariants.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]invariants.Run{}
	for _, en := range r.entries {
		run := out[en.stream]
		run.Add(en.e)
		out[en.stream] = run
	}
	for stream, run := range out {
		entries := run.Entries
		run = base
		run.Entries = entries
		run.Final = final(stream)
		out[stream] = run
	}
	return out
}

// faults is the fault schedule: what goes wrong, and until when.
type faults struct {
	mu          sync.Mutex
	rnd         *rand.Rand
	end         time.Time // no fault from then on
	outages     []window  // the channel refuses everything
	storeDown   []window  // the store refuses every write
	lostReply   float64   // the receiver applies, the reply never comes
	slow        float64   // a reply comes after up to twice the attempt timeout
	lostSave    float64   // a Save commits and its reply is lost
	steal       float64   // a send's stream is stolen while it is out
	maxLatency  time.Duration
	stealTTL    time.Duration
	stolen      int
	lostSaves   int
	lostReplies int
}

type window struct{ from, to time.Time }

func in(ws []window, t time.Time) bool {
	for _, w := range ws {
		if !t.Before(w.from) && t.Before(w.to) {
			return true
		}
	}
	return false
}

// chance draws against p while faults last.
func (f *faults) chance(p float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Before(f.end) && f.rnd.Float64() < p
}

func (f *faults) latency(max time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Duration(f.rnd.Int64N(int64(max)) + 1)
}

// faultStore is memstore behind the recorder, with injected faults: writes
// refused while the store is down, Saves whose reply is lost after they
// committed, and a thief that steals a stream's lease.
type faultStore struct {
	*memstore.Store
	rec    *recorder
	f      *faults
	mu     sync.Mutex
	leases map[string]store.Lease // the latest lease granted or renewed, per stream
}

func newFaultStore(rec *recorder, f *faults) *faultStore {
	s := &faultStore{Store: memstore.New(time.Now), rec: rec, f: f, leases: map[string]store.Lease{}}
	s.SetUnavailable(func() bool { return in(f.storeDown, time.Now()) })
	return s
}

func (s *faultStore) Enqueue(ctx context.Context, stream, id string, payload []byte) (store.Record, bool, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	r, created, err := s.Store.Enqueue(ctx, stream, id, payload)
	if err != nil {
		return r, created, err
	}
	if created {
		s.rec.addLocked(stream, invariants.Entry{Kind: invariants.Persisted, Worker: "store", ID: r.ID, Seq: r.Seq, Record: r.Machine()})
	}
	// The producer is acknowledged once Enqueue returns nil.
	s.rec.addLocked(stream, invariants.Entry{Kind: invariants.Acked, ID: r.ID, Seq: r.Seq})
	return r, created, nil
}

func (s *faultStore) note(ls ...store.Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range ls {
		s.leases[l.Stream] = l
	}
}

func (s *faultStore) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	ls, err := s.Store.ClaimDue(ctx, owner, ttl, max)
	for _, l := range ls {
		s.rec.addLocked(l.Stream, invariants.Entry{Kind: invariants.LeaseGranted, Worker: owner, Token: l.Token, Until: l.Expires})
	}
	s.note(ls...)
	return ls, err
}

func (s *faultStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	nl, err := s.Store.Renew(ctx, l, ttl)
	if err == nil {
		s.rec.addLocked(l.Stream, invariants.Entry{Kind: invariants.LeaseRenewed, Worker: l.Owner, Token: nl.Token, Until: nl.Expires})
		s.note(nl)
	}
	return nl, err
}

func (s *faultStore) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	err := s.Store.Save(ctx, l, ups)
	switch {
	case errors.Is(err, store.ErrInvalidWrite):
		s.rec.addLocked(l.Stream, invariants.Entry{Kind: invariants.WriteRejected, Worker: l.Owner, Token: l.Token, Detail: err.Error()})
		return err
	case err != nil:
		return err
	}
	for _, u := range ups {
		r, err := s.Store.Get(ctx, u.ID)
		if err != nil {
			panic(fmt.Sprintf("a record just saved cannot be read: %v", err))
		}
		m := r.Machine()
		s.rec.addLocked(l.Stream, invariants.Entry{Kind: invariants.Persisted, Worker: l.Owner, Token: l.Token, ID: m.ID, Seq: m.Seq, Record: m})
	}
	if s.f.chance(s.f.lostSave) {
		s.f.mu.Lock()
		s.f.lostSaves++
		s.f.mu.Unlock()
		return fmt.Errorf("%w: the reply to a committed save was lost", store.ErrUnknown)
	}
	return nil
}

// steal takes stream's lease from whoever holds it: the lease is released
// behind its owner's back and a thief holds the stream for stealTTL,
// doing nothing with it.
func (s *faultStore) steal(stream string) {
	s.mu.Lock()
	l, ok := s.leases[stream]
	s.mu.Unlock()
	if !ok || l.Owner == "thief" {
		return
	}
	ctx := context.Background()
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if s.Store.Release(ctx, l) != nil {
		return // already stale, or the store is down
	}
	nl, err := s.Store.Acquire(ctx, stream, "thief", s.f.stealTTL)
	if err != nil {
		return
	}
	s.rec.addLocked(stream, invariants.Entry{Kind: invariants.LeaseGranted, Worker: "thief", Token: nl.Token, Until: nl.Expires})
	s.note(nl)
	s.f.mu.Lock()
	s.f.stolen++
	s.f.mu.Unlock()
}

// fakeChannel is the network and the receivers: one deduplicating,
// sequence-fencing receiver per stream, behind a network that has
// outages, loses replies, answers slowly, and lets a thief steal the
// stream while an attempt is out.
type fakeChannel struct {
	fence bool // receivers apply only sequences above the last applied (strict order)
	rec   *recorder
	f     *faults
	st    *faultStore
	recvs map[string]*receiver // guarded by rec.mu
}

type receiver struct {
	applied map[string]bool
	lastSeq uint64
	count   int
}

func newFakeChannel(rec *recorder, f *faults, st *faultStore, fence bool) *fakeChannel {
	return &fakeChannel{fence: fence, rec: rec, f: f, st: st, recvs: map[string]*receiver{}}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func timedOut(why string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeTimedOut, Detail: why}
}

func (c *fakeChannel) Send(ctx context.Context, a channel.Attempt) channel.Outcome {
	if in(c.f.outages, time.Now()) {
		sleep(ctx, time.Millisecond)
		return channel.Outcome{Result: machine.OutcomeFailed, Detail: "connection refused"}
	}
	if c.f.chance(c.f.steal) {
		c.st.steal(a.Stream)
	}
	max := c.f.maxLatency
	if c.f.chance(c.f.slow) {
		max = 2 * (5 * time.Second) // past the attempt timeout, sometimes
	}
	if !sleep(ctx, c.f.latency(max)) {
		return timedOut("no answer") // the request never arrived
	}
	verdict := c.deliver(a)
	if c.f.chance(c.f.lostReply) {
		c.f.mu.Lock()
		c.f.lostReplies++
		c.f.mu.Unlock()
		<-ctx.Done()
		return timedOut("reply lost")
	}
	if !sleep(ctx, c.f.latency(c.f.maxLatency)) {
		return timedOut("no answer")
	}
	return verdict
}

// deliver is the receiver: apply once, in sequence order.
func (c *fakeChannel) deliver(a channel.Attempt) channel.Outcome {
	c.rec.mu.Lock()
	defer c.rec.mu.Unlock()
	r := c.recvs[a.Stream]
	if r == nil {
		r = &receiver{applied: map[string]bool{}}
		c.recvs[a.Stream] = r
	}
	e := invariants.Entry{ID: a.ID, Seq: a.Seq, Attempt: a.Attempt}
	switch {
	case r.applied[a.ID]:
		e.Kind, e.Detail = invariants.Discarded, "duplicate"
		c.rec.addLocked(a.Stream, e)
		return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
	case c.fence && a.Seq <= r.lastSeq:
		e.Kind, e.Detail = invariants.Discarded, "fenced"
		c.rec.addLocked(a.Stream, e)
		return channel.Outcome{Result: machine.OutcomeRefused, Status: 409, Detail: "sequence fenced"}
	}
	r.applied[a.ID] = true
	r.lastSeq = max(r.lastSeq, a.Seq)
	r.count++
	e.Kind = invariants.Applied
	c.rec.addLocked(a.Stream, e)
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (c *fakeChannel) Probe(ctx context.Context, stream string) channel.Outcome {
	if in(c.f.outages, time.Now()) {
		return channel.Outcome{Result: machine.OutcomeFailed, Detail: "connection refused"}
	}
	if !sleep(ctx, c.f.latency(c.f.maxLatency)) {
		return timedOut("no answer")
	}
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

// settled reports whether every record of every stream is delivered or
// dead.
func settled(s *memstore.Store, streams []string) bool {
	for _, name := range streams {
		if slices.ContainsFunc(s.Records(name), func(r machine.Record) bool { return !r.State.Terminal() }) {
			return false
		}
	}
	return true
}

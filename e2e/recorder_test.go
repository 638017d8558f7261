// This file builds the observation log that invariants.Check judges, as
// the root package's shell tests do: one log per stream, every entry added
// under one lock held across the change it records, so that the log's
// order is the order things happened. It proves nothing by itself.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/webhook/receiver"
	"github.com/courierlab/courier/worker"
	"github.com/courierlab/courier/worker/observe"
)

type recorder struct {
	// enq is held across an Enqueue and its entries, and taken by the
	// worker's observer, so that no worker entry about an event can come
	// before the entries of its acceptance. Nothing else is held across a
	// store call: the receiver never waits for the sender's store.
	enq     sync.Mutex
	mu      sync.Mutex
	entries []entry
	// What the application behind the receiver kit did: how many times
	// it applied each ID, and the sequences it applied per stream, in
	// order.
	applied map[string]int
	seqs    map[string][]uint64
	// sink, if set, takes every entry instead of the log (a child process
	// prints them for its parent), called under mu.
	sink   func(stream string, e invariants.Entry)
	dups   int // deliveries the kit answered as duplicates
	fenced int // deliveries the kit refused as superseded (409)
}

type entry struct {
	stream string
	e      invariants.Entry
}

func newRecorder() *recorder {
	return &recorder{applied: map[string]int{}, seqs: map[string][]uint64{}}
}

// addLocked appends e, stamped now unless it carries the worker's clock.
func (r *recorder) addLocked(stream string, e invariants.Entry) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	if r.sink != nil {
		r.sink(stream, e)
		return
	}
	r.entries = append(r.entries, entry{stream, e})
}

func (r *recorder) add(stream string, e invariants.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(stream, e)
}

// observer records a worker's events as the checker wants them, each
// stamped with the worker's clock: the instant the worker acted by, from
// which it computed the NextAt it persisted (Run.Skew covers the lag of
// that clock behind the receiver's entries). A reply and the records it
// led to carry the same instant, as the checker expects of a landing.
// Persisted is reported by the worker once Save returned nil: durable.
func (r *recorder) observer(owner string) worker.Observer {
	return worker.ObserverFunc(func(ev worker.Event) {
		r.enq.Lock()
		defer r.enq.Unlock()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range observe.Worker(nil, owner, ev) {
			r.addLocked(ev.Stream, e)
		}
	})
}

// app is the application behind the receiver kit: it records each event
// it applies. It is where "applied" is observed, so a duplicate the kit
// let through would show here.
func (r *recorder) app() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ev, ok := receiver.FromContext(req.Context())
		if !ok {
			http.Error(w, "no verified event", http.StatusInternalServerError)
			return
		}
		if c, ok := req.Context().Value(reachedKey{}).(*bool); ok {
			*c = true
		}
		r.mu.Lock()
		r.applied[ev.ID]++
		r.seqs[ev.Stream] = append(r.seqs[ev.Stream], ev.Seq)
		r.addLocked(ev.Stream, invariants.Entry{Kind: invariants.Applied, ID: ev.ID, Seq: ev.Seq, Attempt: ev.Attempt})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
}

type reachedKey struct{}

// discards wraps the kit: a POST it answered without reaching the
// application is a discard, 2xx a duplicate, 409 a fenced late attempt.
func (r *recorder) discards(kit http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		reached := new(bool)
		sw := &statusWriter{ResponseWriter: w}
		kit.ServeHTTP(sw, req.WithContext(context.WithValue(req.Context(), reachedKey{}, reached)))
		if req.Method != http.MethodPost || *reached {
			return
		}
		e := invariants.Entry{Kind: invariants.Discarded, ID: req.Header.Get("webhook-id")}
		_, _ = fmt.Sscan(req.Header.Get("courier-sequence"), &e.Seq)
		_, _ = fmt.Sscan(req.Header.Get("courier-attempt"), &e.Attempt)
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case sw.status >= 200 && sw.status < 300:
			e.Detail = "duplicate"
			r.dups++
		case sw.status == http.StatusConflict:
			e.Detail = "fenced"
			r.fenced++
		default:
			return // refused before the dedup (never for a signed request)
		}
		r.addLocked(req.Header.Get("courier-stream"), e)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// runs splits the log by stream, each with its final records.
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

// recStore is a store.Store (the real SQLite file) whose acknowledged
// enqueues, leases and refused writes are recorded. The lease calls and
// Save are made by the worker's loop, which records its own entries on the
// same goroutine after they return, so recording after the call keeps the
// order; an Enqueue holds recorder.enq (see there). In a child of
// TestKillLoop, steps follows the worker's store calls and announces each
// Save before it is made (see stepClock); nil elsewhere.
type recStore struct {
	store.Store
	rec   *recorder
	steps *stepClock
}

func (s *recStore) Enqueue(ctx context.Context, stream, id string, payload []byte) (store.Record, bool, error) {
	s.rec.enq.Lock()
	defer s.rec.enq.Unlock()
	r, created, err := s.Store.Enqueue(ctx, stream, id, payload)
	if err != nil {
		return r, created, err
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if created {
		s.rec.addLocked(stream, invariants.Entry{Kind: invariants.Persisted, Worker: "store", ID: r.ID, Seq: r.Seq, Record: r.Machine()})
	}
	// The producer is acknowledged once Publish returns nil, which is once
	// Enqueue returned nil.
	s.rec.addLocked(stream, invariants.Entry{Kind: invariants.Acked, ID: r.ID, Seq: r.Seq})
	return r, created, nil
}

func (s *recStore) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	s.steps.called(ctx)
	ls, err := s.Store.ClaimDue(ctx, owner, ttl, max)
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	for _, l := range ls {
		s.rec.addLocked(l.Stream, invariants.Entry{Kind: invariants.LeaseGranted, Worker: owner, Token: l.Token, Until: l.Expires})
	}
	return ls, err
}

func (s *recStore) Acquire(ctx context.Context, stream, owner string, ttl time.Duration) (store.Lease, error) {
	l, err := s.Store.Acquire(ctx, stream, owner, ttl)
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if err == nil {
		s.rec.addLocked(stream, invariants.Entry{Kind: invariants.LeaseGranted, Worker: owner, Token: l.Token, Until: l.Expires})
	}
	return l, err
}

func (s *recStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	s.steps.called(ctx)
	nl, err := s.Store.Renew(ctx, l, ttl)
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if err == nil {
		s.rec.addLocked(l.Stream, invariants.Entry{Kind: invariants.LeaseRenewed, Worker: l.Owner, Token: nl.Token, Until: nl.Expires})
	}
	return nl, err
}

func (s *recStore) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	s.steps.called(ctx)
	return s.Store.Pending(ctx, l, after, limit)
}

func (s *recStore) Release(ctx context.Context, l store.Lease) error {
	s.steps.called(ctx)
	return s.Store.Release(ctx, l)
}

func (s *recStore) ReleaseUntil(ctx context.Context, l store.Lease, until time.Time) error {
	s.steps.called(ctx)
	return s.Store.ReleaseUntil(ctx, l, until)
}

func (s *recStore) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	s.steps.announce(ctx, l, ups)
	err := s.Store.Save(ctx, l, ups)
	s.steps.saved(err)
	if errors.Is(err, store.ErrInvalidWrite) {
		s.rec.add(l.Stream, invariants.Entry{Kind: invariants.WriteRejected, Worker: l.Owner, Token: l.Token, Detail: err.Error()})
	}
	return err // the worker reports what it persisted (recorder.observer)
}

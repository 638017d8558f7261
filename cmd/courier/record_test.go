// This file proves that the recorder stamps a worker's persists with the
// worker's clock reading for the step, not the instant Save ran, and
// keeps them where the store made them durable in the log's order.
package main

import (
	"context"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

func TestRecorderStampsPersistsWithTheWorkersReading(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	st := recordingStore{Store: memstore.New(time.Now), rec: rec}
	obs := rec.observer()
	r, _, err := st.Enqueue(ctx, "s", "e1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := st.ClaimDue(ctx, "w", time.Minute, 1)
	if err != nil || len(ls) != 1 {
		t.Fatalf("ClaimDue = %v, %v", ls, err)
	}
	// The worker's step: its reading, then a wait (a publish holding the
	// log's lock behind a slow write), then the Save of its batch.
	reading := time.Now()
	time.Sleep(20 * time.Millisecond)
	m := r.Machine()
	m.State, m.Attempts, m.NextAt = machine.Retry, 1, reading.Add(100*time.Millisecond)
	if err := st.Save(ctx, ls[0], store.UpdatesOf([]machine.Record{m})); err != nil {
		t.Fatal(err)
	}
	// Logged by another goroutine before the worker reports the Save:
	// it comes after the persist, which the store made durable first.
	rec.add(invariants.Entry{Kind: invariants.Applied, ID: "other"})
	obs.Observe(worker.Event{Kind: worker.Persisted, At: reading, Owner: "w", Stream: "s", Token: ls[0].Token, Records: []machine.Record{m}})

	var kinds []invariants.Kind
	var persist invariants.Entry
	for _, e := range rec.run.Entries {
		kinds = append(kinds, e.Kind)
		if e.Kind == invariants.Persisted && e.Worker == "w" {
			persist = e
		}
	}
	want := []invariants.Kind{invariants.Persisted, invariants.Acked, invariants.LeaseGranted, invariants.Persisted, invariants.Applied}
	if len(kinds) != len(want) {
		t.Fatalf("log kinds %v; want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("log kinds %v; want %v", kinds, want)
		}
	}
	if !persist.At.Equal(reading) {
		t.Errorf("persist stamped %v after the worker's reading; want the reading itself", persist.At.Sub(reading))
	}
	if d := persist.Record.NextAt.Sub(persist.At); d != 100*time.Millisecond {
		t.Errorf("the log says the next attempt is due %v later; the worker chose 100ms", d)
	}
}

// TestRecorderStampsEachWorkersSaves: two workers of one process save
// at once; each one's persists get that worker's reading, whichever
// reports first, and the log keeps the store's order.
func TestRecorderStampsEachWorkersSaves(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	st := recordingStore{Store: memstore.New(time.Now), rec: rec}
	obs := rec.observer()
	var leases []store.Lease
	var recs []machine.Record
	for _, s := range []string{"a", "b"} {
		r, _, err := st.Enqueue(ctx, s, s+"1", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		l, err := st.Acquire(ctx, s, "p/"+s, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		leases, recs = append(leases, l), append(recs, r.Machine())
	}
	readings := []time.Time{time.Now().Add(-2 * time.Second), time.Now().Add(-time.Second)}
	for i := range leases {
		m := recs[i]
		m.Attempts = 1
		if err := st.Save(ctx, leases[i], store.UpdatesOf([]machine.Record{m})); err != nil {
			t.Fatal(err)
		}
		recs[i] = m
	}
	// b's worker reports first: a's persist, durable first, still holds
	// the log.
	obs.Observe(worker.Event{Kind: worker.Persisted, At: readings[1], Owner: "p/b", Stream: "b", Token: leases[1].Token, Records: recs[1:]})
	if n := len(rec.run.Entries); n != 4 {
		t.Fatalf("%d entries logged before a's worker reported; want the 4 before a's Save", n)
	}
	obs.Observe(worker.Event{Kind: worker.Persisted, At: readings[0], Owner: "p/a", Stream: "a", Token: leases[0].Token, Records: recs[:1]})
	var got []string
	for _, e := range rec.run.Entries {
		if e.Kind == invariants.Persisted && e.Worker != "store" {
			got = append(got, e.Worker)
			want := readings[0]
			if e.Worker == "p/b" {
				want = readings[1]
			}
			if !e.At.Equal(want) {
				t.Errorf("%s's persist stamped %v; want its worker's reading %v", e.Worker, e.At, want)
			}
		}
	}
	if len(got) != 2 || got[0] != "p/a" || got[1] != "p/b" {
		t.Errorf("persists logged by %v; want [p/a p/b], the store's order", got)
	}
}

// TestRecorderStampsEachLeasesSave: one worker saves two streams'
// batches in one call (worker.Worker.DeliverAll) before it reports
// either; each persist gets its own event's reading, not the time the
// next Save came.
func TestRecorderStampsEachLeasesSave(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	st := recordingStore{Store: memstore.New(time.Now), rec: rec}
	obs := rec.observer()
	readings := map[string]time.Time{"a1": time.Now().Add(-2 * time.Second), "b1": time.Now().Add(-time.Second)}
	var events []worker.Event
	for _, s := range []string{"a", "b"} {
		r, _, err := st.Enqueue(ctx, s, s+"1", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		l, err := st.Acquire(ctx, s, "p", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		m := r.Machine()
		m.Attempts = 1
		if err := st.Save(ctx, l, store.UpdatesOf([]machine.Record{m})); err != nil {
			t.Fatal(err)
		}
		events = append(events, worker.Event{Kind: worker.Persisted, At: readings[m.ID], Owner: "p", Stream: s, Token: l.Token, Records: []machine.Record{m}})
	}
	for _, ev := range events {
		obs.Observe(ev)
	}
	n := 0
	for _, e := range rec.run.Entries {
		if e.Kind == invariants.Persisted && e.Worker == "p" {
			n++
			if !e.At.Equal(readings[e.ID]) {
				t.Errorf("%s's persist stamped %v; want its event's reading %v", e.ID, e.At, readings[e.ID])
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d persists of p logged; want 2", n)
	}
}

package storetest

import (
	"errors"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// enqueueNewRecord: a new event is pending, unattempted, with the next
// Seq, and accepted and due at the store's now.
func enqueueNewRecord(e *env) {
	got := e.enqueue("s", "e1", "p1")
	e.clock.Advance(time.Second)
	got2 := e.enqueue("s", "e2", "p2")

	at2 := epoch.Add(time.Second)
	want := store.Record{
		Event:    store.Event{Stream: "s", ID: "e1", Seq: 1, Payload: []byte("p1"), AcceptedAt: epoch},
		Delivery: store.Delivery{State: machine.Pending, NextAt: epoch},
	}
	want2 := store.Record{
		Event:    store.Event{Stream: "s", ID: "e2", Seq: 2, Payload: []byte("p2"), AcceptedAt: at2},
		Delivery: store.Delivery{State: machine.Pending, NextAt: at2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		e.t.Errorf("Enqueue e1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want2, got2); diff != "" {
		e.t.Errorf("Enqueue e2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.get("e1")); diff != "" {
		e.t.Errorf("Get e1 (-want +got):\n%s", diff)
	}
}

// enqueueIdempotent: enqueueing a known ID returns the stored record,
// created false, and changes nothing, whatever the payload and however far
// the record has moved on; a duplicate consumes no Seq.
func enqueueIdempotent(e *env) {
	e.enqueue("s", "e1", "original")
	moved := e.update("s", "e1", func(r *machine.Record) {
		r.State = machine.Retry
		r.Attempts = 1
		r.NextAt = e.clock.Now().Add(5 * time.Second)
	})
	e.enqueue("s", "e2", "first")

	for _, c := range []struct {
		id, payload string
		want        store.Record
	}{
		{"e1", "different", moved},
		{"e1", "original", moved},
		{"e2", "second", e.get("e2")},
	} {
		got, created, err := e.s.Enqueue(e.ctx, "s", c.id, []byte(c.payload))
		if err != nil {
			e.t.Fatalf("Enqueue(%q) again: %v", c.id, err)
		}
		if created {
			e.t.Errorf("Enqueue(%q) again: created = true, want false", c.id)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			e.t.Errorf("Enqueue(%q, %q) again returned (-want +got):\n%s", c.id, c.payload, diff)
		}
		if diff := cmp.Diff(c.want, e.get(c.id)); diff != "" {
			e.t.Errorf("Get(%q) after enqueueing it again (-want +got):\n%s", c.id, diff)
		}
	}
	if got := e.enqueue("s", "e3", "p3").Seq; got != 3 {
		e.t.Errorf("Seq of the next new event = %d, want 3 (a duplicate takes no Seq)", got)
	}
}

// enqueueCaseSensitive: IDs are opaque bytes; "A" and "a" are two events.
func enqueueCaseSensitive(e *env) {
	a := e.enqueue("s", "A", "upper")
	b, created, err := e.s.Enqueue(e.ctx, "s", "a", []byte("lower"))
	if err != nil || !created {
		e.t.Fatalf(`Enqueue("a") after "A": created = %v, err = %v; want a new event`, created, err)
	}
	if a.Seq != 1 || b.Seq != 2 {
		e.t.Errorf(`seqs of "A", "a" = %d, %d; want 1, 2`, a.Seq, b.Seq)
	}
	if got := string(e.get("A").Payload); got != "upper" {
		e.t.Errorf(`Get("A").Payload = %q, want "upper"`, got)
	}
	if got := string(e.get("a").Payload); got != "lower" {
		e.t.Errorf(`Get("a").Payload = %q, want "lower"`, got)
	}
}

// enqueueSeqPerStream: each stream numbers its events 1, 2, 3 on its own,
// however enqueues to different streams interleave.
func enqueueSeqPerStream(e *env) {
	type step struct {
		stream, id string
		seq        uint64
	}
	var want, got []step
	for _, s := range []step{
		{"s1", "a", 1}, {"s2", "b", 1}, {"s1", "c", 2}, {"s2", "d", 2}, {"s1", "e", 3}, {"s3", "f", 1}, {"s2", "g", 3},
	} {
		want = append(want, s)
		got = append(got, step{s.stream, s.id, e.enqueue(s.stream, s.id, "p").Seq})
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
		e.t.Errorf("seqs (-want +got):\n%s", diff)
	}
}

// enqueueUniqueAcrossStreams: an ID names one event in the whole store; a
// second stream enqueueing it gets the first stream's record and gains
// nothing.
func enqueueUniqueAcrossStreams(e *env) {
	first := e.enqueue("s1", "x", "p1")
	_, created, err := e.s.Enqueue(e.ctx, "s2", "x", []byte("p2"))
	if !errors.Is(err, store.ErrBadArgument) || created {
		e.t.Errorf(`Enqueue("s2", "x") after Enqueue("s1", "x"): created %v, err %v; want ErrBadArgument (the ID belongs to s1)`, created, err)
	}
	if got, err := e.s.Get(e.ctx, "x"); err != nil || !cmp.Equal(first, got) {
		e.t.Errorf(`Get("x") after the refused enqueue = %+v, %v; want the first record unchanged`, got, err)
	}
	if diff := cmp.Diff([]string{"s1"}, streamsOf(e.claim("w", 10)), diffOpts...); diff != "" {
		e.t.Errorf("streams with due work (-want +got):\n%s", diff)
	}
	if got := e.enqueue("s2", "y", "p").Seq; got != 1 {
		e.t.Errorf(`Seq of the first new event of s2 = %d, want 1`, got)
	}
}

// enqueueBadArguments: an empty stream or ID, or an ID longer than
// machine.MaxIDBytes (which the machine could not recover), is refused
// with ErrBadArgument and stores nothing.
func enqueueBadArguments(e *env) {
	long := strings.Repeat("x", machine.MaxIDBytes+1)
	for _, c := range []struct {
		name, stream, id string
	}{
		{"empty-stream", "", "e1"},
		{"empty-id", "s", ""},
		{"id-too-long", "s", long},
	} {
		_, _, err := e.s.Enqueue(e.ctx, c.stream, c.id, []byte("p"))
		e.wantErr("Enqueue "+c.name, err, store.ErrBadArgument)
	}
	for _, id := range []string{"e1", long} {
		_, err := e.s.Get(e.ctx, id)
		e.wantErr("Get after a refused Enqueue", err, store.ErrNotFound)
	}
	if got := e.enqueue("s", strings.Repeat("x", machine.MaxIDBytes), "p").Seq; got != 1 {
		e.t.Errorf("Seq of an ID of exactly MaxIDBytes = %d, want 1 (refused enqueues take no Seq)", got)
	}
}

// recordsAreCopies: the store shares no payload memory with its callers,
// in either direction.
func recordsAreCopies(e *env) {
	payload := []byte("original")
	rec, _, err := e.s.Enqueue(e.ctx, "s", "e1", payload)
	if err != nil {
		e.t.Fatal(err)
	}
	payload[0] = 'X'
	rec.Payload[0] = 'Y'
	got := e.get("e1")
	got.Payload[0] = 'Z'

	l := e.acquire("s", "w")
	saved := e.pending(l, 0)[0]
	saved.Attempts = 1
	e.save(l, saved)
	saved.Payload[0] = 'W'
	if got := string(e.get("e1").Payload); got != "original" {
		e.t.Errorf("stored payload = %q after callers modified their copies, want %q", got, "original")
	}
}

// getUnknownID: Get of an ID never enqueued is ErrNotFound.
func getUnknownID(e *env) {
	e.enqueue("s", "e1", "p")
	_, err := e.s.Get(e.ctx, "E1")
	e.wantErr(`Get("E1")`, err, store.ErrNotFound)
}

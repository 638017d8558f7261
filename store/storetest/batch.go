package storetest

import (
	"context"
	"errors"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/store"
)

// enqueueBatchOutcomes: a batch (EnqueueBatch where the store has it,
// store.EnqueueEach either way) gives each event what Enqueue would: new
// events created in batch order per stream, a known ID its record, an ID
// the batch took earlier its duplicate, and a refused event its error,
// while the others are enqueued all the same.
func enqueueBatchOutcomes(e *env) {
	known := e.enqueue("a", "old", "p0")
	out := store.EnqueueEach(e.ctx, e.s, []store.NewEvent{
		{Stream: "b", ID: "b1", Payload: []byte("x")},
		{Stream: "a", ID: "a2", Payload: []byte("y")},
		{Stream: "a", ID: "old", Payload: []byte("other payload")},
		{Stream: "b", ID: "old", Payload: []byte("z")}, // an ID of stream a
		{Stream: "b", ID: "b2", Payload: []byte("w")},
		{Stream: "", ID: "nameless", Payload: []byte("v")},
		{Stream: "b", ID: "b1", Payload: []byte("again")},
	})
	if len(out) != 7 {
		e.t.Fatalf("%d outcomes for 7 events", len(out))
	}
	wantNew := func(i int, stream, id string, seq uint64) {
		e.t.Helper()
		o := out[i]
		if o.Err != nil || !o.Created || o.Record.Stream != stream || o.Record.ID != id || o.Record.Seq != seq {
			e.t.Errorf("event %d: %+v; want %s created on %s with seq %d", i, o, id, stream, seq)
		}
		if diff := cmp.Diff(o.Record, e.get(id)); diff != "" {
			e.t.Errorf("event %d: the outcome is not what the store holds (-outcome +Get):\n%s", i, diff)
		}
	}
	wantNew(0, "b", "b1", 1)
	wantNew(1, "a", "a2", 2)
	wantNew(4, "b", "b2", 2)
	if o := out[2]; o.Err != nil || o.Created || !cmp.Equal(o.Record, known) {
		e.t.Errorf("a known ID: %+v; want its record, not created", o)
	}
	if o := out[3]; !errors.Is(o.Err, store.ErrBadArgument) || !strings.Contains(o.Err.Error(), `"a"`) {
		e.t.Errorf("an ID of another stream: %v; want ErrBadArgument naming stream a", o.Err)
	}
	if o := out[5]; !errors.Is(o.Err, store.ErrBadArgument) {
		e.t.Errorf("an empty stream name: %v; want ErrBadArgument", o.Err)
	}
	if o := out[6]; o.Err != nil || o.Created || o.Record.Seq != 1 || string(o.Record.Payload) != "x" {
		e.t.Errorf("an ID the batch took earlier: %+v; want its duplicate (seq 1, payload x)", o)
	}
}

// enqueueBatchCancelled: a batch under a context already cancelled
// enqueues nothing, and says so for every event.
func enqueueBatchCancelled(e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	out := store.EnqueueEach(ctx, e.s, []store.NewEvent{{Stream: "s", ID: "c1"}, {Stream: "s", ID: "c2"}})
	for i, o := range out {
		if o.Err == nil {
			e.t.Errorf("event %d enqueued under a cancelled context", i)
		}
	}
	for _, id := range []string{"c1", "c2"} {
		if _, err := e.s.Get(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
			e.t.Errorf("Get(%s) after a cancelled batch: %v; want ErrNotFound", id, err)
		}
	}
}

// enqueueBatchHeldBy: EnqueueBatch names, with each event it stores
// (created or a duplicate), the owner of the lease valid on its stream
// then, and no one for a stream whose lease was released, ran out, or
// was never granted.
func enqueueBatchHeldBy(e *env) {
	b, ok := e.s.(store.BatchEnqueuer)
	if !ok {
		return // Enqueue does not say, nor EnqueueEach over it (store.Enqueued)
	}
	e.enqueue("expired", "x0", "p")
	expired := e.acquire("expired", "w3")
	e.clock.Advance(ttl / 2)
	e.enqueue("held", "h0", "p")
	e.acquire("held", "w1") // still valid when the other has run out
	e.enqueue("released", "r0", "p")
	e.release(e.acquire("released", "w2"))
	e.clock.Advance(expired.Expires.Sub(e.clock.Now()))
	out, err := b.EnqueueBatch(e.ctx, []store.NewEvent{
		{Stream: "held", ID: "h1"},
		{Stream: "held", ID: "h0"}, // a duplicate
		{Stream: "released", ID: "r1"},
		{Stream: "expired", ID: "x1"}, // at Expires exactly: expired
		{Stream: "fresh", ID: "f1"},
		{Stream: "held", ID: "r0"}, // an ID of another stream: refused
	})
	if err != nil {
		e.t.Fatalf("EnqueueBatch: %v", err)
	}
	for i, want := range []string{"w1", "w1", "", "", "", ""} {
		if got := out[i].HeldBy; got != want {
			e.t.Errorf("event %d (%s on %s): HeldBy %q; want %q", i, out[i].Record.ID, out[i].Record.Stream, got, want)
		}
	}
	if out[5].Err == nil {
		e.t.Errorf("an ID of another stream: no error")
	}
}

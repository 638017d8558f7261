// This file proves the fan-out Service on the memory stores: a message
// becomes one delivery per enabled endpoint that wants it, each once in
// the delivery store under its stable ID on its endpoint's stream; an
// idempotency key returns the message and adds nothing, or is refused
// when reused for another message; a failed enqueue leaves the message
// durable and the re-drive finishes it without doubling a delivery; a
// refused one is recorded and never re-driven.
package platform_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platmem"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/webhook"
)

// world is a platform over memory stores, with an enqueuer that fails
// for the streams in failing.
type world struct {
	ps  *platmem.Store
	ds  *memstore.Store
	svc *platform.Service

	mu      sync.Mutex
	failing map[string]error // stream -> the error its enqueue returns
	calls   int
}

func newWorld(t *testing.T) *world {
	w := &world{ps: platmem.New(nil), ds: memstore.New(time.Now), failing: map[string]error{}}
	svc, err := platform.New(platform.Config{Store: w.ps, Enqueue: w.enqueue, MaxPayloadBytes: 64, RedriveEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.svc = svc
	return w
}

func (w *world) enqueue(ctx context.Context, stream, id string, payload []byte) error {
	w.mu.Lock()
	w.calls++
	err := w.failing[stream]
	w.mu.Unlock()
	if err != nil {
		return err
	}
	_, _, err = w.ds.Enqueue(ctx, stream, id, payload)
	return err
}

func (w *world) fail(stream string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		delete(w.failing, stream)
		return
	}
	w.failing[stream] = err
}

func (w *world) app(t *testing.T) platform.Application {
	t.Helper()
	a, err := w.ps.CreateApp(t.Context(), platform.Application{ID: platform.NewID(platform.AppKind, time.Now()), Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (w *world) endpoint(t *testing.T, app string, enabled bool, types ...string) platform.Endpoint {
	t.Helper()
	for _, ty := range types {
		if _, err := w.ps.CreateEventType(t.Context(), platform.EventType{Name: ty}); err != nil && !errors.Is(err, platform.ErrConflict) {
			t.Fatal(err)
		}
	}
	e, err := w.ps.CreateEndpoint(t.Context(), platform.Endpoint{ID: platform.NewID(platform.EndpointKind, time.Now()), AppID: app,
		URL: "https://example.com/", EventTypes: types, Secrets: []string{webhook.NewSecret()}, Enabled: enabled, Ordering: platform.Strict})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// deliveries returns, for each entry of m, the delivery store's record
// (or an error if it has none), checking its stream and payload.
func (w *world) delivered(t *testing.T, m platform.Message) int {
	t.Helper()
	n := 0
	for _, f := range m.Fanout {
		rec, err := w.ds.Get(t.Context(), f.DeliveryID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Stream != f.Stream || string(rec.Payload) != string(m.Payload) || rec.Seq != 1 {
			t.Errorf("delivery %s = stream %s seq %d payload %q; want stream %s seq 1 payload %q",
				f.DeliveryID, rec.Stream, rec.Seq, rec.Payload, f.Stream, m.Payload)
		}
		n++
	}
	return n
}

func TestPublishFansOut(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	all := w.endpoint(t, a.ID, true)
	paid := w.endpoint(t, a.ID, true, "invoice.paid")
	w.endpoint(t, a.ID, true, "user.created")
	w.endpoint(t, a.ID, false)
	m, created, err := w.svc.Publish(t.Context(), a.ID, "invoice.paid", "", []byte(`{"n":1}`))
	if err != nil || !created {
		t.Fatalf("Publish = %v, created %v", err, created)
	}
	var got []string
	for _, f := range m.Fanout {
		got = append(got, f.EndpointID)
		if f.State != platform.Enqueued || f.DeliveryID != m.ID+"."+f.EndpointID || f.Stream != f.EndpointID {
			t.Errorf("entry %+v; want enqueued, delivery ID msg.ep, stream ep", f)
		}
	}
	want := []string{all.ID, paid.ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("fan-out to %v; want %v (enabled, filter empty or matching)", got, want)
	}
	if n := w.delivered(t, m); n != 2 || !m.Complete() {
		t.Errorf("%d deliveries, complete %v; want 2, true", n, m.Complete())
	}
	stored, _ := w.ps.GetMessage(t.Context(), a.ID, m.ID)
	if !stored.Complete() {
		t.Errorf("the stored message is not complete: %+v", stored.Fanout)
	}
}

func TestPublishIdempotencyKey(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	w.endpoint(t, a.ID, true)
	m, _, err := w.svc.Publish(t.Context(), a.ID, "t", "order-1", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	calls := w.calls
	again, created, err := w.svc.Publish(t.Context(), a.ID, "t", "order-1", []byte("1"))
	if err != nil || created || again.ID != m.ID {
		t.Errorf("Publish again = %s, created %v, %v; want %s, false, nil", again.ID, created, err, m.ID)
	}
	if w.calls != calls {
		t.Errorf("a complete message's duplicate enqueued %d more times; want none", w.calls-calls)
	}
	for _, c := range []struct{ typ, payload string }{{"t", "2"}, {"u", "1"}} {
		_, _, err = w.svc.Publish(t.Context(), a.ID, c.typ, "order-1", []byte(c.payload))
		if !errors.Is(err, platform.ErrConflict) {
			t.Errorf("the key with type %s, payload %s: %v; want ErrConflict", c.typ, c.payload, err)
		}
	}
	if n := w.delivered(t, m); n != 1 {
		t.Errorf("%d deliveries; want 1", n)
	}
}

func TestPublishRefusesBadInput(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	for _, c := range []struct {
		app, typ, key, payload string
		want                   error
		field                  string
	}{
		{a.ID, "t", "", string(make([]byte, 65)), platform.ErrBadArgument, "payload"},
		{a.ID, "t", "", "", platform.ErrBadArgument, "payload"},
		{a.ID, "t t", "", "1", platform.ErrBadArgument, "event_type"},
		{a.ID, "t", "k k", "1", platform.ErrBadArgument, "idempotency_key"},
		{"app_x", "t", "", "1", platform.ErrNotFound, ""},
		{platform.NewID(platform.AppKind, time.Now()), "t", "", "1", platform.ErrNotFound, ""},
	} {
		_, _, err := w.svc.Publish(t.Context(), c.app, c.typ, c.key, []byte(c.payload))
		var fe *platform.FieldError
		if !errors.Is(err, c.want) || c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
			t.Errorf("Publish(%q, %q, %q, %d bytes) = %v; want %v naming %q", c.app, c.typ, c.key, len(c.payload), err, c.want, c.field)
		}
	}
	if left, _ := w.ps.Unfinished(t.Context(), "", 10); len(left) != 0 || w.calls != 0 {
		t.Errorf("after refusals: %d unfinished, %d enqueues; want none", len(left), w.calls)
	}
}

func TestFailedEnqueueIsRedriven(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	ok, down := w.endpoint(t, a.ID, true), w.endpoint(t, a.ID, true)
	w.fail(down.ID, fmt.Errorf("%w: the database is away", store.ErrUnavailable))
	m, created, err := w.svc.Publish(t.Context(), a.ID, "t", "", []byte("1"))
	if err != nil || !created {
		t.Fatalf("Publish with one enqueue failing = %v; want nil: the message is durable", err)
	}
	if m.Complete() || w.delivered(t, m) != 1 {
		t.Fatalf("fan-out %+v; want %s enqueued and %s pending", m.Fanout, ok.ID, down.ID)
	}
	if n, err := w.svc.Redrive(t.Context()); n != 0 || err == nil {
		t.Errorf("Redrive while it still fails = %d, %v; want 0 and the error", n, err)
	}
	w.fail(down.ID, nil)
	if n, err := w.svc.Redrive(t.Context()); n != 1 || err != nil {
		t.Errorf("Redrive once healed = %d, %v; want 1, nil", n, err)
	}
	stored, _ := w.ps.GetMessage(t.Context(), a.ID, m.ID)
	if !stored.Complete() || w.delivered(t, stored) != 2 {
		t.Errorf("after the re-drive: %+v; want both enqueued and delivered once", stored.Fanout)
	}
	calls := w.calls
	if n, err := w.svc.Redrive(t.Context()); n != 0 || err != nil || w.calls != calls {
		t.Errorf("Redrive with nothing left = %d, %v, %d enqueues; want 0, nil, none", n, err, w.calls-calls)
	}
}

func TestRefusedDeliveryIsKeptAndNotRedriven(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	ep := w.endpoint(t, a.ID, true)
	w.fail(ep.ID, fmt.Errorf("%w: the channel cannot carry it", platform.ErrRefused))
	m, _, err := w.svc.Publish(t.Context(), a.ID, "t", "", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Fanout[0]; f.State != platform.Refused || f.Detail == "" || !m.Complete() {
		t.Errorf("entry %+v; want refused with a detail, the message complete", f)
	}
	calls := w.calls
	if n, err := w.svc.Redrive(t.Context()); n != 0 || err != nil || w.calls != calls {
		t.Errorf("Redrive = %d, %v, %d enqueues; a refused delivery is not re-driven", n, err, w.calls-calls)
	}
}

func TestRunRedrivesUntilItStops(t *testing.T) {
	w := newWorld(t)
	a := w.app(t)
	ep := w.endpoint(t, a.ID, true)
	w.fail(ep.ID, store.ErrUnavailable)
	m, _, _ := w.svc.Publish(t.Context(), a.ID, "t", "", []byte("1"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.svc.Run(ctx) }()
	time.Sleep(30 * time.Millisecond) // some turns fail
	w.fail(ep.ID, nil)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if stored, _ := w.ps.GetMessage(t.Context(), a.ID, m.ID); stored.Complete() {
			break
		}
		if time.Now().After(end) {
			t.Fatal("Run did not finish the fan-out within 10s")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v; want nil after its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	enq := func(context.Context, string, string, []byte) error { return nil }
	for _, c := range []platform.Config{
		{Enqueue: enq, MaxPayloadBytes: 1},
		{Store: platmem.New(nil), MaxPayloadBytes: 1},
		{Store: platmem.New(nil), Enqueue: enq},
		{Store: platmem.New(nil), Enqueue: enq, MaxPayloadBytes: 1, RedriveEvery: -1},
	} {
		if _, err := platform.New(c); err == nil {
			t.Errorf("New(%+v) = nil error", c)
		}
	}
}

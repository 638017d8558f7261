package platformtest

import (
	"time"

	"github.com/courierlab/courier/platform"
)

// addMissing: AddMissing gives an endpoint created later a pending
// entry for each message since T that its filter takes (enabled or
// not), oldest first, at most limit at a time, each message returned
// with its whole fan-out in endpoint ID order; T itself is included, an
// instant finer than the store's microsecond is not rounded down; a
// message with an entry for the endpoint already, in any state, is left
// alone, so a second call adds nothing; another application's messages
// and endpoints are never touched.
func addMissing(e *env) {
	a, other := e.app("a"), e.app("other")
	e.eventType("a.x")
	e.eventType("b.y")
	early := e.create(e.endpoint(a.ID))
	m0, _ := e.message(a.ID, "a.x", "", []byte("0"))
	m1, _ := e.message(a.ID, "a.x", "", []byte("1"))
	m2, _ := e.message(a.ID, "b.y", "", []byte("2"))
	m3, _ := e.message(a.ID, "a.x", "", []byte("3"))
	theirs, _ := e.message(other.ID, "a.x", "", []byte("t"))
	late := e.create(e.endpoint(a.ID, "a.x"))
	off := e.endpoint(a.ID)
	off.Enabled = false
	off = e.create(off)
	m4, _ := e.message(a.ID, "a.x", "", []byte("4"))
	if err := e.s.SetFanout(e.ctx, m1.ID, early.ID, platform.Enqueued, ""); err != nil {
		e.t.Fatal(err)
	}

	got, err := e.s.AddMissing(e.ctx, a.ID, late.ID, m1.CreatedAt, 1)
	if err != nil {
		e.t.Fatal(err)
	}
	m1.Fanout = []platform.Fanout{{EndpointID: early.ID, DeliveryID: platform.DeliveryID(m1.ID, early.ID), Stream: early.ID, State: platform.Enqueued},
		fanoutOf(m1.ID, late)[0]}
	diff(e.t, "AddMissing since m1, limit 1", []platform.Message{m1}, got)
	got, err = e.s.AddMissing(e.ctx, a.ID, late.ID, m1.CreatedAt, 10)
	if err != nil {
		e.t.Fatal(err)
	}
	m3.Fanout = fanoutOf(m3.ID, early, late)
	diff(e.t, "AddMissing since m1 again: m3 only (m2 is b.y, m4 has its entry)", []platform.Message{m3}, got)
	got, err = e.s.AddMissing(e.ctx, a.ID, late.ID, m1.CreatedAt, 10)
	diff(e.t, "AddMissing a third time", []string{}, ids(got, msgID))
	e.wantErr("AddMissing a third time", err, nil)

	// An instant a nanosecond after m0's leaves m0 out; a disabled
	// endpoint with no filter takes every type.
	got, err = e.s.AddMissing(e.ctx, a.ID, off.ID, m0.CreatedAt.Add(time.Nanosecond), 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "AddMissing to a disabled endpoint since just after m0", []string{m1.ID, m2.ID, m3.ID, m4.ID}, ids(got, msgID))
	for _, m := range got {
		diff(e.t, "entry of "+m.ID+" for the disabled endpoint", true, hasEntry(m, off.ID, platform.Pending))
	}
	for msg, want := range map[string][]string{m0.ID: {early.ID}, m2.ID: {early.ID, off.ID}, m4.ID: {early.ID, late.ID, off.ID}} {
		m, err := e.s.GetMessage(e.ctx, a.ID, msg)
		if err != nil {
			e.t.Fatal(err)
		}
		diff(e.t, "endpoints of "+msg, want, ids(m.Fanout, func(f platform.Fanout) string { return f.EndpointID }))
	}
	t, _ := e.s.GetMessage(e.ctx, other.ID, theirs.ID)
	diff(e.t, "the other application's message", 0, len(t.Fanout))
	_, err = e.s.AddMissing(e.ctx, other.ID, late.ID, m0.CreatedAt, 10)
	e.wantErr("AddMissing of another application's endpoint", err, platform.ErrNotFound)
	_, err = e.s.AddMissing(e.ctx, a.ID, e.id(platform.EndpointKind), m0.CreatedAt, 10)
	e.wantErr("AddMissing of an unknown endpoint", err, platform.ErrNotFound)
	_, err = e.s.AddMissing(e.ctx, a.ID, "ep_", m0.CreatedAt, 10)
	e.wantErr("AddMissing of a malformed endpoint ID", err, platform.ErrNotFound)
}

// addMissingBadArguments: no instant, or a limit out of range, names
// its field and adds nothing.
func addMissingBadArguments(e *env) {
	a := e.app("a")
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	ep := e.create(e.endpoint(a.ID))
	for _, c := range []struct {
		since time.Time
		limit int
		field string
	}{
		{time.Time{}, 10, "since"},
		{m.CreatedAt, 0, "limit"},
		{m.CreatedAt, platform.MaxLimit + 1, "limit"},
	} {
		_, err := e.s.AddMissing(e.ctx, a.ID, ep.ID, c.since, c.limit)
		e.wantField("AddMissing", err, c.field)
	}
	got, _ := e.s.GetMessage(e.ctx, a.ID, m.ID)
	diff(e.t, "fan-out after the refused calls", 0, len(got.Fanout))
}

func hasEntry(m platform.Message, ep string, state platform.FanoutState) bool {
	for _, f := range m.Fanout {
		if f.EndpointID == ep {
			return f.State == state
		}
	}
	return false
}

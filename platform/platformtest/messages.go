package platformtest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

// fanoutOf is the fan-out a new message to eps gets, all pending.
func fanoutOf(msg string, eps ...platform.Endpoint) []platform.Fanout {
	out := []platform.Fanout{}
	for _, ep := range eps {
		out = append(out, platform.Fanout{EndpointID: ep.ID, DeliveryID: platform.DeliveryID(msg, ep.ID),
			Stream: platform.StreamOf(ep.ID), State: platform.Pending})
	}
	return out
}

// messageFanout: a message goes to each enabled endpoint of its
// application whose filter is empty or names its type, in endpoint ID
// order, each entry pending with its delivery ID and stream; the payload
// is kept byte for byte; another application's message is not found
// under this one.
func messageFanout(e *env) {
	a, other := e.app("a"), e.app("other")
	e.eventType("a.x")
	e.eventType("b.y")
	all := e.create(e.endpoint(a.ID))
	onlyA := e.create(e.endpoint(a.ID, "a.x"))
	onlyB := e.create(e.endpoint(a.ID, "b.y"))
	off := e.endpoint(a.ID)
	off.Enabled = false
	e.create(off)
	both := e.create(e.endpoint(a.ID, "b.y", "a.x"))
	e.create(e.endpoint(other.ID))
	payload := []byte("{\"k\":1}\x00\xff not json either")
	created := e.now().Add(1000 * 1000) // e.id moves the clock a millisecond
	m, ok := e.message(a.ID, "a.x", "", payload)
	if !ok {
		e.t.Fatal("CreateMessage: created = false for a new message")
	}
	want := platform.Message{ID: m.ID, AppID: a.ID, EventType: "a.x", Payload: payload, CreatedAt: created,
		Fanout: fanoutOf(m.ID, all, onlyA, both)}
	diff(e.t, "CreateMessage", want, m)
	got, err := e.s.GetMessage(e.ctx, a.ID, m.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "GetMessage", want, got)
	_, err = e.s.GetMessage(e.ctx, other.ID, m.ID)
	e.wantErr("GetMessage under another application", err, platform.ErrNotFound)
	mb, _ := e.message(a.ID, "b.y", "", []byte("{}"))
	diff(e.t, "fan-out of b.y", fanoutOf(mb.ID, all, onlyB, both), mb.Fanout)
	mc, _ := e.message(a.ID, "c.z", "", []byte("{}"))
	diff(e.t, "fan-out of an unregistered type", fanoutOf(mc.ID, all), mc.Fanout)
	_, _, err = e.s.CreateMessage(e.ctx, platform.Message{ID: e.id(platform.MessageKind), AppID: e.id(platform.AppKind),
		EventType: "a.x", Payload: []byte("{}")})
	e.wantErr("CreateMessage to an unknown application", err, platform.ErrNotFound)
	_, _, err = e.s.CreateMessage(e.ctx, platform.Message{ID: m.ID, AppID: a.ID, EventType: "a.x", Payload: []byte("{}")})
	e.wantErr("CreateMessage of a taken ID", err, platform.ErrConflict)
}

// messageIdempotent: a key names one message of its application: the
// same key again returns it unchanged with created false, whatever else
// differs; another application's key is its own; no key, no dedup.
func messageIdempotent(e *env) {
	a, other := e.app("a"), e.app("other")
	e.create(e.endpoint(a.ID))
	m, ok := e.message(a.ID, "t", "order-1", []byte("1"))
	if !ok {
		e.t.Fatal("first CreateMessage: created false")
	}
	again, ok := e.message(a.ID, "u", "order-1", []byte("2"))
	if ok {
		e.t.Error("CreateMessage with a used key: created true")
	}
	diff(e.t, "CreateMessage with a used key", m, again)
	theirs, ok := e.message(other.ID, "t", "order-1", []byte("1"))
	if !ok || theirs.ID == m.ID {
		e.t.Errorf("the same key in another application = %s, created %v; want a new message", theirs.ID, ok)
	}
	n1, ok1 := e.message(a.ID, "t", "", []byte("1"))
	n2, ok2 := e.message(a.ID, "t", "", []byte("1"))
	if !ok1 || !ok2 || n1.ID == n2.ID {
		e.t.Errorf("two messages without a key: %s %v, %s %v; want two new messages", n1.ID, ok1, n2.ID, ok2)
	}
}

// messageFanoutFixed: the fan-out is decided when the message is
// created: an endpoint created, disabled or deleted later changes no
// entry.
func messageFanoutFixed(e *env) {
	a := e.app("a")
	ep := e.create(e.endpoint(a.ID))
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	e.create(e.endpoint(a.ID))
	ep.Enabled = false
	if _, err := e.s.UpdateEndpoint(e.ctx, ep); err != nil {
		e.t.Fatal(err)
	}
	got, err := e.s.GetMessage(e.ctx, a.ID, m.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "fan-out after endpoints changed", fanoutOf(m.ID, ep), got.Fanout)
	if err := e.s.DeleteEndpoint(e.ctx, a.ID, ep.ID); err != nil {
		e.t.Fatal(err)
	}
	got, _ = e.s.GetMessage(e.ctx, a.ID, m.ID)
	diff(e.t, "fan-out after its endpoint was deleted", fanoutOf(m.ID, ep), got.Fanout)
	later, _ := e.message(a.ID, "t", "", []byte("{}"))
	if len(later.Fanout) != 1 || later.Fanout[0].EndpointID == ep.ID {
		e.t.Errorf("a later message's fan-out = %+v; want only the endpoint created later", later.Fanout)
	}
}

// messageBadArguments: a refused message names its field and is not kept.
func messageBadArguments(e *env) {
	a := e.app("a")
	for _, c := range []struct {
		name  string
		set   func(*platform.Message)
		field string
	}{
		{"no-type", func(m *platform.Message) { m.EventType = "" }, "event_type"},
		{"bad-type", func(m *platform.Message) { m.EventType = "a/b" }, "event_type"},
		{"key-space", func(m *platform.Message) { m.IdempotencyKey = "a b" }, "idempotency_key"},
		{"key-long", func(m *platform.Message) { m.IdempotencyKey = strings.Repeat("k", platform.MaxKeyBytes+1) }, "idempotency_key"},
		{"no-payload", func(m *platform.Message) { m.Payload = nil }, "payload"},
		{"bad-id", func(m *platform.Message) { m.ID = "msg_" }, "id"},
	} {
		m := platform.Message{ID: e.id(platform.MessageKind), AppID: a.ID, EventType: "t", Payload: []byte("{}")}
		c.set(&m)
		_, _, err := e.s.CreateMessage(e.ctx, m)
		e.wantField("CreateMessage "+c.name, err, c.field)
	}
	e.create(e.endpoint(a.ID)) // so that a kept message would be unfinished
	list, err := e.s.Unfinished(e.ctx, "", 10)
	if err != nil || len(list) != 0 {
		e.t.Errorf("Unfinished after refused messages = %v, %v; want none", list, err)
	}
}

// setFanout: an entry moves from pending to enqueued or refused (with a
// detail, cleaned), once; setting the state it has changes nothing;
// anything else is refused.
func setFanout(e *env) {
	a := e.app("a")
	ep1, ep2 := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID))
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	if err := e.s.SetFanout(e.ctx, m.ID, ep1.ID, platform.Enqueued, "ignored"); err != nil {
		e.t.Fatal(err)
	}
	if err := e.s.SetFanout(e.ctx, m.ID, ep1.ID, platform.Enqueued, ""); err != nil {
		e.t.Errorf("SetFanout to the state it has: %v", err)
	}
	e.wantErr("enqueued to refused", e.s.SetFanout(e.ctx, m.ID, ep1.ID, platform.Refused, "x"), platform.ErrInvalidMove)
	e.wantField("to pending", e.s.SetFanout(e.ctx, m.ID, ep2.ID, platform.Pending, ""), "state")
	long := strings.Repeat("é", 300) + "\x00"
	if err := e.s.SetFanout(e.ctx, m.ID, ep2.ID, platform.Refused, long); err != nil {
		e.t.Fatal(err)
	}
	e.wantErr("unknown entry", e.s.SetFanout(e.ctx, m.ID, e.id(platform.EndpointKind), platform.Enqueued, ""), platform.ErrNotFound)
	e.wantErr("unknown message", e.s.SetFanout(e.ctx, e.id(platform.MessageKind), ep1.ID, platform.Enqueued, ""), platform.ErrNotFound)
	got, err := e.s.GetMessage(e.ctx, a.ID, m.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	want := fanoutOf(m.ID, ep1, ep2)
	want[0].State = platform.Enqueued
	want[1].State, want[1].Detail = platform.Refused, cleaned(long)
	diff(e.t, "fan-out after the moves", want, got.Fanout)
	if !got.Complete() {
		e.t.Error("Complete() = false with no entry pending")
	}
}

// unfinished: only messages with a pending entry are listed, in ID
// order, a page at a time; a message no endpoint wanted is complete.
func unfinished(e *env) {
	a := e.app("a")
	ep := e.create(e.endpoint(a.ID, []string{}...))
	var want []string
	for i := range 5 {
		m, _ := e.message(a.ID, "t", "", []byte("{}"))
		if i == 2 {
			if err := e.s.SetFanout(e.ctx, m.ID, ep.ID, platform.Enqueued, ""); err != nil {
				e.t.Fatal(err)
			}
			continue
		}
		want = append(want, m.ID)
	}
	b := e.app("empty")
	if m, _ := e.message(b.ID, "t", "", []byte("{}")); len(m.Fanout) != 0 || !m.Complete() {
		e.t.Errorf("a message to an application with no endpoint: %+v; want an empty, complete fan-out", m)
	}
	first, err := e.s.Unfinished(e.ctx, "", 3)
	if err != nil {
		e.t.Fatal(err)
	}
	rest, err := e.s.Unfinished(e.ctx, first[len(first)-1].ID, 3)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "Unfinished", sorted(want), ids(append(first, rest...), msgID))
	if len(first) > 0 && (len(first[0].Fanout) != 1 || string(first[0].Payload) != "{}") {
		e.t.Errorf("Unfinished's message = %+v; want it whole, with its fan-out and payload", first[0])
	}
}

// deleteAppCascades: deleting an application deletes its endpoints and
// messages (and frees its keys), and leaves other applications alone.
func deleteAppCascades(e *env) {
	a, other := e.app("a"), e.app("other")
	ep, keep := e.create(e.endpoint(a.ID)), e.create(e.endpoint(other.ID))
	m, _ := e.message(a.ID, "t", "k", []byte("{}"))
	mo, _ := e.message(other.ID, "t", "k", []byte("{}"))
	if err := e.s.DeleteApp(e.ctx, a.ID); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.s.GetEndpoint(e.ctx, ep.ID)
	e.wantErr("GetEndpoint of a deleted application's endpoint", err, platform.ErrNotFound)
	_, err = e.s.GetMessage(e.ctx, a.ID, m.ID)
	e.wantErr("GetMessage of a deleted application's message", err, platform.ErrNotFound)
	left, err := e.s.Unfinished(e.ctx, "", 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "Unfinished after the delete", []string{mo.ID}, ids(left, msgID))
	if _, err := e.s.GetEndpoint(e.ctx, keep.ID); err != nil {
		e.t.Errorf("the other application's endpoint: %v", err)
	}
}

// cancelledContext: a call with a context already done returns its
// error and changes nothing.
func cancelledContext(e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.s.CreateApp(ctx, platform.Application{ID: e.id(platform.AppKind), Name: "x"})
	if !errors.Is(err, context.Canceled) {
		e.t.Errorf("CreateApp with a cancelled context: %v; want context.Canceled", err)
	}
	list, err := e.s.ListApps(e.ctx, "", 10)
	if err != nil || len(list) != 0 {
		e.t.Errorf("ListApps = %v, %v; want none", list, err)
	}
	a := e.app("a")
	_, _, err = e.s.CreateMessage(ctx, platform.Message{ID: e.id(platform.MessageKind), AppID: a.ID, EventType: "t", Payload: []byte("1")})
	if !errors.Is(err, context.Canceled) {
		e.t.Errorf("CreateMessage with a cancelled context: %v; want context.Canceled", err)
	}
}

// malformedIDsNotFound: a read or delete by something that is no ID
// (not text, the wrong kind) is ErrNotFound, never a backend failure.
func malformedIDsNotFound(e *env) {
	a := e.app("a")
	for _, id := range []string{"", "\x00", "\xff", "app_" + strings.Repeat("z", 26), "ep_x", strings.Repeat("a", 5000)} {
		_, err := e.s.GetApp(e.ctx, id)
		e.wantErr("GetApp", err, platform.ErrNotFound)
		_, err = e.s.GetEndpoint(e.ctx, id)
		e.wantErr("GetEndpoint", err, platform.ErrNotFound)
		_, err = e.s.GetMessage(e.ctx, a.ID, id)
		e.wantErr("GetMessage", err, platform.ErrNotFound)
		e.wantErr("DeleteApp", e.s.DeleteApp(e.ctx, id), platform.ErrNotFound)
		e.wantErr("DeleteEndpoint", e.s.DeleteEndpoint(e.ctx, a.ID, id), platform.ErrNotFound)
		_, err = e.s.ListEndpoints(e.ctx, id, "", 1)
		e.wantErr("ListEndpoints", err, platform.ErrNotFound)
		e.wantErr("SetFanout", e.s.SetFanout(e.ctx, id, id, platform.Enqueued, ""), platform.ErrNotFound)
	}
}

// listMessages: an application's messages are listed newest first, a
// page at a time, whole and with their fan-out as it stands, filtered by
// event type, by endpoint (a delivery to it) and by creation time (both bounds exclusive, to the
// nanosecond of the bound); another application's are never listed, and
// a bad filter names its field.
func listMessages(e *env) {
	a, other := e.app("a"), e.app("other")
	e.eventType("u")
	ep, onlyU := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID, "u"))
	theirs := e.create(e.endpoint(other.ID))
	e.message(other.ID, "t", "", []byte("{}"))
	var m [4]platform.Message
	for i, typ := range []string{"t", "u", "t", "t"} {
		e.tick(time.Second)
		m[i], _ = e.message(a.ID, typ, "", []byte(`{"n":1}`))
	}
	if err := e.s.SetFanout(e.ctx, m[3].ID, ep.ID, platform.Enqueued, ""); err != nil {
		e.t.Fatal(err)
	}
	m[3].Fanout[0].State = platform.Enqueued
	list := func(f platform.MessageFilter, after string, limit int) []platform.Message {
		e.t.Helper()
		got, err := e.s.ListMessages(e.ctx, a.ID, f, after, limit)
		if err != nil {
			e.t.Fatalf("ListMessages(%+v, %q, %d): %v", f, after, limit, err)
		}
		return got
	}
	all := platform.MessageFilter{}
	diff(e.t, "ListMessages, first page", []platform.Message{m[3], m[2]}, list(all, "", 2))
	diff(e.t, "ListMessages, second page", []platform.Message{m[1], m[0]}, list(all, m[2].ID, 2))
	diff(e.t, "ListMessages, past the last", []platform.Message{}, list(all, m[0].ID, 2))
	ns := time.Nanosecond
	for _, c := range []struct {
		name string
		f    platform.MessageFilter
		want []string
	}{
		{"by type", platform.MessageFilter{EventType: "t"}, []string{m[3].ID, m[2].ID, m[0].ID}},
		{"by a type none has", platform.MessageFilter{EventType: "v"}, []string{}},
		{"after m0", platform.MessageFilter{CreatedAfter: m[0].CreatedAt}, []string{m[3].ID, m[2].ID, m[1].ID}},
		{"before m3", platform.MessageFilter{CreatedBefore: m[3].CreatedAt}, []string{m[2].ID, m[1].ID, m[0].ID}},
		{"between", platform.MessageFilter{CreatedAfter: m[0].CreatedAt, CreatedBefore: m[3].CreatedAt}, []string{m[2].ID, m[1].ID}},
		{"between, of type t", platform.MessageFilter{EventType: "t", CreatedAfter: m[0].CreatedAt, CreatedBefore: m[3].CreatedAt},
			[]string{m[2].ID}},
		{"to an endpoint", platform.MessageFilter{EndpointID: onlyU.ID}, []string{m[1].ID}},
		{"to an endpoint, of type t", platform.MessageFilter{EndpointID: onlyU.ID, EventType: "t"}, []string{}},
		{"to another application's endpoint", platform.MessageFilter{EndpointID: theirs.ID}, []string{}},
		{"before, a nanosecond past m1", platform.MessageFilter{CreatedBefore: m[1].CreatedAt.Add(ns)}, []string{m[1].ID, m[0].ID}},
		{"after, a nanosecond before m2", platform.MessageFilter{CreatedAfter: m[2].CreatedAt.Add(-ns)}, []string{m[3].ID, m[2].ID}},
	} {
		diff(e.t, "ListMessages "+c.name, c.want, ids(list(c.f, "", 10), msgID))
	}
	_, err := e.s.ListMessages(e.ctx, e.id(platform.AppKind), all, "", 1)
	e.wantErr("ListMessages of an unknown application", err, platform.ErrNotFound)
	_, err = e.s.ListMessages(e.ctx, "app_x", all, "", 1)
	e.wantErr("ListMessages of no application ID", err, platform.ErrNotFound)
	_, err = e.s.ListMessages(e.ctx, a.ID, platform.MessageFilter{EventType: "a b"}, "", 1)
	e.wantField("ListMessages by a bad type", err, "event_type")
	_, err = e.s.ListMessages(e.ctx, a.ID, platform.MessageFilter{EndpointID: a.ID}, "", 1)
	e.wantField("ListMessages to an application's ID", err, "endpoint_id")
	_, err = e.s.ListMessages(e.ctx, a.ID, all, a.ID, 1)
	e.wantField("ListMessages after an application's ID", err, "after")
	_, err = e.s.ListMessages(e.ctx, a.ID, all, "", platform.MaxLimit+1)
	e.wantField("ListMessages, too long a page", err, "limit")
}

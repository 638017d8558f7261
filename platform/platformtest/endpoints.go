package platformtest

import (
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
)

// endpointsCRUD: an endpoint of an application is created (its event
// types must exist; its application too), read by its ID alone, listed
// with its application's only, replaced whole by an update (CreatedAt
// kept) and deleted.
func endpointsCRUD(e *env) {
	a, other := e.app("a"), e.app("other")
	e.eventType("invoice.paid")
	ep := e.endpoint(a.ID, "invoice.paid")
	_, err := e.s.CreateEndpoint(e.ctx, platform.Endpoint{ID: ep.ID, AppID: e.id(platform.AppKind), URL: ep.URL,
		Secrets: ep.Secrets, Enabled: true, Ordering: platform.Strict})
	e.wantErr("CreateEndpoint of an unknown application", err, platform.ErrNotFound)
	created := e.now()
	got := e.create(ep)
	want := ep
	want.CreatedAt, want.UpdatedAt = created, created
	diff(e.t, "CreateEndpoint", want, got)
	_, err = e.s.CreateEndpoint(e.ctx, ep)
	e.wantErr("CreateEndpoint of a taken ID", err, platform.ErrConflict)
	read, err := e.s.GetEndpoint(e.ctx, ep.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "GetEndpoint", want, read)
	theirs := e.create(e.endpoint(other.ID))
	e.wantEndpoints("ListEndpoints", a.ID, want)
	_, err = e.s.ListEndpoints(e.ctx, e.id(platform.AppKind), "", 10)
	e.wantErr("ListEndpoints of an unknown application", err, platform.ErrNotFound)

	e.tick(time.Second)
	up := want
	up.URL, up.Description, up.EventTypes = "http://example.org/v2?x=1", "", []string{}
	up.Secrets, up.Enabled, up.Ordering = []string{webhook.NewSecret(), secret}, false, platform.Independent
	up.RateLimit, up.MaxInFlight = 25, 3
	up.CreatedAt = time.Unix(1, 0)
	got, err = e.s.UpdateEndpoint(e.ctx, up)
	if err != nil {
		e.t.Fatal(err)
	}
	up.CreatedAt, up.UpdatedAt = created, e.now()
	diff(e.t, "UpdateEndpoint", up, got)
	read, _ = e.s.GetEndpoint(e.ctx, ep.ID)
	diff(e.t, "GetEndpoint after UpdateEndpoint", up, read)
	moved := theirs
	moved.AppID = a.ID
	_, err = e.s.UpdateEndpoint(e.ctx, moved)
	e.wantErr("UpdateEndpoint under another application", err, platform.ErrNotFound)
	e.wantErr("DeleteEndpoint under another application", e.s.DeleteEndpoint(e.ctx, a.ID, theirs.ID), platform.ErrNotFound)
	if err := e.s.DeleteEndpoint(e.ctx, a.ID, ep.ID); err != nil {
		e.t.Fatal(err)
	}
	_, err = e.s.GetEndpoint(e.ctx, ep.ID)
	e.wantErr("GetEndpoint after DeleteEndpoint", err, platform.ErrNotFound)
	e.wantErr("DeleteEndpoint again", e.s.DeleteEndpoint(e.ctx, a.ID, ep.ID), platform.ErrNotFound)
	if _, err := e.s.GetEndpoint(e.ctx, theirs.ID); err != nil {
		e.t.Errorf("the other application's endpoint: %v", err)
	}
}

// endpointsBadArguments: each refused endpoint fails with a FieldError
// naming its field, on create and on update, and changes nothing.
func endpointsBadArguments(e *env) {
	a := e.app("a")
	e.eventType("known")
	kept := e.create(e.endpoint(a.ID, "known"))
	for _, c := range []struct {
		name  string
		set   func(*platform.Endpoint)
		field string
	}{
		{"no-url", func(p *platform.Endpoint) { p.URL = "" }, "url"},
		{"ftp-url", func(p *platform.Endpoint) { p.URL = "ftp://example.com/" }, "url"},
		{"relative-url", func(p *platform.Endpoint) { p.URL = "/hook" }, "url"},
		{"credentials", func(p *platform.Endpoint) { p.URL = "https://u:p@example.com/" }, "url"},
		{"fragment", func(p *platform.Endpoint) { p.URL = "https://example.com/#x" }, "url"},
		{"long-url", func(p *platform.Endpoint) { p.URL = "https://example.com/" + strings.Repeat("x", platform.MaxURLBytes) }, "url"},
		{"description-nul", func(p *platform.Endpoint) { p.Description = "a\x00" }, "description"},
		{"unknown-type", func(p *platform.Endpoint) { p.EventTypes = []string{"known", "unknown"} }, "event_types[1]"},
		{"bad-type", func(p *platform.Endpoint) { p.EventTypes = []string{"a b"} }, "event_types[0]"},
		{"repeated-type", func(p *platform.Endpoint) { p.EventTypes = []string{"known", "known"} }, "event_types[1]"},
		{"no-secret", func(p *platform.Endpoint) { p.Secrets = nil }, "secrets"},
		{"bad-secret", func(p *platform.Endpoint) { p.Secrets = []string{secret, "hunter2"} }, "secrets[1]"},
		{"ordering", func(p *platform.Endpoint) { p.Ordering = "fifo" }, "ordering"},
		{"negative-rate", func(p *platform.Endpoint) { p.RateLimit = -1 }, "rate_limit"},
		{"rate-over-bound", func(p *platform.Endpoint) { p.RateLimit = platform.MaxRateLimit + 1 }, "rate_limit"},
		{"negative-in-flight", func(p *platform.Endpoint) { p.MaxInFlight = -1 }, "max_in_flight"},
		{"in-flight-over-bound", func(p *platform.Endpoint) {
			p.Ordering, p.MaxInFlight = platform.Independent, platform.MaxMaxInFlight+1
		}, "max_in_flight"},
		{"strict-in-flight", func(p *platform.Endpoint) { p.Ordering, p.MaxInFlight = platform.Strict, 2 }, "max_in_flight"},
		{"bad-id", func(p *platform.Endpoint) { p.ID = "ep_x" }, "id"},
		{"bad-app", func(p *platform.Endpoint) { p.AppID = "x" }, "app_id"},
	} {
		ep := e.endpoint(a.ID)
		c.set(&ep)
		_, err := e.s.CreateEndpoint(e.ctx, ep)
		e.wantField("CreateEndpoint "+c.name, err, c.field)
		up := kept
		c.set(&up)
		up.ID = kept.ID
		if c.field != "id" && c.field != "app_id" {
			_, err = e.s.UpdateEndpoint(e.ctx, up)
			e.wantField("UpdateEndpoint "+c.name, err, c.field)
		}
	}
	e.wantEndpoints("endpoints after refused calls", a.ID, kept)
}

// endpointsAreCopies: changing what a call returned, or what it was
// given, changes nothing in the store.
func endpointsAreCopies(e *env) {
	a := e.app("a")
	e.eventType("t1")
	in := e.endpoint(a.ID, "t1")
	out := e.create(in)
	want := out
	want.EventTypes, want.Secrets = []string{"t1"}, []string{secret}
	in.EventTypes[0], in.Secrets[0] = "zz", "zz"
	out.EventTypes[0], out.Secrets[0] = "yy", "yy"
	got, err := e.s.GetEndpoint(e.ctx, want.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "endpoint after its copies changed", want, got)
}

// eventTypes: an event type is created once (again: ErrConflict), kept
// with its description, listed in name order a page at a time; a bad
// name is refused naming the field.
func eventTypes(e *env) {
	names := []string{"user.created", "invoice.paid", "A-b_c.9", "invoice.failed"}
	for _, n := range names {
		e.eventType(n)
	}
	_, err := e.s.CreateEventType(e.ctx, platform.EventType{Name: "invoice.paid"})
	e.wantErr("CreateEventType of a taken name", err, platform.ErrConflict)
	for _, c := range []struct{ name, desc, field string }{
		{"", "", "name"}, {"a b", "", "name"}, {"é", "", "name"}, {strings.Repeat("a", platform.MaxEventTypeBytes+1), "", "name"},
		{"ok", "bad\x01", "description"},
	} {
		_, err := e.s.CreateEventType(e.ctx, platform.EventType{Name: c.name, Description: c.desc})
		e.wantField("CreateEventType "+c.name, err, c.field)
	}
	first, err := e.s.ListEventTypes(e.ctx, "", 3)
	if err != nil {
		e.t.Fatal(err)
	}
	rest, err := e.s.ListEventTypes(e.ctx, first[len(first)-1].Name, 3)
	if err != nil {
		e.t.Fatal(err)
	}
	got := ids(append(first, rest...), func(t platform.EventType) string { return t.Name })
	diff(e.t, "event types in name order", sorted(names), got)
	if first[0].Name != "A-b_c.9" || first[0].Description != "about A-b_c.9" || !first[0].CreatedAt.Equal(first[0].CreatedAt.Truncate(time.Microsecond)) {
		e.t.Errorf("first event type = %+v", first[0])
	}
	_, err = e.s.ListEventTypes(e.ctx, "a b", 3)
	e.wantField("ListEventTypes after", err, "after")
}

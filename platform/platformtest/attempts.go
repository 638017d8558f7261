package platformtest

import (
	"net/http"
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

// attempt builds (does not record) an attempt of message msg to endpoint
// ep at the clock's now, with the given outcome and status.
func (e *env) attempt(msg platform.Message, ep platform.Endpoint, outcome string, status int) platform.Attempt {
	id := e.id(platform.AttemptKind)
	return platform.Attempt{ID: id, AppID: ep.AppID, MessageID: msg.ID, EndpointID: ep.ID,
		DeliveryID: platform.DeliveryID(msg.ID, ep.ID), Attempt: 1, At: e.now(), Duration: 1500 * time.Microsecond,
		Status: status, Outcome: outcome, Detail: "HTTP " + http.StatusText(status),
		ResponseHeaders: http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {"r1", "r2"}}, ResponseBody: []byte("busy\x00\xff")}
}

func (e *env) record(a platform.Attempt) platform.EndpointHealth {
	e.t.Helper()
	h, err := e.s.RecordAttempt(e.ctx, a)
	if err != nil {
		e.t.Fatalf("RecordAttempt: %v", err)
	}
	return h
}

// attemptsLog: attempts are kept as CleanAttempt makes them (headers and
// body byte for byte, the detail cleaned), listed by message and by
// endpoint newest first a page at a time, and only under their own
// application; an attempt to an endpoint that is not the application's
// is refused, and an ID taken is a conflict.
func attemptsLog(e *env) {
	a, other := e.app("a"), e.app("other")
	ep1, ep2 := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID))
	theirs := e.create(e.endpoint(other.ID))
	m1, _ := e.message(a.ID, "t", "", []byte("{}"))
	m2, _ := e.message(a.ID, "t", "", []byte("{}"))
	first := e.attempt(m1, ep1, platform.OutcomeFailed, 503)
	first.Detail = "bad\x00" + strings.Repeat("é", 300)
	first.ResponseHeaders, first.ResponseBody = nil, nil
	in := []platform.Attempt{first, e.attempt(m1, ep2, platform.OutcomeDelivered, 200),
		e.attempt(m2, ep1, platform.OutcomeTimeout, 0), e.attempt(m1, ep1, platform.OutcomeRefused, 410)}
	kept := make([]platform.Attempt, len(in))
	for i, at := range in {
		e.record(at)
		kept[i] = platform.CleanAttempt(at)
	}
	if d := kept[0].Detail; len(d) > 256 || strings.Contains(d, "\x00") {
		e.t.Errorf("detail kept as %q; CleanAttempt must bound and clean it", d)
	}
	byMsg, err := e.s.ListMessageAttempts(e.ctx, a.ID, m1.ID, "", 2)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "ListMessageAttempts, first page", []platform.Attempt{kept[3], kept[1]}, byMsg)
	byMsg, err = e.s.ListMessageAttempts(e.ctx, a.ID, m1.ID, byMsg[1].ID, 2)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "ListMessageAttempts, second page", []platform.Attempt{kept[0]}, byMsg)
	byEp, err := e.s.ListEndpointAttempts(e.ctx, a.ID, ep1.ID, "", 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "ListEndpointAttempts", []platform.Attempt{kept[3], kept[2], kept[0]}, byEp)

	_, err = e.s.ListMessageAttempts(e.ctx, other.ID, m1.ID, "", 10)
	e.wantErr("ListMessageAttempts under another application", err, platform.ErrNotFound)
	_, err = e.s.ListMessageAttempts(e.ctx, a.ID, e.id(platform.MessageKind), "", 10)
	e.wantErr("ListMessageAttempts of an unknown message", err, platform.ErrNotFound)
	_, err = e.s.ListEndpointAttempts(e.ctx, other.ID, ep1.ID, "", 10)
	e.wantErr("ListEndpointAttempts under another application", err, platform.ErrNotFound)
	_, err = e.s.ListEndpointAttempts(e.ctx, a.ID, "ep_nope", "", 10)
	e.wantErr("ListEndpointAttempts of a malformed endpoint ID", err, platform.ErrNotFound)
	_, err = e.s.ListEndpointAttempts(e.ctx, a.ID, ep1.ID, "msg_x", 10)
	e.wantField("ListEndpointAttempts after", err, "after")
	_, err = e.s.ListMessageAttempts(e.ctx, a.ID, m1.ID, "", 0)
	e.wantField("ListMessageAttempts limit", err, "limit")

	stray := e.attempt(m1, theirs, platform.OutcomeDelivered, 200)
	stray.AppID = a.ID
	_, err = e.s.RecordAttempt(e.ctx, stray)
	e.wantErr("RecordAttempt to another application's endpoint", err, platform.ErrNotFound)
	_, err = e.s.RecordAttempt(e.ctx, in[1])
	e.wantErr("RecordAttempt of a taken ID", err, platform.ErrConflict)
	byEp, _ = e.s.ListEndpointAttempts(e.ctx, other.ID, theirs.ID, "", 10)
	diff(e.t, "attempts of the other application's endpoint", []platform.Attempt{}, byEp)
}

// attemptsBadArguments: each refused attempt fails with a FieldError
// naming its field and is not recorded.
func attemptsBadArguments(e *env) {
	a := e.app("a")
	ep := e.create(e.endpoint(a.ID))
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	for _, c := range []struct {
		name  string
		set   func(*platform.Attempt)
		field string
	}{
		{"bad-id", func(p *platform.Attempt) { p.ID = "msg_" + p.ID[6:] }, "id"},
		{"bad-app", func(p *platform.Attempt) { p.AppID = "x" }, "app_id"},
		{"bad-message", func(p *platform.Attempt) { p.MessageID = "x" }, "message_id"},
		{"bad-endpoint", func(p *platform.Attempt) { p.EndpointID = "x" }, "endpoint_id"},
		{"other-delivery", func(p *platform.Attempt) { p.DeliveryID = "d1" }, "delivery_id"},
		{"negative-attempt", func(p *platform.Attempt) { p.Attempt = -1 }, "attempt"},
		{"no-time", func(p *platform.Attempt) { p.At = time.Time{} }, "at"},
		{"negative-duration", func(p *platform.Attempt) { p.Duration = -time.Second }, "duration"},
		{"status", func(p *platform.Attempt) { p.Status = 600 }, "status"},
		{"outcome", func(p *platform.Attempt) { p.Outcome = "ok" }, "outcome"},
		{"big-body", func(p *platform.Attempt) { p.ResponseBody = make([]byte, platform.MaxResponseBodyBytes+1) }, "response_body"},
		{"big-headers", func(p *platform.Attempt) {
			p.ResponseHeaders = http.Header{"X-Big": {strings.Repeat("x", platform.MaxResponseHeaderBytes)}}
		}, "response_headers"},
	} {
		at := e.attempt(m, ep, platform.OutcomeFailed, 500)
		c.set(&at)
		_, err := e.s.RecordAttempt(e.ctx, at)
		e.wantField("RecordAttempt "+c.name, err, c.field)
	}
	list, err := e.s.ListEndpointAttempts(e.ctx, a.ID, ep.ID, "", 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "attempts after refused calls", []platform.Attempt{}, list)
	h, err := e.s.GetHealth(e.ctx, a.ID, ep.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "health after refused calls", platform.EndpointHealth{EndpointID: ep.ID, AppID: a.ID}, h)
}

// endpointHealth: failures start a streak at the first one's time and
// lengthen it, a success ends it; RecordAttempt returns the health that
// GetHealth then reads; an endpoint never attempted has the zero health.
func endpointHealth(e *env) {
	a, other := e.app("a"), e.app("other")
	ep := e.create(e.endpoint(a.ID))
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	h, err := e.s.GetHealth(e.ctx, a.ID, ep.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "health of a new endpoint", platform.EndpointHealth{EndpointID: ep.ID, AppID: a.ID}, h)
	f1 := e.attempt(m, ep, platform.OutcomeFailed, 503)
	e.record(f1)
	f2 := e.attempt(m, ep, platform.OutcomeTimeout, 0)
	got := e.record(f2)
	want := platform.EndpointHealth{EndpointID: ep.ID, AppID: a.ID, LastAttempt: f2.At, FailingSince: f1.At, Streak: 2, Failures: 2}
	diff(e.t, "health after two failures", want, got)
	ok := e.attempt(m, ep, platform.OutcomeDelivered, 200)
	got = e.record(ok)
	want = platform.EndpointHealth{EndpointID: ep.ID, AppID: a.ID, LastAttempt: ok.At, LastSuccess: ok.At, Successes: 1, Failures: 2}
	diff(e.t, "health after a success", want, got)
	f3 := e.attempt(m, ep, platform.OutcomeRefused, 410)
	got = e.record(f3)
	want.LastAttempt, want.FailingSince, want.Streak, want.Failures = f3.At, f3.At, 1, 3
	diff(e.t, "health after a failure that follows a success", want, got)
	read, err := e.s.GetHealth(e.ctx, a.ID, ep.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, "GetHealth", want, read)
	_, err = e.s.GetHealth(e.ctx, other.ID, ep.ID)
	e.wantErr("GetHealth under another application", err, platform.ErrNotFound)
}

// disableEndpoint: DisableEndpoint disables an enabled endpoint once,
// recording why and when, so a disabled endpoint is left out of the
// next fan-out; enabling it again clears the streak and the reason and
// keeps the counts.
func disableEndpoint(e *env) {
	a := e.app("a")
	ep := e.create(e.endpoint(a.ID))
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	f1 := e.attempt(m, ep, platform.OutcomeFailed, 503)
	e.record(f1)
	_, _, err := e.s.DisableEndpoint(e.ctx, a.ID, ep.ID, "tired")
	e.wantField("DisableEndpoint with a bad reason", err, "reason")
	e.tick(time.Second)
	at := e.now()
	off, changed, err := e.s.DisableEndpoint(e.ctx, a.ID, ep.ID, platform.DisabledGone)
	if err != nil || !changed || off.Enabled || !off.UpdatedAt.Equal(at) {
		e.t.Fatalf("DisableEndpoint = %+v, %v, %v; want disabled at %v, changed", off, changed, err, at)
	}
	e.tick(time.Second)
	again, changed, err := e.s.DisableEndpoint(e.ctx, a.ID, ep.ID, platform.DisabledFailing)
	if err != nil || changed {
		e.t.Errorf("DisableEndpoint again: changed = %v, err = %v; want unchanged", changed, err)
	}
	diff(e.t, "endpoint disabled again", off, again)
	want := platform.EndpointHealth{EndpointID: ep.ID, AppID: a.ID, LastAttempt: f1.At, FailingSince: f1.At, Streak: 1, Failures: 1,
		DisabledReason: platform.DisabledGone, DisabledAt: at}
	h, _ := e.s.GetHealth(e.ctx, a.ID, ep.ID)
	diff(e.t, "health once disabled", want, h)
	if m2, _ := e.message(a.ID, "t", "", []byte("{}")); len(m2.Fanout) != 0 {
		e.t.Errorf("fan-out to a disabled endpoint: %+v", m2.Fanout)
	}
	off.Description = "still off"
	if _, err := e.s.UpdateEndpoint(e.ctx, off); err != nil {
		e.t.Fatal(err)
	}
	h, _ = e.s.GetHealth(e.ctx, a.ID, ep.ID)
	diff(e.t, "health after an update that does not enable", want, h)
	off.Enabled = true
	if _, err := e.s.UpdateEndpoint(e.ctx, off); err != nil {
		e.t.Fatal(err)
	}
	h, _ = e.s.GetHealth(e.ctx, a.ID, ep.ID)
	diff(e.t, "health once enabled again", platform.EndpointHealth{EndpointID: ep.ID, AppID: a.ID, LastAttempt: f1.At, Failures: 1}, h)
	_, _, err = e.s.DisableEndpoint(e.ctx, a.ID, e.id(platform.EndpointKind), platform.DisabledGone)
	e.wantErr("DisableEndpoint of an unknown endpoint", err, platform.ErrNotFound)
}

// attemptsRetention: DeleteAttemptsBefore deletes the oldest first, a
// page at a time, and nothing at or after its time; deleting an
// endpoint deletes its attempts and health, deleting an application
// every attempt of it.
func attemptsRetention(e *env) {
	a, other := e.app("a"), e.app("other")
	ep, gone := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID))
	theirs := e.create(e.endpoint(other.ID))
	m, _ := e.message(a.ID, "t", "", []byte("{}"))
	mo, _ := e.message(other.ID, "t", "", []byte("{}"))
	var kept []platform.Attempt
	for range 4 {
		at := e.attempt(m, ep, platform.OutcomeFailed, 500)
		e.record(at)
		kept = append(kept, platform.CleanAttempt(at))
	}
	cut := kept[2].At
	for _, c := range []struct{ limit, want int }{{1, 1}, {10, 1}, {10, 0}} {
		n, err := e.s.DeleteAttemptsBefore(e.ctx, cut, c.limit)
		if err != nil || n != c.want {
			e.t.Errorf("DeleteAttemptsBefore(limit %d) = %d, %v; want %d", c.limit, n, err, c.want)
		}
	}
	left, _ := e.s.ListEndpointAttempts(e.ctx, a.ID, ep.ID, "", 10)
	diff(e.t, "attempts left", []platform.Attempt{kept[3], kept[2]}, left)
	_, err := e.s.DeleteAttemptsBefore(e.ctx, cut, 0)
	e.wantField("DeleteAttemptsBefore limit", err, "limit")

	e.record(e.attempt(m, gone, platform.OutcomeFailed, 500))
	theirsAt := platform.CleanAttempt(e.attempt(mo, theirs, platform.OutcomeDelivered, 200))
	e.record(theirsAt)
	if err := e.s.DeleteEndpoint(e.ctx, a.ID, gone.ID); err != nil {
		e.t.Fatal(err)
	}
	byMsg, _ := e.s.ListMessageAttempts(e.ctx, a.ID, m.ID, "", 10)
	diff(e.t, "the message's attempts after its endpoint's delete", []platform.Attempt{kept[3], kept[2]}, byMsg)
	if err := e.s.DeleteApp(e.ctx, a.ID); err != nil {
		e.t.Fatal(err)
	}
	n, err := e.s.DeleteAttemptsBefore(e.ctx, e.now().Add(time.Hour), 10)
	if err != nil || n != 1 {
		e.t.Errorf("DeleteAttemptsBefore after DeleteApp = %d, %v; want only the other application's one", n, err)
	}
}

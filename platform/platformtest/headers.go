package platformtest

import (
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

// endpointHeaders: an endpoint's custom headers are kept whole by create
// and update, replaced whole, and none read back as nil; a bad set names
// the header at fault and changes nothing.
func endpointHeaders(e *env) {
	a := e.app("a")
	ep := e.endpoint(a.ID)
	ep.EventTypes = []string{}
	ep.Headers = map[string]string{"X-Tenant": "acme", "Authorization": "Bearer t0k"}
	got := e.create(ep)
	want := ep
	want.CreatedAt, want.UpdatedAt = e.now(), e.now()
	diff(e.t, "CreateEndpoint with headers", want, got)
	want.Headers = map[string]string{"x-other": "1"}
	if got, err := e.s.UpdateEndpoint(e.ctx, want); err != nil || got.Headers["x-other"] != "1" || len(got.Headers) != 1 {
		e.t.Errorf("UpdateEndpoint replacing the headers = %v, %v; want only x-other", got.Headers, err)
	}
	want.Headers = map[string]string{}
	got, err := e.s.UpdateEndpoint(e.ctx, want)
	if err != nil || got.Headers != nil {
		e.t.Errorf("UpdateEndpoint with no headers = %#v, %v; want nil", got.Headers, err)
	}
	kept, _ := e.s.GetEndpoint(e.ctx, ep.ID)
	for _, c := range []struct {
		name    string
		headers map[string]string
		field   string
	}{
		{"reserved", map[string]string{"X-Ok": "1", "Webhook-Signature": "v1,x"}, "headers.Webhook-Signature"},
		{"host", map[string]string{"HOST": "evil.example"}, "headers.HOST"},
		{"not-a-token", map[string]string{"X Tenant": "a"}, "headers.X Tenant"},
		{"line-break", map[string]string{"X-Tenant": "a\r\nX-Injected: 1"}, "headers.X-Tenant"},
		{"too-long", map[string]string{"X-Big": strings.Repeat("v", platform.MaxHeaderBytes)}, "headers.X-Big"},
	} {
		bad := kept
		bad.Headers = c.headers
		_, err := e.s.UpdateEndpoint(e.ctx, bad)
		e.wantField("UpdateEndpoint "+c.name, err, c.field)
	}
	after, _ := e.s.GetEndpoint(e.ctx, ep.ID)
	diff(e.t, "GetEndpoint after refused updates", kept, after)
}

// endpointAttemptTimeout: an endpoint's attempt timeout is kept by create
// and update; one out of range names attempt_timeout and changes
// nothing.
func endpointAttemptTimeout(e *env) {
	a := e.app("a")
	ep := e.endpoint(a.ID)
	ep.AttemptTimeout = 90 * time.Second
	if got := e.create(ep); got.AttemptTimeout != 90*time.Second {
		e.t.Errorf("CreateEndpoint kept AttemptTimeout %s; want 90s", got.AttemptTimeout)
	}
	read, _ := e.s.GetEndpoint(e.ctx, ep.ID)
	read.AttemptTimeout = platform.MaxAttemptTimeout
	if got, err := e.s.UpdateEndpoint(e.ctx, read); err != nil || got.AttemptTimeout != platform.MaxAttemptTimeout {
		e.t.Errorf("UpdateEndpoint to the most = %s, %v", got.AttemptTimeout, err)
	}
	for _, bad := range []time.Duration{-time.Second, time.Second - time.Millisecond, platform.MaxAttemptTimeout + time.Millisecond, 2*time.Second + time.Microsecond} {
		x := read
		x.AttemptTimeout = bad
		_, err := e.s.UpdateEndpoint(e.ctx, x)
		e.wantField("UpdateEndpoint attempt timeout "+bad.String(), err, "attempt_timeout")
	}
	if got, _ := e.s.GetEndpoint(e.ctx, ep.ID); got.AttemptTimeout != platform.MaxAttemptTimeout {
		e.t.Errorf("after refused updates AttemptTimeout is %s; want %s", got.AttemptTimeout, platform.MaxAttemptTimeout)
	}
}

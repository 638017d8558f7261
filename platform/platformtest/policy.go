package platformtest

import (
	"time"

	"github.com/courierlab/courier/platform"
)

// endpointRetryPolicy: an endpoint's retry and status policy is kept as
// given, on create and update, read and listed: its attempts and backoff
// bounds, and its reject statuses, where nil (the default, 410 only)
// stays apart from empty (none rejected); every field back at zero is
// the default again.
func endpointRetryPolicy(e *env) {
	a := e.app("a")
	ep := e.endpoint(a.ID)
	ep.EventTypes = []string{} // as a store gives it back
	ep.MaxAttempts, ep.BaseBackoff, ep.MaxBackoff, ep.RejectStatuses = 3, 250*time.Millisecond, 90*time.Second, []int{410, 422, 404}
	got := e.create(ep)
	want := ep
	want.CreatedAt, want.UpdatedAt = e.now(), e.now()
	diff(e.t, "CreateEndpoint with a retry policy", want, got)
	for _, c := range []struct {
		name   string
		reject []int
	}{{"empty", []int{}}, {"nil", nil}, {"one", []int{500}}} {
		e.tick(time.Second)
		up := want
		up.MaxAttempts, up.BaseBackoff, up.MaxBackoff, up.RejectStatuses = 0, 0, 0, c.reject
		got, err := e.s.UpdateEndpoint(e.ctx, up)
		if err != nil {
			e.t.Fatal(err)
		}
		up.UpdatedAt = e.now()
		diff(e.t, "UpdateEndpoint, reject statuses "+c.name, up, got)
		read, err := e.s.GetEndpoint(e.ctx, ep.ID)
		if err != nil {
			e.t.Fatal(err)
		}
		diff(e.t, "GetEndpoint, reject statuses "+c.name, up, read)
		e.wantEndpoints("ListEndpoints, reject statuses "+c.name, a.ID, up)
		if (read.RejectStatuses == nil) != (c.reject == nil) {
			e.t.Errorf("reject statuses %s read back as %#v", c.name, read.RejectStatuses)
		}
	}
}

// endpointRetryPolicyBadArguments: a retry or status policy out of its
// bounds names its field, on create and on update, and changes nothing;
// a MaxBackoff below the BaseBackoff (the default's included) is the
// machine's rule, named as the API names it.
func endpointRetryPolicyBadArguments(e *env) {
	a := e.app("a")
	kept := e.create(e.endpoint(a.ID))
	for _, c := range []struct {
		name  string
		set   func(*platform.Endpoint)
		field string
	}{
		{"attempts-negative", func(p *platform.Endpoint) { p.MaxAttempts = -1 }, "max_attempts"},
		{"attempts-over", func(p *platform.Endpoint) { p.MaxAttempts = platform.MaxMaxAttempts + 1 }, "max_attempts"},
		{"base-negative", func(p *platform.Endpoint) { p.BaseBackoff = -time.Second }, "base_backoff"},
		{"base-tiny", func(p *platform.Endpoint) { p.BaseBackoff = time.Millisecond }, "base_backoff"},
		{"base-over", func(p *platform.Endpoint) { p.BaseBackoff = 2 * time.Hour }, "base_backoff"},
		{"max-over", func(p *platform.Endpoint) { p.MaxBackoff = 25 * time.Hour }, "max_backoff"},
		{"max-below-base", func(p *platform.Endpoint) { p.BaseBackoff, p.MaxBackoff = time.Minute, time.Second }, "max_backoff"},
		{"base-above-default-max", func(p *platform.Endpoint) { p.BaseBackoff = 10 * time.Minute }, "max_backoff"},
		{"status-2xx", func(p *platform.Endpoint) { p.RejectStatuses = []int{410, 204} }, "reject_statuses[1]"},
		{"status-not-http", func(p *platform.Endpoint) { p.RejectStatuses = []int{600} }, "reject_statuses[0]"},
		{"status-repeated", func(p *platform.Endpoint) { p.RejectStatuses = []int{422, 410, 422} }, "reject_statuses[2]"},
		{"statuses-too-many", func(p *platform.Endpoint) { p.RejectStatuses = make([]int, platform.MaxRejectStatuses+1) }, "reject_statuses"},
	} {
		bad := e.endpoint(a.ID)
		c.set(&bad)
		_, err := e.s.CreateEndpoint(e.ctx, bad)
		e.wantField("CreateEndpoint "+c.name, err, c.field)
		up := kept
		c.set(&up)
		_, err = e.s.UpdateEndpoint(e.ctx, up)
		e.wantField("UpdateEndpoint "+c.name, err, c.field)
	}
	e.wantEndpoints("endpoints after the refused calls", a.ID, kept)
}

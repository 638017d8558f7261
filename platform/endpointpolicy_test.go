// This file proves EndpointPolicy and StatusPolicy: an endpoint's
// ordering, attempts in flight, rate limit and retry policy reach its
// stream's machine.Config, each zero field keeping machine.DefaultConfig's
// value; its reject statuses reach the channel's StatusPolicy, nil
// meaning the channel's default and empty rejecting none.
package platform_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook/httpchannel"
)

func TestEndpointPolicy(t *testing.T) {
	def := machine.DefaultConfig()
	for _, c := range []struct {
		name string
		ep   platform.Endpoint
		set  func(*machine.Config)
	}{
		{"defaults", platform.Endpoint{Ordering: platform.Strict}, func(*machine.Config) {}},
		{"independent", platform.Endpoint{Ordering: platform.Independent},
			func(p *machine.Config) { p.Ordering, p.Window = machine.Independent, platform.DefaultMaxInFlight }},
		{"in-flight", platform.Endpoint{Ordering: platform.Independent, MaxInFlight: 3},
			func(p *machine.Config) { p.Ordering, p.Window = machine.Independent, 3 }},
		{"rate", platform.Endpoint{Ordering: platform.Strict, RateLimit: 7}, func(p *machine.Config) { p.RateLimit, p.RatePer = 7, time.Second }},
		{"retry", platform.Endpoint{Ordering: platform.Strict, MaxAttempts: 2, BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Minute},
			func(p *machine.Config) {
				p.MaxAttempts, p.BaseBackoff, p.MaxBackoff = 2, 50*time.Millisecond, time.Minute
			}},
		{"retry-max-only", platform.Endpoint{Ordering: platform.Strict, MaxBackoff: time.Hour}, func(p *machine.Config) { p.MaxBackoff = time.Hour }},
	} {
		want := def
		c.set(&want)
		if d := cmp.Diff(want, platform.EndpointPolicy(machine.DefaultConfig(), c.ep)); d != "" {
			t.Errorf("%s: EndpointPolicy (-want +got):\n%s", c.name, d)
		}
	}
	if p := platform.StatusPolicy(platform.Endpoint{}); p != nil {
		t.Errorf("StatusPolicy with no reject statuses = %+v; want nil, the channel's default", p)
	}
	for _, reject := range [][]int{{}, {410, 422}} {
		p := platform.StatusPolicy(platform.Endpoint{RejectStatuses: reject})
		if p == nil || !cmp.Equal(reject, p.RejectOn) || cmp.Equal(*p, httpchannel.DefaultStatusPolicy()) {
			t.Errorf("StatusPolicy with reject statuses %v = %+v; want them", reject, p)
		}
	}
}

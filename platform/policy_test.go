// This file proves the endpoints' policy: an endpoint's rate limit and
// ordering reach its stream's machine.Config, a disabled endpoint's
// stream is refused with ErrDisabled, and a deleted one's gets the base.
package platform_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platmem"
)

func TestStreamPolicy(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := platmem.New(func() time.Time { return now })
	app, err := st.CreateApp(ctx, platform.Application{ID: platform.NewID(platform.AppKind, now), Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := st.CreateEndpoint(ctx, platform.Endpoint{ID: platform.NewID(platform.EndpointKind, now), AppID: app.ID,
		URL: "https://example.com/hook", Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, Enabled: true,
		Ordering: platform.Independent, RateLimit: 3, MaxInFlight: 5})
	if err != nil {
		t.Fatal(err)
	}
	base := machine.DefaultConfig()
	p, err := platform.StreamPolicy(ctx, st, base, platform.StreamOf(ep.ID))
	if err != nil || p.RateLimit != 3 || p.RatePer != time.Second || p.Ordering != machine.Independent || p.Window != 5 {
		t.Fatalf("enabled: %+v, %v; want 3 per second, independent, window 5", p, err)
	}
	ep.Enabled = false
	if _, err := st.UpdateEndpoint(ctx, ep); err != nil {
		t.Fatal(err)
	}
	if _, err := platform.StreamPolicy(ctx, st, base, platform.StreamOf(ep.ID)); !errors.Is(err, platform.ErrDisabled) {
		t.Fatalf("disabled: err = %v; want ErrDisabled", err)
	}
	gone := platform.NewID(platform.EndpointKind, now)
	if p, err := platform.StreamPolicy(ctx, st, base, gone); err != nil || p != base {
		t.Fatalf("deleted: %+v, %v; want the base", p, err)
	}
}

package platform

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

// ErrDisabled is what StreamPolicy returns, wrapped, for the stream of a
// disabled endpoint: the worker gives the stream back and its deliveries
// wait until the endpoint is enabled again. A shell wraps its own pause
// error around it (courier.ErrPaused), so the stream counts as paused.
var ErrDisabled = errors.New("platform: endpoint disabled")

// EndpointPolicy is the delivery policy of endpoint ep's stream: base
// with the endpoint's ordering, attempts in flight (Window) and rate limit
// (RateLimit attempt starts per second); an ordering other than Strict
// and Independent keeps base's.
func EndpointPolicy(base machine.Config, ep Endpoint) machine.Config {
	p := base
	switch ep.Ordering {
	case Independent:
		p.Ordering, p.Window = machine.Independent, DefaultMaxInFlight
		if ep.MaxInFlight > 0 {
			p.Window = ep.MaxInFlight
		}
	case Strict:
		p.Ordering, p.Window = machine.Strict, 1
	}
	p.RateLimit, p.RatePer = 0, 0
	if ep.RateLimit > 0 {
		p.RateLimit, p.RatePer = ep.RateLimit, time.Second
	}
	return p
}

// StreamPolicy is the Policy a worker asks for an endpoint's stream
// (worker.Config.Policy), as courier serve and the simulator both ask it:
// the endpoint's policy (EndpointPolicy) as the store holds it now, an
// error wrapping ErrDisabled while it is disabled, and base itself for an
// endpoint deleted (its deliveries are then refused at send and kept as
// dead letters). A store failure is returned as it is: the worker tries
// the stream again later.
func StreamPolicy(ctx context.Context, st Store, base machine.Config, stream string) (machine.Config, error) {
	ep, err := st.GetEndpoint(ctx, stream)
	switch {
	case errors.Is(err, ErrNotFound):
		return base, nil
	case err != nil:
		return machine.Config{}, fmt.Errorf("reading endpoint %q: %w", stream, err)
	case !ep.Enabled && !plant.On(plant.DisabledEndpointServed):
		return machine.Config{}, fmt.Errorf("%w: endpoint %q", ErrDisabled, stream)
	}
	return EndpointPolicy(base, ep), nil
}

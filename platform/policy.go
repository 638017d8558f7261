package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// The bounds of an endpoint's retry policy. Zero in each field means
// machine.DefaultConfig's value (8 attempts, backoff from 1 s to 5 min).
const (
	MaxMaxAttempts    = 100
	MinBackoff        = 10 * time.Millisecond
	MaxBaseBackoff    = time.Hour
	MaxMaxBackoff     = 24 * time.Hour
	MaxRejectStatuses = 50
)

// ErrDisabled is what StreamPolicy returns, wrapped, for the stream of a
// disabled endpoint: the worker gives the stream back and its deliveries
// wait until the endpoint is enabled again. A shell wraps its own pause
// error around it (courier.ErrPaused), so the stream counts as paused.
var ErrDisabled = errors.New("platform: endpoint disabled")

// EndpointPolicy is the delivery policy of endpoint ep's stream: base
// with the endpoint's ordering, attempts in flight (Window), rate limit
// (RateLimit attempt starts per second), retry policy (MaxAttempts,
// BaseBackoff, MaxBackoff) and AttemptTimeout, a zero field keeping
// base's; an ordering other than Strict and Independent keeps base's.
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
	if ep.MaxAttempts > 0 {
		p.MaxAttempts = ep.MaxAttempts
	}
	if ep.BaseBackoff > 0 {
		p.BaseBackoff = ep.BaseBackoff
	}
	if ep.MaxBackoff > 0 {
		p.MaxBackoff = ep.MaxBackoff
	}
	if ep.AttemptTimeout > 0 {
		p.AttemptTimeout = ep.AttemptTimeout
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
	p := EndpointPolicy(base, ep)
	if plant.On(plant.EndpointRetryDropped) {
		p.MaxAttempts, p.BaseBackoff, p.MaxBackoff = base.MaxAttempts, base.BaseBackoff, base.MaxBackoff
	}
	return p, nil
}

// StatusPolicy is what e's HTTP channel rejects at once (a dead letter,
// "rejected"); every other non-2xx is retried as EndpointPolicy says. Nil
// RejectStatuses is nil: httpchannel.DefaultStatusPolicy (410 only). The
// channel classifies statuses; the platform only keeps the list.
func StatusPolicy(e Endpoint) *httpchannel.StatusPolicy {
	if e.RejectStatuses == nil || plant.On(plant.RejectStatusesDropped) {
		return nil
	}
	return &httpchannel.StatusPolicy{RejectOn: slices.Clone(e.RejectStatuses)}
}

// checkRetryPolicy checks e's retry and status policy: each field in its
// bounds, each status one httpchannel.CheckRejectStatus takes, once; then
// EndpointPolicy(machine.DefaultConfig(), e) as the machine validates it
// (a MaxBackoff below the BaseBackoff, defaults included), its field named
// as the API names it.
func checkRetryPolicy(e Endpoint) error {
	switch {
	case e.MaxAttempts < 0 || e.MaxAttempts > MaxMaxAttempts:
		return fieldErr("max_attempts", "is %d; must be within 0..%d (0 is the default, 8)", e.MaxAttempts, MaxMaxAttempts)
	case e.BaseBackoff != 0 && (e.BaseBackoff < MinBackoff || e.BaseBackoff > MaxBaseBackoff):
		return fieldErr("base_backoff", "is %v; must be within %v..%v (0 is the default, 1s)", e.BaseBackoff, MinBackoff, MaxBaseBackoff)
	case e.MaxBackoff != 0 && (e.MaxBackoff < MinBackoff || e.MaxBackoff > MaxMaxBackoff):
		return fieldErr("max_backoff", "is %v; must be within %v..%v (0 is the default, 5m0s)", e.MaxBackoff, MinBackoff, MaxMaxBackoff)
	case len(e.RejectStatuses) > MaxRejectStatuses:
		return fieldErr("reject_statuses", "has %d statuses; at most %d", len(e.RejectStatuses), MaxRejectStatuses)
	}
	for i, code := range e.RejectStatuses {
		field := "reject_statuses[" + strconv.Itoa(i) + "]"
		if err := httpchannel.CheckRejectStatus(code); err != nil {
			return fieldErr(field, "%v", err)
		}
		if j := slices.Index(e.RejectStatuses[:i], code); j >= 0 {
			return fieldErr(field, "repeats reject_statuses[%d], %d", j, code)
		}
	}
	if err := EndpointPolicy(machine.DefaultConfig(), e).Validate(); err != nil {
		return fieldErr(ConfigFieldName(err), "%s", strings.TrimPrefix(err.Error(), machine.ErrInvalidConfig.Error()+": "))
	}
	return nil
}

// ConfigFieldName is the snake_case name, as the API and the config file
// spell it, of the machine.Config field a Validate error names first
// (MaxBackoff: max_backoff); "policy" for any other error.
func ConfigFieldName(err error) string {
	if !errors.Is(err, machine.ErrInvalidConfig) {
		return "policy"
	}
	msg := strings.TrimPrefix(err.Error(), machine.ErrInvalidConfig.Error()+": ")
	field, _, _ := strings.Cut(msg, " ")
	var b strings.Builder
	for i, r := range field {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

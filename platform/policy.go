package platform

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

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

// StreamPolicy is the delivery policy of endpoint e's stream:
// machine.DefaultConfig with e's ordering, attempts in flight (Window),
// rate limit (RateLimit starts per RatePer of a second) and retry policy
// (MaxAttempts, BaseBackoff, MaxBackoff; a zero field keeps the
// default). Its Seed is DefaultConfig's: a runtime draws its own.
func StreamPolicy(e Endpoint) machine.Config {
	p := machine.DefaultConfig()
	if e.Ordering == Independent {
		p.Ordering, p.Window = machine.Independent, DefaultMaxInFlight
		if e.MaxInFlight > 0 {
			p.Window = e.MaxInFlight
		}
	}
	if e.RateLimit > 0 {
		p.RateLimit, p.RatePer = e.RateLimit, time.Second
	}
	if e.MaxAttempts > 0 {
		p.MaxAttempts = e.MaxAttempts
	}
	if e.BaseBackoff > 0 {
		p.BaseBackoff = e.BaseBackoff
	}
	if e.MaxBackoff > 0 {
		p.MaxBackoff = e.MaxBackoff
	}
	return p
}

// StatusPolicy is what e's HTTP channel rejects at once (a dead letter,
// "rejected"); every other non-2xx is retried as StreamPolicy says. Nil
// RejectStatuses is nil: httpchannel.DefaultStatusPolicy (410 only). The
// channel classifies statuses; the platform only keeps the list.
func StatusPolicy(e Endpoint) *httpchannel.StatusPolicy {
	if e.RejectStatuses == nil {
		return nil
	}
	return &httpchannel.StatusPolicy{RejectOn: slices.Clone(e.RejectStatuses)}
}

// checkRetryPolicy checks e's retry and status policy: each field in its
// bounds, each status one httpchannel.CheckRejectStatus takes, once; then
// StreamPolicy(e) as the machine validates it (a MaxBackoff below the
// BaseBackoff, defaults included), its field named as the API names it.
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
	if err := StreamPolicy(e).Validate(); err != nil {
		return fieldErr(apiName(err), "%s", strings.TrimPrefix(err.Error(), machine.ErrInvalidConfig.Error()+": "))
	}
	return nil
}

// apiName is the API's name of the machine.Config field a Validate error
// names first (MaxBackoff: max_backoff).
func apiName(err error) string {
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

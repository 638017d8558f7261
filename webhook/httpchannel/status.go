package httpchannel

import (
	"fmt"
	"net/http"
	"slices"
)

// StatusPolicy says which HTTP answers reject an event at once. A 2xx is
// always delivered. A status in RejectOn is a rejection: the event goes
// dead at once and is kept as a dead letter (machine.OutcomeRefused).
// Every other status (1xx, 3xx, 4xx, 5xx) is a failure, retried with
// backoff (machine.OutcomeFailed), the answer's Retry-After passed on.
type StatusPolicy struct {
	// RejectOn lists the statuses that reject at once. Each must be an
	// HTTP status (100..599) and not a 2xx. Empty rejects nothing: every
	// non-2xx is retried until the event's budget runs out.
	RejectOn []int
}

// DefaultStatusPolicy is the policy of a Config whose StatusPolicy is
// nil: only 410 Gone rejects at once, the answer by which Standard
// Webhooks lets a receiver say "stop sending here". Every other non-2xx
// is retried, as Svix does: a 404 or 401 is most often a deploy or a
// configuration being fixed, and retrying lets the event through once it
// is, instead of leaving dead letters to replay one by one.
func DefaultStatusPolicy() StatusPolicy {
	return StatusPolicy{RejectOn: []int{http.StatusGone}}
}

// CheckRejectStatus reports why code cannot be in StatusPolicy.RejectOn,
// or nil if it can.
func CheckRejectStatus(code int) error {
	switch {
	case code < 100 || code > 599:
		return fmt.Errorf("%d is not an HTTP status (100..599)", code)
	case code >= 200 && code <= 299:
		return fmt.Errorf("%d is a success: a 2xx always means delivered", code)
	}
	return nil
}

// rejectSet is a checked, private copy of a StatusPolicy.
type rejectSet []int

func newRejectSet(p *StatusPolicy) (rejectSet, error) {
	if p == nil {
		d := DefaultStatusPolicy()
		p = &d
	}
	for i, code := range p.RejectOn {
		if err := CheckRejectStatus(code); err != nil {
			return nil, fmt.Errorf("StatusPolicy.RejectOn[%d]: %w", i, err)
		}
	}
	return slices.Clone(p.RejectOn), nil
}

func (s rejectSet) rejects(code int) bool { return slices.Contains(s, code) }

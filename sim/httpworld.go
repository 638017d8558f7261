package sim

import (
	"fmt"
	"net/http"
	"time"
)

// HTTP runs a world's sends through the real parts instead of the fake
// channel and receiver: the worker's attempts go through
// webhook/httpchannel (signed, classified by status) into the receiver
// kit webhook/receiver (verified, deduplicated by webhook-id, fenced by
// sequence when Receiver.Fence), over an in-memory http.RoundTripper,
// each round trip made synchronously when the request arrives (httpsim.go).
// The world's faults are the same, expressed in HTTP: an outage is a
// refused connection, a flapping link answers 502 itself, a lost reply
// is a connection reset or a hang after the receiver applied, a poison or
// stubborn event is answered RejectStatus with Retry-After in seconds.
type HTTP struct {
	On bool
	// RejectStatus is the status of a poison or stubborn event's
	// rejection: 429, 500 or 503 (0 means 503). The channel must take
	// each for a retryable failure.
	RejectStatus int
	// ResetRate is the share of lost replies lost as a reset connection,
	// which the channel reports as a failure at once; the others hang
	// until the sender's ClientTimeout.
	ResetRate float64
	// Rotation rotates the signing secret while the run goes on; zero
	// Add means none.
	Rotation Rotation
}

// Rotation is a secret rotation done right: the receiver accepts the new
// secret besides the old from Add, the sender signs with the new one
// only from Switch, and the receiver drops the old one at Drop, once no
// request signed with it can still be on its way.
type Rotation struct {
	Add, Switch, Drop time.Duration
}

// RotationHold is the least a Rotation must keep both secrets valid after
// Switch: the longest a request signed before it may take to arrive (a
// late request, its latency, and every slow store call that may hold the
// world meanwhile), and a second more.
func (w World) RotationHold() time.Duration {
	return w.Channel.LateDelay + w.Channel.LatencyMax + w.Store.Slow.held() + time.Second
}

func (w World) validateHTTP() error {
	h := w.HTTP
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: HTTP.%s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	if !h.On {
		if h != (HTTP{}) {
			return bad("On", "is false, but HTTP faults are set")
		}
		return nil
	}
	switch h.RejectStatus {
	case 0, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable:
	default:
		return bad("RejectStatus", "is %d; must be 0, 429, 500 or 503", h.RejectStatus)
	}
	if !(h.ResetRate >= 0 && h.ResetRate <= 1) {
		return bad("ResetRate", "is %v; must be within 0..1", h.ResetRate)
	}
	r := h.Rotation
	if r.Add == 0 {
		if r != (Rotation{}) {
			return bad("Rotation", "%+v has no Add", r)
		}
		return nil
	}
	if r.Add < 0 || r.Switch <= r.Add || r.Drop-r.Switch < w.RotationHold() {
		return bad("Rotation", "%+v must have 0 < Add < Switch and Drop at least Switch+%v (RotationHold)", r, w.RotationHold())
	}
	return nil
}

func (h HTTP) describe() string {
	if !h.On {
		return ""
	}
	s := fmt.Sprintf(" | http reject=%d resets=%.2f", h.rejectStatus(), h.ResetRate)
	if r := h.Rotation; r.Add > 0 {
		s += fmt.Sprintf(" rotation=%v/%v/%v", r.Add, r.Switch, r.Drop)
	}
	return s
}

func (h HTTP) rejectStatus() int {
	if h.RejectStatus == 0 {
		return http.StatusServiceUnavailable
	}
	return h.RejectStatus
}

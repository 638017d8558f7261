package platform

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/store"
)

// AttemptKind prefixes an attempt's ID ("atmpt_", as Svix spells it).
const AttemptKind = "atmpt"

// Limits on what an attempt keeps of the receiver's answer: enough for
// an error message and a request ID, never a dump.
const (
	MaxResponseBodyBytes   = 4 << 10
	MaxResponseHeaderBytes = 4 << 10 // names and values together
)

// Outcome classes of an attempt, the delivery machine's names
// (machine.Outcome's String).
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
	OutcomeRefused   = "refused"
	OutcomeTimeout   = "timeout"
)

var outcomes = []string{OutcomeDelivered, OutcomeFailed, OutcomeRefused, OutcomeTimeout}

// Attempt is one HTTP attempt to deliver a message to an endpoint, as
// the attempt log keeps it for the endpoint's owner to read.
type Attempt struct {
	// ID is NewID(AttemptKind, At): the log lists newest first by it.
	ID         string
	AppID      string
	MessageID  string
	EndpointID string
	// DeliveryID is DeliveryID(MessageID, EndpointID): the webhook-id.
	DeliveryID string
	// Attempt is the delivery's attempt number, 1 for the first; 0 if
	// unknown.
	Attempt int
	// At is when the request went out, by the sender's clock; Duration
	// how long it took to the answer (or to the failure).
	At       time.Time
	Duration time.Duration
	// Status is the HTTP status answered; 0 when no answer came.
	Status int
	// Outcome is one of OutcomeDelivered, OutcomeFailed, OutcomeRefused,
	// OutcomeTimeout.
	Outcome string
	// Detail says why it failed, bounded as a delivery's detail is
	// (store.CleanDetail); never a payload or a secret.
	Detail string
	// ResponseHeaders and ResponseBody are what the receiver answered,
	// within MaxResponseHeaderBytes and MaxResponseBodyBytes (ClipResponse).
	ResponseHeaders http.Header
	ResponseBody    []byte
}

// DisabledGone and DisabledFailing are why an endpoint's health disabled
// it: it answered 410 Gone, or it failed with no success for the
// configured time.
const (
	DisabledGone    = "gone"
	DisabledFailing = "failing"
)

// EndpointHealth is what the attempt log learnt of an endpoint: when it
// last succeeded, since when it has been failing, and whether its health
// disabled it. A store keeps one per endpoint, changed by each
// RecordAttempt and by enabling the endpoint again.
type EndpointHealth struct {
	EndpointID string
	AppID      string
	// LastAttempt and LastSuccess are the At of the last attempt and of
	// the last delivered one; zero if none.
	LastAttempt time.Time
	LastSuccess time.Time
	// FailingSince is the At of the first failure after LastSuccess (the
	// start of the failing streak); zero when the last attempt succeeded,
	// or when the endpoint was enabled again after it.
	FailingSince time.Time
	// Streak is how many attempts failed since FailingSince.
	Streak int64
	// Successes and Failures count every attempt recorded.
	Successes int64
	Failures  int64
	// DisabledReason is DisabledGone or DisabledFailing when health
	// disabled the endpoint (DisableEndpoint), and DisabledAt when; both
	// cleared when it is enabled again.
	DisabledReason string
	DisabledAt     time.Time
}

// Note returns h after attempt a: a delivered attempt ends the failing
// streak, any other outcome starts or lengthens it. Every store applies
// this same rule.
func (h EndpointHealth) Note(a Attempt) EndpointHealth {
	h.LastAttempt = a.At
	if a.Outcome == OutcomeDelivered {
		h.Successes++
		h.LastSuccess, h.FailingSince, h.Streak = a.At, time.Time{}, 0
		return h
	}
	h.Failures++
	h.Streak++
	if h.FailingSince.IsZero() {
		h.FailingSince = a.At
	}
	return h
}

// Reenabled is h once its endpoint is enabled again: the failing streak
// and the disabling are forgotten, the counts and last times kept.
func (h EndpointHealth) Reenabled() EndpointHealth {
	h.FailingSince, h.Streak, h.DisabledReason, h.DisabledAt = time.Time{}, 0, "", time.Time{}
	return h
}

// DisableReason says whether an endpoint whose health is h (after
// attempt a) must be disabled: DisabledGone if a was answered 410 Gone
// (Standard Webhooks' "stop sending here"), DisabledFailing if it has
// failed with no success for disableAfter or longer (Svix disables after
// 5 days), "" otherwise.
func DisableReason(h EndpointHealth, a Attempt, disableAfter time.Duration) string {
	switch {
	case a.Status == http.StatusGone && !plant.On(plant.HealthIgnoresGone):
		return DisabledGone
	case !h.FailingSince.IsZero() && a.At.Sub(h.FailingSince) >= disableAfter:
		return DisabledFailing
	}
	return ""
}

// ClipResponse bounds a receiver's answer for an Attempt: it drops the
// headers that may carry a credential (Set-Cookie, WWW-Authenticate,
// Proxy-Authenticate), keeps the others in name order while they fit in
// MaxResponseHeaderBytes, and keeps the first MaxResponseBodyBytes of
// body.
func ClipResponse(h http.Header, body []byte) (http.Header, []byte) {
	out := http.Header{}
	left := MaxResponseHeaderBytes
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch http.CanonicalHeaderKey(name) {
		case "Set-Cookie", "Www-Authenticate", "Proxy-Authenticate":
			continue
		}
		for _, v := range h[name] {
			if len(name)+len(v) > left || !utf8.ValidString(name+v) {
				continue
			}
			left -= len(name) + len(v)
			out[name] = append(out[name], v)
		}
	}
	return out, slices.Clone(body[:min(len(body), MaxResponseBodyBytes)])
}

// CheckAttempt checks what a store keeps of a.
func CheckAttempt(a Attempt) error {
	for _, c := range []struct{ field, kind, id string }{
		{"id", AttemptKind, a.ID}, {"app_id", AppKind, a.AppID}, {"message_id", MessageKind, a.MessageID}, {"endpoint_id", EndpointKind, a.EndpointID},
	} {
		if err := CheckID(c.field, c.kind, c.id); err != nil {
			return err
		}
	}
	size := 0
	for name, vs := range a.ResponseHeaders {
		for _, v := range vs {
			size += len(name) + len(v)
		}
	}
	switch {
	case a.DeliveryID != DeliveryID(a.MessageID, a.EndpointID):
		return fieldErr("delivery_id", "is %q; must be the message's and the endpoint's, %q", clip(a.DeliveryID), DeliveryID(a.MessageID, a.EndpointID))
	case a.Attempt < 0:
		return fieldErr("attempt", "is %d; must not be negative", a.Attempt)
	case a.At.IsZero() || a.At.Before(time.Unix(0, 0)):
		return fieldErr("at", "is %v; must be after 1970", a.At)
	case a.Duration < 0:
		return fieldErr("duration", "is %v; must not be negative", a.Duration)
	case a.Status != 0 && (a.Status < 100 || a.Status > 599):
		return fieldErr("status", "is %d; must be an HTTP status (100..599) or 0", a.Status)
	case !slices.Contains(outcomes, a.Outcome):
		return fieldErr("outcome", "is %q; must be one of %s", clip(a.Outcome), strings.Join(outcomes, ", "))
	case size > MaxResponseHeaderBytes:
		return fieldErr("response_headers", "are %d bytes; at most %d (ClipResponse)", size, MaxResponseHeaderBytes)
	case len(a.ResponseBody) > MaxResponseBodyBytes:
		return fieldErr("response_body", "is %d bytes; at most %d (ClipResponse)", len(a.ResponseBody), MaxResponseBodyBytes)
	}
	return nil
}

// CleanAttempt is a as a store keeps it: its detail cleaned as a
// delivery's (store.CleanDetail), its time to the microsecond in UTC,
// its headers and body never nil.
func CleanAttempt(a Attempt) Attempt {
	a.Detail = store.CleanDetail(a.Detail)
	a.At = a.At.Truncate(time.Microsecond).UTC()
	a.Duration = a.Duration.Truncate(time.Microsecond)
	h := http.Header{}
	for name, vs := range a.ResponseHeaders {
		h[name] = slices.Clone(vs)
	}
	a.ResponseHeaders = h
	a.ResponseBody = append([]byte{}, a.ResponseBody...)
	return a
}

// CheckDisableReason checks DisableEndpoint's reason.
func CheckDisableReason(reason string) error {
	if reason != DisabledGone && reason != DisabledFailing {
		return fieldErr("reason", "is %q; must be %q or %q", clip(reason), DisabledGone, DisabledFailing)
	}
	return nil
}

package platform

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/webhook"
)

// Kinds of ID, as their prefixes.
const (
	AppKind      = "app"
	EndpointKind = "ep"
	MessageKind  = "msg"
)

// Limits on what the store keeps.
const (
	MaxNameBytes        = 256  // an application's name
	MaxDescriptionBytes = 1024 // an endpoint's or event type's description
	MaxURLBytes         = 2048
	MaxEventTypeBytes   = 128 // an event type's name
	MaxFilterTypes      = 64  // event types in one endpoint's filter
	MaxKeyBytes         = 256 // an idempotency key
)

// idChars is the length of an ID after its prefix: 16 bytes in base32.
const idChars = 26

// idEncoding is base32 "extended hex" in lower case: its alphabet sorts
// as the bytes it encodes, so IDs sort by their leading timestamp.
var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// NewID returns a fresh ID of kind (AppKind, EndpointKind, MessageKind):
// the prefix, "_", then 16 bytes in base32: 6 bytes of t in Unix
// milliseconds and 10 random bytes.
func NewID(kind string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails (Go 1.24+)
	return kind + "_" + idEncoding.EncodeToString(b[:])
}

// CheckID checks that id is an ID of kind as NewID makes them; field
// names it in the error.
func CheckID(field, kind, id string) error {
	rest, ok := strings.CutPrefix(id, kind+"_")
	if !ok || len(rest) != idChars {
		return fieldErr(field, "%q is not a %s ID (%s_ and %d base32 characters)", clip(id), kind, kind, idChars)
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'v') {
			return fieldErr(field, "%q is not a %s ID (%s_ and %d base32 characters)", clip(id), kind, kind, idChars)
		}
	}
	return nil
}

// StreamOf is the delivery store's stream of endpoint id: the ID itself.
// IsEndpointStream tells such a stream from any other.
func StreamOf(endpoint string) string { return endpoint }

// IsEndpointStream reports whether stream is an endpoint's (StreamOf):
// such names are reserved for the platform.
func IsEndpointStream(stream string) bool {
	return CheckID("stream", EndpointKind, stream) == nil
}

// DeliveryID is the ID of message msg's delivery to endpoint ep, in the
// delivery store and as the webhook-id: the same for every attempt, and
// distinct for each endpoint.
func DeliveryID(msg, ep string) string { return msg + "." + ep }

// clip shortens s for an error message, so a huge input is not echoed.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

// checkText checks a free text field: valid UTF-8, no control
// characters, at most max bytes; empty only if allowEmpty.
func checkText(field, s string, max int, allowEmpty bool) error {
	switch {
	case s == "" && !allowEmpty:
		return fieldErr(field, "is empty")
	case len(s) > max:
		return fieldErr(field, "is %d bytes; at most %d", len(s), max)
	case !utf8.ValidString(s):
		return fieldErr(field, "is not valid UTF-8")
	case strings.ContainsFunc(s, unicode.IsControl):
		return fieldErr(field, "holds a control character")
	}
	return nil
}

// CheckApplication checks what a store keeps of a.
func CheckApplication(a Application) error {
	if err := CheckID("id", AppKind, a.ID); err != nil {
		return err
	}
	return checkText("name", a.Name, MaxNameBytes, false)
}

// CheckEventTypeName checks an event type's name: 1 to MaxEventTypeBytes
// of letters, digits, '.', '_' and '-' ("invoice.paid").
func CheckEventTypeName(field, name string) error {
	if name == "" {
		return fieldErr(field, "is empty")
	}
	if len(name) > MaxEventTypeBytes {
		return fieldErr(field, "is %d bytes; at most %d", len(name), MaxEventTypeBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fieldErr(field, "%q holds %q; only letters, digits, '.', '_' and '-'", clip(name), string(rune(c)))
		}
	}
	return nil
}

// CheckEventType checks what a store keeps of t.
func CheckEventType(t EventType) error {
	if err := CheckEventTypeName("name", t.Name); err != nil {
		return err
	}
	return checkText("description", t.Description, MaxDescriptionBytes, true)
}

// CheckURL checks an endpoint's URL as the HTTP channel will take it:
// http or https, a host, no credentials, no fragment. Whether its
// address may be dialled is decided at each send (the SSRF guard).
func CheckURL(field, raw string) error {
	if raw == "" {
		return fieldErr(field, "is empty")
	}
	if len(raw) > MaxURLBytes {
		return fieldErr(field, "is %d bytes; at most %d", len(raw), MaxURLBytes)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || !utf8.ValidString(raw):
		return fieldErr(field, "is not a URL") // url's error repeats the URL, which may hold a token
	case u.Scheme != "http" && u.Scheme != "https":
		return fieldErr(field, "has scheme %q; only http and https", clip(u.Scheme))
	case u.Host == "" || u.Hostname() == "":
		return fieldErr(field, "has no host")
	case u.User != nil:
		return fieldErr(field, "holds credentials; they would leak into logs and proxies")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fieldErr(field, "has a fragment, which is never sent")
	}
	return nil
}

// CheckEndpoint checks what a store keeps of e, but whether its event
// types exist, which only the store knows.
func CheckEndpoint(e Endpoint) error {
	if err := CheckID("id", EndpointKind, e.ID); err != nil {
		return err
	}
	if err := CheckID("app_id", AppKind, e.AppID); err != nil {
		return err
	}
	if err := CheckURL("url", e.URL); err != nil {
		return err
	}
	if err := checkText("description", e.Description, MaxDescriptionBytes, true); err != nil {
		return err
	}
	if len(e.EventTypes) > MaxFilterTypes {
		return fieldErr("event_types", "has %d types; at most %d", len(e.EventTypes), MaxFilterTypes)
	}
	for i, t := range e.EventTypes {
		field := "event_types[" + strconv.Itoa(i) + "]"
		if err := CheckEventTypeName(field, t); err != nil {
			return err
		}
		if j := slices.Index(e.EventTypes[:i], t); j >= 0 {
			return fieldErr(field, "repeats event_types[%d], %q", j, t)
		}
	}
	if err := CheckSecrets("secrets", e.Secrets); err != nil {
		return err
	}
	if err := checkOldSecrets(e); err != nil {
		return err
	}
	if err := CheckHeaders(e.Headers); err != nil {
		return err
	}
	if t := e.AttemptTimeout; t != 0 && (t < MinAttemptTimeout || t > MaxAttemptTimeout || t%time.Millisecond != 0) {
		return fieldErr("attempt_timeout", "is %s; must be within %s..%s in whole milliseconds (0 for the default, %s)",
			t, MinAttemptTimeout, MaxAttemptTimeout, DefaultAttemptTimeout)
	}
	if e.Ordering != Strict && e.Ordering != Independent {
		return fieldErr("ordering", "is %q; must be %q or %q", clip(string(e.Ordering)), Strict, Independent)
	}
	if e.RateLimit < 0 || e.RateLimit > MaxRateLimit {
		return fieldErr("rate_limit", "is %d; must be within 0..%d attempts per second (0 sets no limit)", e.RateLimit, MaxRateLimit)
	}
	switch {
	case e.MaxInFlight < 0 || e.MaxInFlight > MaxMaxInFlight:
		return fieldErr("max_in_flight", "is %d; must be within 0..%d (0 is the ordering's default)", e.MaxInFlight, MaxMaxInFlight)
	case e.Ordering == Strict && e.MaxInFlight > 1:
		return fieldErr("max_in_flight", "is %d; strict ordering sends one attempt at a time (use 1, or 0)", e.MaxInFlight)
	}
	return checkRetryPolicy(e)
}

// The bounds of an endpoint's attempt timeout and its default, of its
// rate limit (attempts per second) and of its attempts in flight, and
// the default of the latter in independent order.
const (
	MinAttemptTimeout     = time.Second
	MaxAttemptTimeout     = 300 * time.Second
	DefaultAttemptTimeout = 30 * time.Second

	MaxRateLimit       = 10_000
	MaxMaxInFlight     = 64
	DefaultMaxInFlight = 8
)

// CheckSecrets checks an endpoint's signing secrets: 1 to
// webhook.MaxSigners "whsec_" secrets. The error never repeats a secret.
func CheckSecrets(field string, secrets []string) error {
	if len(secrets) == 0 {
		return fieldErr(field, "is empty; give at least one \"whsec_...\" secret")
	}
	if len(secrets) > webhook.MaxSigners {
		return fieldErr(field, "has %d secrets; at most %d", len(secrets), webhook.MaxSigners)
	}
	for i, s := range secrets {
		if _, err := webhook.ParseSecret(s); err != nil {
			return fieldErr(field+"["+strconv.Itoa(i)+"]", "is not a whsec_ secret")
		}
	}
	return nil
}

// CheckMessage checks what a store keeps of m, but its fan-out.
func CheckMessage(m Message) error {
	if err := CheckID("id", MessageKind, m.ID); err != nil {
		return err
	}
	if err := CheckID("app_id", AppKind, m.AppID); err != nil {
		return err
	}
	if err := CheckEventTypeName("event_type", m.EventType); err != nil {
		return err
	}
	if m.IdempotencyKey != "" {
		if err := webhook.CheckID(m.IdempotencyKey); err != nil || len(m.IdempotencyKey) > MaxKeyBytes {
			return fieldErr("idempotency_key", "must be 1 to %d bytes of printable ASCII without spaces", MaxKeyBytes)
		}
	}
	if len(m.Payload) == 0 {
		return fieldErr("payload", "is empty")
	}
	return nil
}

// CheckPage checks a list's page: after is "" or an ID of kind (an
// event type's name when kind is ""), limit within [1, MaxLimit].
func CheckPage(kind, after string, limit int) error {
	if limit < 1 || limit > MaxLimit {
		return fieldErr("limit", "is %d; must be within [1, %d]", limit, MaxLimit)
	}
	switch {
	case after == "":
		return nil
	case kind == "":
		return CheckEventTypeName("after", after)
	}
	return CheckID("after", kind, after)
}

// CheckMessageFilter checks a ListMessages filter and its page: the
// event type, if any, a name CheckEventTypeName accepts, the endpoint,
// if any, an endpoint ID.
func CheckMessageFilter(f MessageFilter, after string, limit int) error {
	if f.EventType != "" {
		if err := CheckEventTypeName("event_type", f.EventType); err != nil {
			return err
		}
	}
	if f.EndpointID != "" {
		if err := CheckID("endpoint_id", EndpointKind, f.EndpointID); err != nil {
			return err
		}
	}
	return CheckPage(MessageKind, after, limit)
}

// IsID reports whether id is an ID of kind. A store answers ErrNotFound
// for an ID that is not, without asking its backend: no such record can
// exist.
func IsID(kind, id string) bool { return CheckID("id", kind, id) == nil }

// CheckFanoutMove checks SetFanout's target state and cleans its detail
// as the delivery store cleans an outcome's (store.CleanDetail).
func CheckFanoutMove(state FanoutState, detail string) (string, error) {
	if state != Enqueued && state != Refused {
		return "", fieldErr("state", "is %v; a fan-out entry moves only to enqueued or refused", state)
	}
	if state == Enqueued {
		detail = ""
	}
	return store.CleanDetail(detail), nil
}

package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Application is a tenant: the owner of endpoints and the target of
// messages.
type Application struct {
	ID        string
	Name      string
	CreatedAt time.Time // by the store's clock
	UpdatedAt time.Time
}

// Ordering is how an endpoint's deliveries go out: "strict" (one at a
// time, in publish order) or "independent" (several at once).
type Ordering string

const (
	Strict      Ordering = "strict"
	Independent Ordering = "independent"
)

// Endpoint is one URL of an application, with the secrets that sign what
// is sent to it.
type Endpoint struct {
	ID          string
	AppID       string
	URL         string
	Description string
	// EventTypes filters the messages the endpoint receives: only those
	// of these types. Empty: every type.
	EventTypes []string
	// Secrets sign every request ("whsec_..."); several during a
	// rotation, each request then carrying one signature per secret.
	Secrets []string
	// OldSecrets are secrets rotated away from (Rotate), each signing
	// beside Secrets until it expires (SigningSecrets); nil if none.
	OldSecrets []OldSecret
	// Headers are set on every request to the endpoint (CheckHeaders
	// bounds them and refuses the names courier or the transport set);
	// nil if none.
	Headers map[string]string
	// Enabled: a disabled endpoint is left out of every fan-out, and its
	// stream is paused (deliveries queued before wait).
	Enabled  bool
	Ordering Ordering
	// RateLimit is the most attempts per second the endpoint's stream
	// starts, 1 to MaxRateLimit (a burst of RateLimit may go at once:
	// machine.Config.RateLimit per RatePer of one second); 0 sets no
	// limit. MaxInFlight is the most attempts in flight at once
	// (machine.Config.Window): 1 in strict order, 1 to MaxMaxInFlight in
	// independent order; 0 is the default, 1 in strict order and
	// DefaultMaxInFlight in independent. A change of either (or of
	// AttemptTimeout, or the ordering) takes effect when the stream's
	// machine is next built: the worker that owns the stream sees the
	// changed policy at its next lease renewal and gives the stream back,
	// and the next claim builds it anew.
	RateLimit   int
	MaxInFlight int
	// MaxAttempts, BaseBackoff and MaxBackoff are the retry policy of the
	// endpoint's stream (machine.Config's fields of those names; 0 keeps
	// machine.DefaultConfig's: 8 attempts, backoff from 1s doubling to
	// 5m). RejectStatuses are the HTTP statuses that make a delivery a
	// dead letter at once (httpchannel.StatusPolicy.RejectOn); every other
	// non-2xx is retried. Nil means the default, 410 only; empty rejects
	// none. See EndpointPolicy and StatusPolicy. A change takes effect as a
	// change of RateLimit does; RejectStatuses at the next attempt.
	MaxAttempts    int
	BaseBackoff    time.Duration
	MaxBackoff     time.Duration
	RejectStatuses []int
	// AttemptTimeout bounds one attempt to the endpoint, from dial to the
	// last byte of the answer: MinAttemptTimeout to MaxAttemptTimeout, or
	// 0 for DefaultAttemptTimeout. It is the stream's
	// machine.Config.AttemptTimeout too.
	AttemptTimeout time.Duration

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Wants reports whether the endpoint receives a message of eventType
// (enabled, and its filter empty or naming the type).
func (e Endpoint) Wants(eventType string) bool {
	return e.Enabled && e.Subscribes(eventType)
}

// EventType is a kind of message an endpoint may filter on.
type EventType struct {
	Name        string
	Description string
	CreatedAt   time.Time
}

// FanoutState is where one of a message's deliveries is in the fan-out.
type FanoutState uint8

const (
	// Pending: recorded, not yet known to be in the delivery store.
	Pending FanoutState = iota + 1
	// Enqueued: in the delivery store; from there the worker delivers it.
	Enqueued
	// Refused: the delivery store or the channel refused it for good (a
	// payload it can never carry); Detail says why. Never re-driven.
	Refused
)

func (s FanoutState) String() string {
	switch s {
	case Pending:
		return "pending"
	case Enqueued:
		return "enqueued"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("FanoutState(%d)", uint8(s))
}

// Fanout is one delivery of a message: to one endpoint, as one event of
// the delivery store.
type Fanout struct {
	EndpointID string
	DeliveryID string // DeliveryID(message, endpoint): the event's ID, and so the webhook-id
	Stream     string // StreamOf(endpoint)
	State      FanoutState
	Detail     string // why, when Refused
}

// Message is one event published to an application, with its fan-out.
type Message struct {
	ID        string
	AppID     string
	EventType string
	// IdempotencyKey, if not empty, names the message within its
	// application: publishing the key again returns this message.
	IdempotencyKey string
	Payload        []byte
	CreatedAt      time.Time
	// Fanout is one entry per endpoint chosen when the message was
	// created, in endpoint ID order.
	Fanout []Fanout
}

// Complete reports whether no delivery of m is pending.
func (m Message) Complete() bool {
	for _, f := range m.Fanout {
		if f.State == Pending {
			return false
		}
	}
	return true
}

// MessageFilter narrows ListMessages; a zero field lets every message
// through.
type MessageFilter struct {
	EventType string // only messages of this type
	// EndpointID: only messages with a delivery to this endpoint (an
	// entry in their fan-out).
	EndpointID string
	// CreatedBefore and CreatedAfter bound CreatedAt, each excluding the
	// instant itself.
	CreatedBefore, CreatedAfter time.Time
}

// Pass reports whether m passes f.
func (f MessageFilter) Pass(m Message) bool {
	return (f.EventType == "" || m.EventType == f.EventType) &&
		(f.EndpointID == "" || slices.ContainsFunc(m.Fanout, func(x Fanout) bool { return x.EndpointID == f.EndpointID })) &&
		(f.CreatedBefore.IsZero() || m.CreatedAt.Before(f.CreatedBefore)) &&
		(f.CreatedAfter.IsZero() || m.CreatedAt.After(f.CreatedAfter))
}

// Store keeps applications, endpoints, event types and messages. Every
// method is safe for concurrent use. A method that returns nil made its
// whole change durable; one that returns an error changed nothing, but
// for ErrUnknown (a networked store lost the commit's reply). A context
// already done returns ctx.Err() and changes nothing.
//
// Times are the store's, kept to the microsecond. IDs are given by the
// caller (NewID) and checked (CheckID); the store sets CreatedAt and
// UpdatedAt. Lists are in ID order, after the given ID ("" for the
// first page), at most limit (1 to MaxLimit) long. Every input is checked
// as the Check functions of this package do, and a bad one fails with a
// *FieldError wrapping ErrBadArgument that names the field.
type Store interface {
	// CreateApp stores a new application. An ID taken fails with
	// ErrConflict.
	CreateApp(ctx context.Context, a Application) (Application, error)
	GetApp(ctx context.Context, id string) (Application, error)
	ListApps(ctx context.Context, after string, limit int) ([]Application, error)
	// UpdateApp replaces the application's name; UpdatedAt becomes now.
	UpdateApp(ctx context.Context, a Application) (Application, error)
	// DeleteApp deletes the application with its endpoints, its tokens,
	// its messages and their attempts and health. Deliveries already in the delivery store stay there; sent
	// to a deleted endpoint they are refused (dead letters).
	DeleteApp(ctx context.Context, id string) error

	// CreateEndpoint stores a new endpoint of e.AppID (ErrNotFound if
	// there is no such application). Every name in e.EventTypes must be
	// an event type the store knows. An ID taken fails with ErrConflict.
	CreateEndpoint(ctx context.Context, e Endpoint) (Endpoint, error)
	// GetEndpoint finds an endpoint by its ID alone (what a stream names).
	GetEndpoint(ctx context.Context, id string) (Endpoint, error)
	ListEndpoints(ctx context.Context, app, after string, limit int) ([]Endpoint, error)
	// UpdateEndpoint replaces every field of the endpoint e.ID of
	// application e.AppID but its ID, application and CreatedAt;
	// UpdatedAt becomes now. ErrNotFound if the application has no such
	// endpoint. Moving Enabled from false to true clears the endpoint's
	// failing streak and disabling (EndpointHealth.Reenabled).
	UpdateEndpoint(ctx context.Context, e Endpoint) (Endpoint, error)
	// DeleteEndpoint deletes the endpoint id of application app
	// (ErrNotFound if it has none), its health and its attempts. Fan-out
	// entries already recorded stay.
	DeleteEndpoint(ctx context.Context, app, id string) error

	// CreateEventType stores a new event type; a name taken fails with
	// ErrConflict.
	CreateEventType(ctx context.Context, t EventType) (EventType, error)
	// ListEventTypes lists event types in name order after the name after.
	ListEventTypes(ctx context.Context, after string, limit int) ([]EventType, error)

	// CreateMessage records m and its fan-out in one transaction: one
	// Pending entry for each endpoint of m.AppID that Wants m.EventType
	// at that instant, in endpoint ID order. If m.IdempotencyKey is not
	// empty and names a message of the application already, that message
	// is returned as it is, with created false, and nothing changes (even
	// if m differs: the caller compares). ErrNotFound if the application
	// does not exist; ErrConflict if m.ID is taken.
	CreateMessage(ctx context.Context, m Message) (msg Message, created bool, err error)
	// GetMessage returns the message id of application app, with its
	// fan-out as it stands.
	GetMessage(ctx context.Context, app, id string) (Message, error)
	// ListMessages lists the messages of application app that pass f,
	// newest first (ID order, descending), after the message ID after in
	// that order ("" for the first page), each with its fan-out as it
	// stands. ErrNotFound if there is no such application.
	ListMessages(ctx context.Context, app string, f MessageFilter, after string, limit int) ([]Message, error)
	// SetFanout moves the entry of message msg for endpoint from Pending
	// to state (Enqueued, or Refused with a detail). Setting an entry to
	// the state it has changes nothing; any other move fails with
	// ErrInvalidMove. ErrNotFound if there is no such entry.
	SetFanout(ctx context.Context, msg, endpoint string, state FanoutState, detail string) error
	// Unfinished lists, in ID order after the ID after, messages with a
	// Pending entry: what a re-drive must finish.
	Unfinished(ctx context.Context, after string, limit int) ([]Message, error)
	// AddMissing adds, in one transaction, a Pending fan-out entry for
	// endpoint ep to each of up to limit messages of application app
	// created at or after since (CreatedAt, to the microsecond) whose
	// event type ep subscribes to (Endpoint.Subscribes, enabled or not)
	// and that have no entry for ep, oldest first (ID order); and returns
	// those messages, each with its whole fan-out after. A message with an
	// entry for ep already, in any state, is left alone, so calling again
	// until fewer than limit come back adds each missing entry once.
	// ErrNotFound if app has no endpoint ep; since zero or limit out of
	// 1..MaxLimit fail as CheckMissing says.
	AddMissing(ctx context.Context, app, ep string, since time.Time, limit int) ([]Message, error)

	// RecordAttempt adds a (checked by CheckAttempt, kept as CleanAttempt
	// makes it) to the attempt log and notes it in its endpoint's health
	// (EndpointHealth.Note), in one transaction, and returns the health
	// after. ErrNotFound if application a.AppID has no endpoint
	// a.EndpointID (it was deleted: the attempt is not kept); ErrConflict
	// if a.ID is taken. The message is not checked: a message outlives
	// nothing but its application.
	RecordAttempt(ctx context.Context, a Attempt) (EndpointHealth, error)
	// ListMessageAttempts lists the attempts of message msg of
	// application app, newest first (ID order, descending), after the
	// attempt ID after in that order ("" for the first page).
	// ErrNotFound if the application has no such message.
	ListMessageAttempts(ctx context.Context, app, msg, after string, limit int) ([]Attempt, error)
	// ListEndpointAttempts is ListMessageAttempts for the attempts to
	// endpoint ep of application app.
	ListEndpointAttempts(ctx context.Context, app, ep, after string, limit int) ([]Attempt, error)
	// DeleteAttemptsBefore deletes up to limit attempts whose At is before
	// t, oldest first, and returns how many it deleted: the retention's
	// pruning, a page at a time.
	DeleteAttemptsBefore(ctx context.Context, t time.Time, limit int) (int, error)
	// GetHealth returns the health of endpoint ep of application app: the
	// zero EndpointHealth (with its IDs) if no attempt was recorded.
	// ErrNotFound if the application has no such endpoint.
	GetHealth(ctx context.Context, app, ep string) (EndpointHealth, error)
	// DisableEndpoint disables endpoint ep of application app because of
	// its health (reason DisabledGone or DisabledFailing): Enabled
	// becomes false, UpdatedAt and the health's DisabledAt now, its
	// DisabledReason reason. An endpoint disabled already is left as it
	// is, and changed is false: only one caller disables it. Enabling it
	// again (UpdateEndpoint with Enabled true) clears the failing streak
	// and the reason (EndpointHealth.Reenabled).
	DisableEndpoint(ctx context.Context, app, ep, reason string) (e Endpoint, changed bool, err error)

	// ReplayJobStore keeps the bulk replay jobs (jobs.go).
	ReplayJobStore
	// TokenStore: application tokens. DeleteApp deletes its
	// application's tokens too.
	TokenStore
}

// MaxLimit is the longest page a list returns.
const MaxLimit = 1000

// Errors a Store returns, wrapped with detail; test with errors.Is.
var (
	// ErrNotFound: no such application, endpoint, message or entry.
	ErrNotFound = errors.New("platform: not found")
	// ErrConflict: the ID or name is taken, or an idempotency key was
	// used with another message.
	ErrConflict = errors.New("platform: conflict")
	// ErrBadArgument: an input the contract refuses; the error is a
	// *FieldError naming the field.
	ErrBadArgument = errors.New("platform: bad argument")
	// ErrInvalidMove: a fan-out entry cannot move to that state.
	ErrInvalidMove = errors.New("platform: invalid fan-out move")
	// ErrUnavailable: the backend could not take the call; nothing
	// changed; try again.
	ErrUnavailable = errors.New("platform: unavailable")
	// ErrUnknown: the commit's reply was lost; the change may or may not
	// have been made. Re-read before acting.
	ErrUnknown = errors.New("platform: outcome unknown")
)

// FieldError is an ErrBadArgument that names the input field at fault,
// as the API spells it (url, event_types[2], name).
type FieldError struct {
	Field string
	Why   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Why }

// Unwrap makes a FieldError an ErrBadArgument.
func (e *FieldError) Unwrap() error { return ErrBadArgument }

// fieldErr builds a *FieldError.
func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Why: fmt.Sprintf(format, args...)}
}

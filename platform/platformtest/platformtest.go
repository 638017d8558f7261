package platformtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
)

// Factory returns a new, empty store whose clock is now.
type Factory func(t *testing.T, now func() time.Time) platform.Store

// Run runs every check against stores built by newStore, each a subtest.
func Run(t *testing.T, newStore Factory) {
	t.Helper()
	for _, c := range slices.Concat(checks, laterChecks) {
		t.Run(c.name, func(t *testing.T) {
			e := &env{t: t, ctx: t.Context(), at: time.Date(2031, 2, 3, 4, 5, 6, 7000, time.UTC)}
			e.s = newStore(t, func() time.Time { return e.at })
			c.run(e)
		})
	}
}

var checks = []struct {
	name string
	run  func(e *env)
}{
	{"apps-crud", appsCRUD},
	{"apps-conflict", appsConflict},
	{"apps-bad-arguments", appsBadArguments},
	{"apps-pages", appsPages},
	{"endpoints-crud", endpointsCRUD},
	{"endpoints-bad-arguments", endpointsBadArguments},
	{"endpoints-are-copies", endpointsAreCopies},
	{"event-types", eventTypes},
	{"message-fanout", messageFanout},
	{"message-idempotent", messageIdempotent},
	{"message-fanout-fixed", messageFanoutFixed},
	{"message-bad-arguments", messageBadArguments},
	{"set-fanout", setFanout},
	{"unfinished", unfinished},
	{"list-messages", listMessages},
	{"delete-app-cascades", deleteAppCascades},
	{"cancelled-context", cancelledContext},
	{"malformed-ids-not-found", malformedIDsNotFound},
	{"attempts-log", attemptsLog},
	{"attempts-bad-arguments", attemptsBadArguments},
	{"attempts-retention", attemptsRetention},
	{"endpoint-health", endpointHealth},
	{"disable-endpoint", disableEndpoint},
	{"jobs-lifecycle", jobsLifecycle},
	{"jobs-cancel", jobsCancel},
	{"jobs-bad-arguments", jobsBadArguments},
	{"jobs-deleted", jobsDeleted},
	{"jobs-claimed-once", jobsClaimedOnce},
	{"endpoint-old-secrets", endpointOldSecrets},
	{"endpoint-headers", endpointHeaders},
	{"endpoint-attempt-timeout", endpointAttemptTimeout},
	{"tokens-crud", tokensCRUD},
	{"tokens-bad-arguments", tokensBadArguments},
}

// laterChecks are checks kept apart from checks, so that branches that
// add checks side by side merge cleanly.
var laterChecks = []struct {
	name string
	run  func(e *env)
}{
	{"add-missing", addMissing},
	{"add-missing-bad-arguments", addMissingBadArguments},
	{"endpoint-retry-policy", endpointRetryPolicy},
	{"endpoint-retry-policy-bad-arguments", endpointRetryPolicyBadArguments},
}

// env is one check's store and clock.
type env struct {
	t   *testing.T
	ctx context.Context
	s   platform.Store
	at  time.Time
}

// tick moves the clock on by d.
func (e *env) tick(d time.Duration) { e.at = e.at.Add(d) }

// now is the clock as a store keeps it.
func (e *env) now() time.Time { return e.at.Truncate(time.Microsecond) }

// id returns a fresh ID of kind, later than every earlier one: the clock
// moves a millisecond first.
func (e *env) id(kind string) string {
	e.tick(time.Millisecond)
	return platform.NewID(kind, e.at)
}

func (e *env) app(name string) platform.Application {
	e.t.Helper()
	a, err := e.s.CreateApp(e.ctx, platform.Application{ID: e.id(platform.AppKind), Name: name})
	if err != nil {
		e.t.Fatalf("CreateApp: %v", err)
	}
	return a
}

var secret = webhook.NewSecret()

// endpoint builds (does not store) an endpoint of app.
func (e *env) endpoint(app string, types ...string) platform.Endpoint {
	return platform.Endpoint{ID: e.id(platform.EndpointKind), AppID: app, URL: "https://example.com/hook",
		Description: "a hook", EventTypes: types, Secrets: []string{secret}, Enabled: true, Ordering: platform.Strict}
}

func (e *env) create(ep platform.Endpoint) platform.Endpoint {
	e.t.Helper()
	out, err := e.s.CreateEndpoint(e.ctx, ep)
	if err != nil {
		e.t.Fatalf("CreateEndpoint: %v", err)
	}
	return out
}

// wantEndpoints checks that ListEndpoints of app lists want, and only it.
func (e *env) wantEndpoints(what, app string, want ...platform.Endpoint) {
	e.t.Helper()
	list, err := e.s.ListEndpoints(e.ctx, app, "", 10)
	if err != nil {
		e.t.Fatal(err)
	}
	diff(e.t, what, want, list)
}

func (e *env) eventType(name string) {
	e.t.Helper()
	if _, err := e.s.CreateEventType(e.ctx, platform.EventType{Name: name, Description: "about " + name}); err != nil {
		e.t.Fatalf("CreateEventType(%s): %v", name, err)
	}
}

func (e *env) message(app, typ, key string, payload []byte) (platform.Message, bool) {
	e.t.Helper()
	m, created, err := e.s.CreateMessage(e.ctx, platform.Message{ID: e.id(platform.MessageKind), AppID: app,
		EventType: typ, IdempotencyKey: key, Payload: payload})
	if err != nil {
		e.t.Fatalf("CreateMessage: %v", err)
	}
	return m, created
}

// wantErr fails unless err is target.
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Errorf("%s: err = %v; want %v", what, err, target)
	}
}

// wantField fails unless err is a *platform.FieldError naming field.
func (e *env) wantField(what string, err error, field string) {
	e.t.Helper()
	var fe *platform.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, platform.ErrBadArgument) || fe.Field != field {
		e.t.Errorf("%s: err = %v; want a FieldError naming %q", what, err, field)
	}
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

func ids[T any](list []T, id func(T) string) []string {
	out := []string{}
	for _, v := range list {
		out = append(out, id(v))
	}
	return out
}

func appID(a platform.Application) string { return a.ID }
func msgID(m platform.Message) string     { return m.ID }

// sorted returns a sorted copy.
func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// cleaned is a detail as a store keeps it.
func cleaned(d string) string {
	out, _ := platform.CheckFanoutMove(platform.Refused, d)
	return out
}

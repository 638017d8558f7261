package main

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
)

// endpointView is what the API shows of an endpoint: never its secrets,
// but in the answer to its creation and at .../secrets.
type endpointView struct {
	ID          string   `json:"id"`
	AppID       string   `json:"app_id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"event_types"`
	Enabled     bool     `json:"enabled"`
	Ordering    string   `json:"ordering"`
	RateLimit   int      `json:"rate_limit"`
	MaxInFlight int      `json:"max_in_flight"`
	retryView
	Stream    string    `json:"stream"`
	Secrets   []string  `json:"secrets,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`

	// Custom headers and the attempt timeout (seconds).
	Headers        map[string]string `json:"headers"`
	AttemptTimeout int               `json:"attempt_timeout"`
}

func viewEndpoint(e platform.Endpoint) endpointView {
	v := endpointView{ID: e.ID, AppID: e.AppID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes,
		Enabled: e.Enabled, Ordering: string(e.Ordering), RateLimit: e.RateLimit, MaxInFlight: inFlight(e), retryView: viewRetry(e),
		Stream: platform.StreamOf(e.ID), CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	v.Headers, v.AttemptTimeout = headersOf(e), int(attemptTimeout(e)/time.Second)
	return v
}

// endpointIn is a create's body and an update's: in an update an absent
// field keeps its value; in a create it takes its default (no
// description, every event type, one new secret, enabled, strict, no
// rate limit, the ordering's attempts in flight, no custom headers, an
// attempt timeout of 30 s).
type endpointIn struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"event_types"`
	Secrets     *[]string `json:"secrets"`
	Enabled     *bool     `json:"enabled"`
	Ordering    *string   `json:"ordering"`
	RateLimit   *int      `json:"rate_limit"`
	MaxInFlight *int      `json:"max_in_flight"`
	retryIn

	Headers        *map[string]string `json:"headers"`
	AttemptTimeout *int               `json:"attempt_timeout"` // seconds; 0 for the default
}

// check refuses what apply cannot carry to the store unchanged: an
// attempt_timeout so large that it would overflow a time.Duration. It
// writes the error answer itself.
func (in endpointIn) check(w http.ResponseWriter) bool {
	if t := in.AttemptTimeout; t != nil && (*t < 0 || *t > int(platform.MaxAttemptTimeout/time.Second)) {
		writeField(w, "attempt_timeout", "is %d; must be within %d..%d seconds (0 for the default, %d)", *t,
			int(platform.MinAttemptTimeout/time.Second), int(platform.MaxAttemptTimeout/time.Second), int(platform.DefaultAttemptTimeout/time.Second))
		return false
	}
	return true
}

// apply sets the fields in gives on e.
func (in endpointIn) apply(e *platform.Endpoint) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&e.URL, in.URL)
	set(&e.Description, in.Description)
	if in.EventTypes != nil {
		e.EventTypes = *in.EventTypes
	}
	if in.Secrets != nil {
		e.Secrets = *in.Secrets
	}
	if in.Enabled != nil {
		e.Enabled = *in.Enabled
	}
	if in.Ordering != nil {
		e.Ordering = platform.Ordering(*in.Ordering)
	}
	if in.RateLimit != nil {
		e.RateLimit = *in.RateLimit
	}
	if in.Headers != nil {
		e.Headers = *in.Headers // replaced whole: {} removes every one
	}
	if in.AttemptTimeout != nil {
		e.AttemptTimeout = time.Duration(*in.AttemptTimeout) * time.Second
	}
	if in.MaxInFlight != nil {
		e.MaxInFlight = *in.MaxInFlight
	} else if in.Ordering != nil && e.Ordering == platform.Strict {
		e.MaxInFlight = 0 // back to strict: its one in flight
	}
}

func (a *api) createEndpoint(w http.ResponseWriter, r *http.Request) {
	var in endpointIn
	if !a.decode(w, r, &in) || !in.check(w) {
		return
	}
	if in.URL == nil {
		writeField(w, "url", "is missing")
		return
	}
	e := platform.Endpoint{ID: platform.NewID(platform.EndpointKind, time.Now()), AppID: r.PathValue("app"),
		EventTypes: []string{}, Secrets: []string{webhook.NewSecret()}, Enabled: true, Ordering: platform.Strict}
	in.apply(&e)
	if !in.applyRetry(w, &e) {
		return
	}
	if !platform.IsID(platform.AppKind, e.AppID) {
		writeErr(w, http.StatusNotFound, "no application %q", e.AppID)
		return
	}
	e, err := a.plat.Store().CreateEndpoint(r.Context(), e)
	if err != nil {
		writePlatErr(w, "creating the endpoint", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "endpoint created", slog.String("app", e.AppID), slog.String("endpoint", e.ID))
	v := viewEndpoint(e)
	v.Secrets = e.Secrets
	writeJSON(w, http.StatusCreated, v)
}

func (a *api) listEndpoints(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	eps, err := a.plat.Store().ListEndpoints(r.Context(), r.PathValue("app"), after, limit)
	if err != nil {
		writePlatErr(w, "listing endpoints", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(eps, limit, viewEndpoint, func(e platform.Endpoint) string { return e.ID }))
}

// endpointOf reads the endpoint of the path, of the path's application
// only. It writes the error answer itself.
func (a *api) endpointOf(w http.ResponseWriter, r *http.Request) (platform.Endpoint, bool) {
	app, id := r.PathValue("app"), r.PathValue("endpoint")
	e, err := a.plat.Store().GetEndpoint(r.Context(), id)
	if err == nil && e.AppID != app {
		err = errors.Join(platform.ErrNotFound, errors.New("application "+app+" has no endpoint "+id))
	}
	if err != nil {
		writePlatErr(w, "reading the endpoint", err)
		return platform.Endpoint{}, false
	}
	return e, true
}

func (a *api) getEndpoint(w http.ResponseWriter, r *http.Request) {
	if e, ok := a.endpointOf(w, r); ok {
		writeJSON(w, http.StatusOK, viewEndpoint(e))
	}
}

func (a *api) endpointSecrets(w http.ResponseWriter, r *http.Request) {
	if e, ok := a.endpointOf(w, r); ok {
		writeJSON(w, http.StatusOK, viewSecrets(e))
	}
}

// updateEndpoint changes the fields the body gives. New secrets take
// effect at the next attempt (the channel is rebuilt when UpdatedAt
// moves); disabling pauses the endpoint's stream.
func (a *api) updateEndpoint(w http.ResponseWriter, r *http.Request) {
	var in endpointIn
	if !a.decode(w, r, &in) || !in.check(w) {
		return
	}
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	in.apply(&e)
	if !in.applyRetry(w, &e) {
		return
	}
	e, err := a.plat.Store().UpdateEndpoint(r.Context(), platform.Pruned(e, time.Now()))
	if err != nil {
		writePlatErr(w, "updating the endpoint", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "endpoint updated", slog.String("app", e.AppID), slog.String("endpoint", e.ID))
	writeJSON(w, http.StatusOK, viewEndpoint(e))
}

func (a *api) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	app, id := r.PathValue("app"), r.PathValue("endpoint")
	if err := a.plat.Store().DeleteEndpoint(r.Context(), app, id); err != nil {
		writePlatErr(w, "deleting the endpoint", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "endpoint deleted", slog.String("app", app), slog.String("endpoint", id))
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

type eventTypeView struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

func viewEventType(t platform.EventType) eventTypeView {
	return eventTypeView{Name: t.Name, Description: t.Description, CreatedAt: t.CreatedAt}
}

func (a *api) createEventType(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name        *string `json:"name"`
		Description string  `json:"description"`
	}
	if !a.decode(w, r, &in) {
		return
	}
	if in.Name == nil {
		writeField(w, "name", "is missing")
		return
	}
	t, err := a.plat.Store().CreateEventType(r.Context(), platform.EventType{Name: *in.Name, Description: in.Description})
	if err != nil {
		writePlatErr(w, "creating the event type", err)
		return
	}
	writeJSON(w, http.StatusCreated, viewEventType(t))
}

func (a *api) listEventTypes(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	ts, err := a.plat.Store().ListEventTypes(r.Context(), after, limit)
	if err != nil {
		writePlatErr(w, "listing event types", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(ts, limit, viewEventType, func(t platform.EventType) string { return t.Name }))
}

// attemptTimeout is e's attempt timeout as its stream's policy has it
// (platform.EndpointPolicy): 0 is the default.
func attemptTimeout(e platform.Endpoint) time.Duration {
	return platform.EndpointPolicy(machine.DefaultConfig(), e).AttemptTimeout
}

// headersOf is e's custom headers as the API shows them: {} if none.
func headersOf(e platform.Endpoint) map[string]string {
	if e.Headers == nil {
		return map[string]string{}
	}
	return e.Headers
}

// inFlight is the most attempts in flight of e's stream, as its policy
// has it (platform.StreamPolicy): a MaxInFlight of 0 shows the ordering's.
func inFlight(e platform.Endpoint) int {
	return platform.EndpointPolicy(machine.DefaultConfig(), e).Window
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/platform"
)

// The platform's API: applications, their endpoints, event types, and
// messages fanned out to the endpoints (package platform). Shapes follow
// Svix's (application, endpoint with a filter of event types, message
// with an idempotency key), in this API's snake_case and with its
// errors. Every route needs the bearer token of the other /v1 routes,
// or an application token where appAccess lets one in.

// newPlatform is the fan-out service over ps, enqueueing each delivery
// through svc.Publish (so the owner of the endpoint's stream adopts it at
// once).
func newPlatform(ps platform.Store, svc *courier.Service, log *slog.Logger) (*platform.Service, error) {
	return platform.New(platform.Config{
		Store:           ps,
		MaxPayloadBytes: defaultEndpointPolicy().MaxPayloadBytes,
		Logger:          log,
		Enqueue: func(ctx context.Context, stream, id string, payload []byte) error {
			_, err := svc.Publish(ctx, stream, id, payload)
			if errors.Is(err, courier.ErrRefused) {
				return fmt.Errorf("%w: %w", platform.ErrRefused, err)
			}
			return err
		},
	})
}

func (a *api) platformRoutes() []route {
	return []route{
		{"POST", "/v1/apps", true, a.createApp},
		{"GET", "/v1/apps", true, a.listApps},
		{"GET", "/v1/apps/{app}", true, a.getApp},
		{"PATCH", "/v1/apps/{app}", true, a.updateApp},
		{"DELETE", "/v1/apps/{app}", true, a.deleteApp},
		{"POST", "/v1/apps/{app}/endpoints", true, a.createEndpoint},
		{"GET", "/v1/apps/{app}/endpoints", true, a.listEndpoints},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}", true, a.getEndpoint},
		{"PATCH", "/v1/apps/{app}/endpoints/{endpoint}", true, a.updateEndpoint},
		{"DELETE", "/v1/apps/{app}/endpoints/{endpoint}", true, a.deleteEndpoint},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}/secrets", true, a.endpointSecrets},
		{"POST", "/v1/event-types", true, a.createEventType},
		{"GET", "/v1/event-types", true, a.listEventTypes},
		{"POST", "/v1/apps/{app}/messages", true, a.createMessage},
		{"GET", "/v1/apps/{app}/messages", true, a.listMessages},
		{"GET", "/v1/apps/{app}/messages/{message}", true, a.getMessage},
		{"GET", "/v1/apps/{app}/messages/{message}/attempts", true, a.listMessageAttempts},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}/attempts", true, a.listEndpointAttempts},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}/health", true, a.endpointHealth},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}/deliveries", true, a.listDeliveries},
		{"POST", "/v1/apps/{app}/endpoints/{endpoint}/replay", true, a.startReplay},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}/replay/{job}", true, a.getReplay},
		{"POST", "/v1/apps/{app}/endpoints/{endpoint}/replay/{job}/cancel", true, a.cancelReplay},
		{"GET", "/v1/apps/{app}/endpoints/{endpoint}/replays", true, a.listReplays},
		{"POST", "/v1/apps/{app}/endpoints/{endpoint}/replay-missing", true, a.replayMissing},
	}
}

// writePlatErr answers a platform call's failure: a bad input names its
// field (400), then not found (404), conflict (409), and anything else
// may pass if tried again (503).
func writePlatErr(w http.ResponseWriter, doing string, err error) {
	var fe *platform.FieldError
	switch {
	case errors.As(err, &fe):
		writeJSON(w, http.StatusBadRequest, apiError{Error: fe.Error(), Field: fe.Field})
	case errors.Is(err, platform.ErrNotFound):
		writeErr(w, http.StatusNotFound, "%s: %v", doing, err)
	case errors.Is(err, platform.ErrConflict):
		writeErr(w, http.StatusConflict, "%s: %v", doing, err)
	case errors.Is(err, platform.ErrBadArgument):
		writeErr(w, http.StatusBadRequest, "%s: %v", doing, err)
	default:
		writeErr(w, http.StatusServiceUnavailable, "%s: %v; try again", doing, err)
	}
}

// writeField answers 400 naming field.
func writeField(w http.ResponseWriter, field, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, apiError{Error: field + ": " + fmt.Sprintf(format, args...), Field: field})
}

// page reads ?after=&limit= (default 100, at most platform.MaxLimit);
// after is checked by the store. It writes the error answer itself.
func page(w http.ResponseWriter, r *http.Request) (after string, limit int, ok bool) {
	limit = 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > platform.MaxLimit {
			writeField(w, "limit", "%q must be a number from 1 to %d", s, platform.MaxLimit)
			return "", 0, false
		}
		limit = n
	}
	return r.URL.Query().Get("after"), limit, true
}

// listPage is every list's answer; NextAfter is the after of the next
// page, set when this one is full.
type listPage[T any] struct {
	Data      []T    `json:"data"`
	NextAfter string `json:"next_after,omitempty"`
}

func newPage[T, V any](items []T, limit int, view func(T) V, key func(T) string) listPage[V] {
	p := listPage[V]{Data: make([]V, 0, len(items))}
	for _, it := range items {
		p.Data = append(p.Data, view(it))
	}
	if len(items) == limit {
		p.NextAfter = key(items[len(items)-1])
	}
	return p
}

type appView struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func viewApp(x platform.Application) appView {
	return appView{ID: x.ID, Name: x.Name, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
}

type appIn struct {
	Name *string `json:"name"`
}

func (a *api) createApp(w http.ResponseWriter, r *http.Request) {
	var in appIn
	if !a.decode(w, r, &in) {
		return
	}
	if in.Name == nil {
		writeField(w, "name", "is missing")
		return
	}
	app, err := a.plat.Store().CreateApp(r.Context(), platform.Application{ID: platform.NewID(platform.AppKind, time.Now()), Name: *in.Name})
	if err != nil {
		writePlatErr(w, "creating the application", err)
		return
	}
	writeJSON(w, http.StatusCreated, viewApp(app))
}

func (a *api) listApps(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	apps, err := a.plat.Store().ListApps(r.Context(), after, limit)
	if err != nil {
		writePlatErr(w, "listing applications", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(apps, limit, viewApp, func(x platform.Application) string { return x.ID }))
}

func (a *api) getApp(w http.ResponseWriter, r *http.Request) {
	app, err := a.plat.Store().GetApp(r.Context(), r.PathValue("app"))
	if err != nil {
		writePlatErr(w, "reading the application", err)
		return
	}
	writeJSON(w, http.StatusOK, viewApp(app))
}

// updateApp changes the fields the body gives; an absent field keeps
// its value.
func (a *api) updateApp(w http.ResponseWriter, r *http.Request) {
	var in appIn
	if !a.decode(w, r, &in) {
		return
	}
	st := a.plat.Store()
	app, err := st.GetApp(r.Context(), r.PathValue("app"))
	if err == nil && in.Name != nil {
		app.Name = *in.Name
		app, err = st.UpdateApp(r.Context(), app)
	}
	if err != nil {
		writePlatErr(w, "updating the application", err)
		return
	}
	writeJSON(w, http.StatusOK, viewApp(app))
}

func (a *api) deleteApp(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("app")
	if err := a.plat.Store().DeleteApp(r.Context(), id); err != nil {
		writePlatErr(w, "deleting the application", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "application deleted", slog.String("app", id))
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

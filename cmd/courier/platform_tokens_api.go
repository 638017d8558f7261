package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/courierlab/courier/platform"
)

// Application tokens: a bearer token ("ctk_...") that reaches one
// application's routes only. The admin tokens of the config reach every
// route; an application token reaches the routes appAccess names, and
// only under its own application: another application's path answers
// 404, exactly as an application that does not exist (so a token cannot
// learn which IDs exist), and a route appAccess does not name answers
// 403. The token is shown once, in the answer to its creation; the store
// keeps its SHA-256.

// access is what an application token may do on a route.
type access uint8

const (
	// adminOnly: only an admin token (the zero value: a route the table
	// does not name is admin-only).
	adminOnly access = iota
	// ownApp: a token of the application the path's {app} names.
	ownApp
	// anyApp: any application token (reads of what every application
	// shares, the event types).
	anyApp
)

// appAccess is the one table that decides what an application token
// reaches, by route ("METHOD path" as api.routes registers it). Managing
// applications and tokens, event types, and the streams of the config
// stay admin-only.
var appAccess = map[string]access{
	"GET /v1/apps/{app}":                                           ownApp,
	"POST /v1/apps/{app}/endpoints":                                ownApp,
	"GET /v1/apps/{app}/endpoints":                                 ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}":                      ownApp,
	"PATCH /v1/apps/{app}/endpoints/{endpoint}":                    ownApp,
	"DELETE /v1/apps/{app}/endpoints/{endpoint}":                   ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}/secrets":              ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}/attempts":             ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}/health":               ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}/deliveries":           ownApp,
	"POST /v1/apps/{app}/endpoints/{endpoint}/replay":              ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}/replay/{job}":         ownApp,
	"POST /v1/apps/{app}/endpoints/{endpoint}/replay/{job}/cancel": ownApp,
	"GET /v1/apps/{app}/endpoints/{endpoint}/replays":              ownApp,
	"POST /v1/apps/{app}/endpoints/{endpoint}/replay-missing":      ownApp,
	"POST /v1/apps/{app}/endpoints/{endpoint}/secret/rotate":       ownApp,
	"POST /v1/apps/{app}/messages":                                 ownApp,
	"GET /v1/apps/{app}/messages":                                  ownApp,
	"GET /v1/apps/{app}/messages/{message}":                        ownApp,
	"GET /v1/apps/{app}/messages/{message}/attempts":               ownApp,
	"GET /v1/event-types":                                          anyApp,
}

// allowApp decides an application token's request on route rt: it
// answers 403 or 404 itself and reports false, or reports true.
func allowApp(w http.ResponseWriter, r *http.Request, rt route, tok platform.AppToken) bool {
	switch appAccess[rt.method+" "+rt.path] {
	case anyApp:
		return true
	case ownApp:
		if app := r.PathValue("app"); app != tok.AppID {
			writeErr(w, http.StatusNotFound, "no application %q", app)
			return false
		}
		return true
	}
	writeErr(w, http.StatusForbidden, "%s %s needs an admin token; an application token reaches only its application's routes", rt.method, rt.path)
	return false
}

// appToken finds the application token tok: ok false if there is none
// (or no platform), err if the store did not answer.
func (a *api) appToken(ctx context.Context, tok string) (platform.AppToken, bool, error) {
	if a.plat == nil || !platform.IsToken(tok) {
		return platform.AppToken{}, false, nil
	}
	t, err := a.plat.Store().TokenByHash(ctx, platform.HashToken(tok))
	if errors.Is(err, platform.ErrNotFound) {
		return platform.AppToken{}, false, nil
	}
	return t, err == nil, err
}

type tokenView struct {
	ID        string    `json:"id"`
	AppID     string    `json:"app_id"`
	Name      string    `json:"name"`
	Token     string    `json:"token,omitempty"` // only in the answer to its creation
	CreatedAt time.Time `json:"created_at"`
}

func viewToken(t platform.AppToken) tokenView {
	return tokenView{ID: t.ID, AppID: t.AppID, Name: t.Name, CreatedAt: t.CreatedAt}
}

// tokenRoutes are the routes of application tokens, and of the endpoint
// options that came with them (secret rotation).
func (a *api) tokenRoutes() []route {
	return []route{
		{"POST", "/v1/apps/{app}/endpoints/{endpoint}/secret/rotate", true, a.rotateSecret},
		{"POST", "/v1/apps/{app}/tokens", true, a.createToken},
		{"GET", "/v1/apps/{app}/tokens", true, a.listTokens},
		{"DELETE", "/v1/apps/{app}/tokens/{token}", true, a.deleteToken},
	}
}

func (a *api) createToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name *string `json:"name"`
	}
	if !a.decode(w, r, &in) {
		return
	}
	if in.Name == nil {
		writeField(w, "name", "is missing")
		return
	}
	app := r.PathValue("app")
	if !platform.IsID(platform.AppKind, app) {
		writeErr(w, http.StatusNotFound, "no application %q", app)
		return
	}
	tok := platform.NewToken()
	t, err := a.plat.Store().CreateToken(r.Context(), platform.AppToken{ID: platform.NewID(platform.TokenKind, time.Now()),
		AppID: app, Name: *in.Name, Hash: platform.HashToken(tok)})
	if err != nil {
		writePlatErr(w, "creating the token", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "application token created", slog.String("app", app), slog.String("token_id", t.ID))
	v := viewToken(t)
	v.Token = tok
	writeJSON(w, http.StatusCreated, v)
}

func (a *api) listTokens(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	ts, err := a.plat.Store().ListTokens(r.Context(), r.PathValue("app"), after, limit)
	if err != nil {
		writePlatErr(w, "listing tokens", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(ts, limit, viewToken, func(t platform.AppToken) string { return t.ID }))
}

func (a *api) deleteToken(w http.ResponseWriter, r *http.Request) {
	app, id := r.PathValue("app"), r.PathValue("token")
	if err := a.plat.Store().DeleteToken(r.Context(), app, id); err != nil {
		writePlatErr(w, "deleting the token", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "application token deleted", slog.String("app", app), slog.String("token_id", id))
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}

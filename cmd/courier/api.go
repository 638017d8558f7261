package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store"
)

// api is the ingest and operations API over HTTP/JSON. Every /v1 route
// needs a bearer token: an admin token from the config, or an
// application token for the routes of its application that appAccess
// opens (platform_tokens_api.go); /healthz, /readyz and /metrics carry
// no event and need none.
type api struct {
	cfg     *Config
	svc     *courier.Service
	st      store.Store
	plat    *platform.Service
	pauses  *pauses
	rec     *recorder // serve -record's log of pauses and resumes; nil without
	replays *replays  // bulk replay jobs (replay.go)
	log     *slog.Logger
	tokens  [][sha256.Size]byte // hashed, so the comparison's time does not depend on a token's length
	metrics http.Handler
	ready   func() bool
}

func (a *api) handler() http.Handler {
	for _, t := range a.cfg.APITokens {
		a.tokens = append(a.tokens, sha256.Sum256([]byte(t)))
	}
	mux := http.NewServeMux()
	for _, rt := range a.routes() {
		h := rt.h
		if rt.auth {
			h = a.auth(rt, h)
		}
		mux.HandleFunc(rt.method+" "+rt.path, h)
	}
	// No catch-all route: it would take every method on every path and
	// answer 404 where the mux answers 405 with Allow. The mux's own
	// answers are plain text, so routeError rewrites them as JSON.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			w = &routeError{ResponseWriter: w, r: r}
		}
		mux.ServeHTTP(w, r)
	})
}

// route is one operation of the API: what openapi.json describes.
type route struct {
	method, path string
	auth         bool // needs a bearer token
	h            http.HandlerFunc
}

// routes is every operation the API serves, and the only place they are
// registered: openapi_test.go holds openapi.json to it.
func (a *api) routes() []route {
	rs := []route{
		{"POST", "/v1/streams/{stream}/events", true, a.publish},
		{"GET", "/v1/events/{id}", true, a.get},
		{"GET", "/v1/streams/{stream}/dead", true, a.dead},
		{"POST", "/v1/events/{id}/replay", true, a.replay},
		{"POST", "/v1/streams/{stream}/pause", true, a.pause(true)},
		{"POST", "/v1/streams/{stream}/resume", true, a.pause(false)},
		{"GET", "/healthz", false, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		}},
		{"GET", "/readyz", false, a.readyz},
		{"GET", "/openapi.json", false, serveOpenAPI},
		{"GET", "/ui/", false, serveUI},
	}
	rs = append(rs, a.platformRoutes()...)
	rs = append(rs, a.tokenRoutes()...)
	if a.metrics != nil {
		rs = append(rs, route{"GET", "/metrics", false, a.metrics.ServeHTTP})
	}
	return rs
}

// routeError answers a request no route takes with the API's JSON error
// in place of the mux's text: 404, or 405 when the path takes other
// methods, keeping the Allow header the mux set. The mux has no hook for
// this; it writes its answer through this writer, which drops the text.
type routeError struct {
	http.ResponseWriter
	r     *http.Request
	wrote bool
}

func (e *routeError) WriteHeader(status int) {
	if e.wrote {
		return
	}
	e.wrote = true
	if status == http.StatusMethodNotAllowed {
		writeErr(e.ResponseWriter, status, "method %s not allowed on %s (Allow: %s)", e.r.Method, e.r.URL.Path, e.Header().Get("Allow"))
		return
	}
	writeErr(e.ResponseWriter, status, "no route %s %s", e.r.Method, e.r.URL.Path)
}

func (e *routeError) Write(b []byte) (int, error) {
	if !e.wrote {
		e.WriteHeader(http.StatusNotFound)
	}
	return len(b), nil
}

// apiError is every error the API answers: {"error": "..."}, with the
// input field at fault when one is ("field": "url").
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, args...)})
}

// auth lets a request to rt through only with a configured bearer
// token, compared in constant time against each, or with an application
// token that appAccess lets reach rt (platform_tokens_api.go). The scheme
// is matched in any case (RFC 9110 section 11.1); the token exactly.
func (a *api) auth(rt route, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		tok = strings.TrimLeft(tok, " ")
		if !strings.EqualFold(scheme, "Bearer") || tok == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="courier"`)
			writeErr(w, http.StatusUnauthorized, "missing bearer token (Authorization: Bearer ...)")
			return
		}
		sum := sha256.Sum256([]byte(tok))
		match := 0
		for _, t := range a.tokens {
			match |= subtle.ConstantTimeCompare(sum[:], t[:])
		}
		if match == 1 {
			next(w, r)
			return
		}
		app, ok, err := a.appToken(r.Context(), tok)
		switch {
		case err != nil:
			writeErr(w, http.StatusServiceUnavailable, "checking the token: %v; try again", err)
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="courier", error="invalid_token"`)
			writeErr(w, http.StatusUnauthorized, "bearer token not accepted")
		case allowApp(w, r, rt, app):
			next(w, r)
		}
	}
}

// publishRequest is the body of a publish. Payload is any JSON value; it
// is stored and sent byte for byte as given.
type publishRequest struct {
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

type publishResponse struct {
	Stream    string `json:"stream"`
	ID        string `json:"id"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

// decode reads a size-limited JSON body into v, refusing unknown fields,
// duplicated keys and trailing data. It writes the error answer itself.
func (a *api) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if !a.acceptBody(w, r) {
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(a.cfg.MaxRequestBytes)))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeErr(w, http.StatusRequestEntityTooLarge, "request body over %d bytes (max_request_bytes)", a.cfg.MaxRequestBytes)
		return false
	case err != nil:
		writeErr(w, http.StatusBadRequest, "reading the body: %v", err)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed JSON body: %v", err)
		return false
	}
	if dec.More() {
		writeErr(w, http.StatusBadRequest, "malformed JSON body: data after the object")
		return false
	}
	if err := duplicateKey(body); err != nil {
		writeErr(w, http.StatusBadRequest, "malformed JSON body: %v", err)
		return false
	}
	return true
}

// acceptBody refuses, before reading a byte, a body the API cannot take:
// one in a content coding (415: only identity is read, so a compressed
// body is never mistaken for JSON), of a media type other than JSON
// (415; no Content-Type is taken as JSON), or declaring a length over
// max_request_bytes (413 at once: reading would wait, up to the server's
// read timeout, for bytes the client may never send). It writes the
// error answer itself.
func (a *api) acceptBody(w http.ResponseWriter, r *http.Request) bool {
	for _, v := range r.Header.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				w.Header().Set("Accept-Encoding", "identity")
				writeErr(w, http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported: send the body uncompressed", c)
				return false
			}
		}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if err := checkJSONType(ct); err != nil {
			writeErr(w, http.StatusUnsupportedMediaType, "%v", err)
			return false
		}
	}
	if r.ContentLength > int64(a.cfg.MaxRequestBytes) {
		writeErr(w, http.StatusRequestEntityTooLarge, "request body of %d bytes is over %d bytes (max_request_bytes)",
			r.ContentLength, a.cfg.MaxRequestBytes)
		return false
	}
	return true
}

// checkJSONType accepts application/json and any application/...+json
// type (RFC 6839), with no charset or UTF-8, the only one JSON has (RFC
// 8259 section 8.1).
func checkJSONType(ct string) error {
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return fmt.Errorf("Content-Type %q is malformed (%v): send Content-Type: application/json", ct, err)
	case mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")):
		return fmt.Errorf("Content-Type %q is not JSON: send Content-Type: application/json", mt)
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return fmt.Errorf("Content-Type charset %q is not supported: JSON is UTF-8", params["charset"])
	}
	return nil
}

// duplicateKey walks body, JSON that encoding/json has accepted, and
// names the first key that appears twice in one object, at any depth.
// encoding/json keeps the last of them without a word, and a receiver's
// parser may keep the first: the producer and the receiver would read
// different events. Keys of the request object itself are compared as
// encoding/json matches them to fields, ignoring case ("ID" is "id").
func duplicateKey(body []byte) error {
	type object struct {
		keys  map[string]bool
		isKey bool // the next token is a key
	}
	var open []*object // the objects and arrays around the token, innermost last; nil for an array
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if tok == json.Delim('}') || tok == json.Delim(']') {
			open = open[:len(open)-1]
			continue
		}
		var in *object
		if len(open) > 0 {
			in = open[len(open)-1]
		}
		if in != nil && in.isKey {
			k := tok.(string)
			fold := k
			if len(open) == 1 {
				fold = strings.ToUpper(strings.ToLower(k)) // encoding/json's case folding of a field name
			}
			if in.keys[fold] {
				return fmt.Errorf("duplicate key %q: a key may appear once in an object", k)
			}
			in.keys[fold] = true
			in.isKey = false
			continue
		}
		if in != nil {
			in.isKey = true // tok starts the value; the object's next key follows it
		}
		switch tok {
		case json.Delim('{'):
			open = append(open, &object{keys: map[string]bool{}, isKey: true})
		case json.Delim('['):
			open = append(open, nil)
		}
	}
}

func (a *api) knownStream(w http.ResponseWriter, stream string) (*StreamConfig, bool) {
	s, ok := a.cfg.Streams[stream]
	if !ok {
		writeErr(w, http.StatusNotFound, "unknown stream %q: the config declares no such stream", stream)
	}
	return s, ok
}

// knownDest reports whether stream is a destination: a stream of the
// config, or an endpoint's (platform.StreamOf) that exists. It writes
// the error answer itself.
func (a *api) knownDest(w http.ResponseWriter, r *http.Request, stream string) bool {
	if _, ok := a.cfg.Streams[stream]; ok || !platform.IsEndpointStream(stream) || a.plat == nil {
		_, ok := a.knownStream(w, stream)
		return ok
	}
	if _, err := a.plat.Store().GetEndpoint(r.Context(), stream); err != nil {
		writePlatErr(w, "stream "+stream, err)
		return false
	}
	return true
}

func (a *api) publish(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	sc, ok := a.knownStream(w, stream)
	if !ok {
		return
	}
	var req publishRequest
	if !a.decode(w, r, &req) {
		return
	}
	switch {
	case req.ID == "":
		writeErr(w, http.StatusBadRequest, "id is missing")
		return
	case len(req.Payload) == 0:
		writeErr(w, http.StatusBadRequest, "payload is missing")
		return
	case len(req.Payload) > sc.Policy().MaxPayloadBytes:
		writeErr(w, http.StatusRequestEntityTooLarge, "payload is %d bytes; stream %q takes at most %d (max_payload_bytes)",
			len(req.Payload), stream, sc.Policy().MaxPayloadBytes)
		return
	}
	rc, err := a.svc.Publish(r.Context(), stream, req.ID, req.Payload)
	switch {
	case errors.Is(err, courier.ErrRefused):
		// The producer learns at once what the channel could never
		// carry (an ID that cannot be a webhook-id, say); nothing is stored.
		writeErr(w, http.StatusUnprocessableEntity, "%v", err)
	case err == nil && !rc.Duplicate:
		writeJSON(w, http.StatusCreated, publishResponse{Stream: stream, ID: req.ID, Seq: rc.Seq})
	case err == nil || errors.Is(err, store.ErrBadArgument):
		// The ID is taken: on this stream (a duplicate) or, as the store
		// refuses with ErrBadArgument once the channel has passed the ID,
		// on another. What it holds tells a retry from a producer's bug.
		a.taken(w, r, stream, req)
	default:
		a.log.LogAttrs(r.Context(), slog.LevelError, "publish failed", slog.String("stream", stream), slog.String("id", req.ID), slog.Any("err", err))
		writeErr(w, http.StatusServiceUnavailable, "not stored, try again with the same id: %v", err)
	}
}

// taken answers a publish of an ID the store holds already. An ID names
// one event in the whole store, whatever its stream: the same stream and
// payload, byte for byte, is a retry, answered 200 as a duplicate; another
// stream or another payload is a producer's bug, answered 409, and the
// stored event is left as it was.
func (a *api) taken(w http.ResponseWriter, r *http.Request, stream string, req publishRequest) {
	rec, err := a.st.Get(r.Context(), req.ID)
	switch {
	case err != nil: // ErrNotFound too: retention deleted the event since the publish
		writeErr(w, http.StatusServiceUnavailable, "id %q is taken but its event could not be read, try again with the same id: %v", req.ID, err)
	case rec.Stream != stream:
		writeErr(w, http.StatusConflict, "event ID %q belongs to another stream, %q: an ID names one event across all streams", req.ID, rec.Stream)
	case !bytes.Equal(rec.Payload, req.Payload):
		writeErr(w, http.StatusConflict, "event ID %q was already accepted with a different payload; the stored event is unchanged", req.ID)
	default:
		writeJSON(w, http.StatusOK, publishResponse{Stream: stream, ID: req.ID, Seq: rec.Seq, Duplicate: true})
	}
}

// eventView is what the API shows of a record: never the payload's
// delivery secrets, and the payload only as the producer gave it.
type eventView struct {
	Stream     string          `json:"stream"`
	ID         string          `json:"id"`
	Seq        uint64          `json:"seq"`
	State      string          `json:"state"`
	Attempts   int             `json:"attempts"`
	NextAt     *time.Time      `json:"next_at,omitempty"`
	DeadReason string          `json:"dead_reason,omitempty"`
	Last       *outcomeView    `json:"last_outcome,omitempty"`
	AcceptedAt time.Time       `json:"accepted_at"`
	Replays    int             `json:"replays"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

type outcomeView struct {
	Attempt int       `json:"attempt"`
	Status  int       `json:"status"`
	Detail  string    `json:"detail"`
	At      time.Time `json:"at"`
}

func view(rec store.Record, withPayload bool) eventView {
	v := eventView{Stream: rec.Stream, ID: rec.ID, Seq: rec.Seq, State: rec.State.String(), Attempts: rec.Attempts,
		AcceptedAt: rec.AcceptedAt, Replays: rec.Replays()}
	if rec.State == machine.Dead {
		v.DeadReason = rec.Reason.String()
	}
	if !rec.NextAt.IsZero() && !rec.State.Terminal() {
		t := rec.NextAt
		v.NextAt = &t
	}
	if rec.Last.Attempt > 0 {
		v.Last = &outcomeView{Attempt: rec.Last.Attempt, Status: rec.Last.Status, Detail: rec.Last.Detail, At: rec.LastAt}
	}
	if withPayload && json.Valid(rec.Payload) {
		v.Payload = rec.Payload
	}
	return v
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	rec, err := a.st.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		writeErr(w, http.StatusNotFound, "no event with id %q", r.PathValue("id"))
		return
	}
	if err != nil {
		writeStoreErr(w, "reading the event", err)
		return
	}
	writeJSON(w, http.StatusOK, view(rec, true))
}

// writeStoreErr answers a store call's failure: a name the store refuses
// (not valid UTF-8, a NUL byte, too long) is the caller's fault and will
// never succeed, so 400; anything else may pass, so 503, try again.
func writeStoreErr(w http.ResponseWriter, doing string, err error) {
	if errors.Is(err, store.ErrBadArgument) {
		writeErr(w, http.StatusBadRequest, "%s: %v", doing, err)
		return
	}
	writeErr(w, http.StatusServiceUnavailable, "%s: %v", doing, err)
}

// dead lists a stream's dead letters, a page at a time: ?after=SEQ&limit=N
// (default 100, at most 1000); next_after is the after of the next page.
//
// A Seq is at most math.MaxInt64: the SQL stores keep it in a signed
// 64-bit column, and hand after to it as one. A larger after is refused
// rather than passed on, where it would wrap negative and list the first
// page.
func (a *api) dead(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	if !a.knownDest(w, r, stream) {
		return
	}
	after, limit := uint64(0), 100
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n > math.MaxInt64 {
			writeErr(w, http.StatusBadRequest, "after %q must be a sequence number from 0 to %d", s, int64(math.MaxInt64))
			return
		}
		after = n
	}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeErr(w, http.StatusBadRequest, "limit %q must be a number from 1 to 1000", s)
			return
		}
		limit = n
	}
	recs, err := a.st.DeadLetters(r.Context(), stream, after, limit)
	if err != nil {
		writeErr(w, http.StatusServiceUnavailable, "reading dead letters: %v", err)
		return
	}
	out := struct {
		Dead      []eventView `json:"dead"`
		NextAfter uint64      `json:"next_after,omitempty"`
	}{Dead: make([]eventView, 0, len(recs))}
	for _, rec := range recs {
		out.Dead = append(out.Dead, view(rec, false))
	}
	if len(recs) == limit {
		out.NextAfter = recs[len(recs)-1].Seq
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) replay(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec, err := a.st.Replay(r.Context(), id, "api")
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeErr(w, http.StatusNotFound, "no event with id %q", id)
		return
	case errors.Is(err, store.ErrInvalidWrite):
		writeErr(w, http.StatusConflict, "event %q is not a dead letter awaiting an operator: %v", id, err)
		return
	case err != nil:
		writeStoreErr(w, "replaying", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "dead letter replayed", slog.String("stream", rec.Stream), slog.String("id", id))
	writeJSON(w, http.StatusOK, view(rec, false))
}

func (a *api) pause(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stream := r.PathValue("stream")
		if !a.knownDest(w, r, stream) {
			return
		}
		kind, change := invariants.Resumed, func() error { return a.pauses.Resume(r.Context(), stream) }
		if on {
			kind, change = invariants.Paused, func() error { return a.pauses.Pause(r.Context(), stream, "api") }
		}
		if err := a.rec.operator(kind, stream, change); err != nil {
			writeErr(w, http.StatusServiceUnavailable, "recording the pause: %v", err)
			return
		}
		a.log.LogAttrs(r.Context(), slog.LevelInfo, "stream pause changed", slog.String("stream", stream), slog.Bool("paused", on))
		writeJSON(w, http.StatusOK, map[string]any{"stream": stream, "paused": on})
	}
}

// readyz answers 200 while the service is not shutting down and its store
// answers a round trip that changes nothing (store.Ping: the backend's
// own Ping, a query on the SQL stores), and 503 otherwise.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	if a.ready != nil && !a.ready() {
		writeErr(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := store.Ping(ctx, a.st); err != nil {
		writeErr(w, http.StatusServiceUnavailable, "store not answering: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

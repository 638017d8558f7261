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
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// api is the ingest and operations API over HTTP/JSON. Every /v1 route
// needs a bearer token from the config; /healthz, /readyz and /metrics
// carry no event and need none.
type api struct {
	cfg     *Config
	svc     *courier.Service
	check   channel.Checker
	st      store.Store
	pauses  *pauses
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
	mux.HandleFunc("POST /v1/streams/{stream}/events", a.auth(a.publish))
	mux.HandleFunc("GET /v1/events/{id}", a.auth(a.get))
	mux.HandleFunc("GET /v1/streams/{stream}/dead", a.auth(a.dead))
	mux.HandleFunc("POST /v1/events/{id}/replay", a.auth(a.replay))
	mux.HandleFunc("POST /v1/streams/{stream}/pause", a.auth(a.pause(true)))
	mux.HandleFunc("POST /v1/streams/{stream}/resume", a.auth(a.pause(false)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	if a.metrics != nil {
		mux.Handle("GET /metrics", a.metrics)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "no route %s %s", r.Method, r.URL.Path)
	})
	return mux
}

// apiError is every error the API answers: {"error": "..."}.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, args...)})
}

// auth lets a request through only with a configured bearer token,
// compared in constant time against each.
func (a *api) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || tok == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="courier"`)
			writeErr(w, http.StatusUnauthorized, "missing bearer token (Authorization: Bearer ...)")
			return
		}
		sum := sha256.Sum256([]byte(tok))
		match := 0
		for _, t := range a.tokens {
			match |= subtle.ConstantTimeCompare(sum[:], t[:])
		}
		if match != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="courier", error="invalid_token"`)
			writeErr(w, http.StatusUnauthorized, "bearer token not accepted")
			return
		}
		next(w, r)
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

// decode reads a size-limited JSON body into v, refusing unknown fields
// and trailing data. It writes the error answer itself.
func (a *api) decode(w http.ResponseWriter, r *http.Request, v any) bool {
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
	return true
}

func (a *api) knownStream(w http.ResponseWriter, stream string) (*StreamConfig, bool) {
	s, ok := a.cfg.Streams[stream]
	if !ok {
		writeErr(w, http.StatusNotFound, "unknown stream %q: the config declares no such stream", stream)
	}
	return s, ok
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
	// Refused here, the producer learns at once what the channel could
	// never carry (an ID that cannot be a webhook-id, say); nothing is stored.
	if err := a.check.Check(stream, req.ID, req.Payload); err != nil {
		writeErr(w, http.StatusUnprocessableEntity, "refused: %v", err)
		return
	}
	rc, err := a.svc.Publish(r.Context(), stream, req.ID, req.Payload)
	switch {
	case errors.Is(err, store.ErrBadArgument):
		writeErr(w, http.StatusConflict, "%v", err)
		return
	case err != nil:
		a.log.LogAttrs(r.Context(), slog.LevelError, "publish failed", slog.String("stream", stream), slog.String("id", req.ID), slog.Any("err", err))
		writeErr(w, http.StatusServiceUnavailable, "not stored, try again with the same id: %v", err)
		return
	}
	status := http.StatusCreated
	if rc.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, publishResponse{Stream: stream, ID: req.ID, Seq: rc.Seq, Duplicate: rc.Duplicate})
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
		writeErr(w, http.StatusServiceUnavailable, "reading the event: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, view(rec, true))
}

// dead lists a stream's dead letters, a page at a time: ?after=SEQ&limit=N
// (default 100, at most 1000); next_after is the after of the next page.
func (a *api) dead(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	if _, ok := a.knownStream(w, stream); !ok {
		return
	}
	after, limit := uint64(0), 100
	if s := r.URL.Query().Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			writeErr(w, http.StatusBadRequest, "after %q is not a sequence number", s)
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
		writeErr(w, http.StatusServiceUnavailable, "replaying: %v", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "dead letter replayed", slog.String("stream", rec.Stream), slog.String("id", id))
	writeJSON(w, http.StatusOK, view(rec, false))
}

func (a *api) pause(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stream := r.PathValue("stream")
		if _, ok := a.knownStream(w, stream); !ok {
			return
		}
		var err error
		if on {
			err = a.pauses.Pause(r.Context(), stream, "api")
		} else {
			err = a.pauses.Resume(r.Context(), stream)
		}
		if err != nil {
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

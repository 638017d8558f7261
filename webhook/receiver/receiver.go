package receiver

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/courierlab/courier/webhook"
)

// Defaults for the Config fields left zero.
const (
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxResponseBytes = 64 << 10
)

// Config describes the middleware. New validates it and names the field
// at fault.
type Config struct {
	// Secrets are the sender's signing secrets, "whsec_..." (one, or two
	// during a rotation). At least one.
	Secrets []string
	// Tolerance is how far webhook-timestamp may be from Now, either way.
	// Zero means webhook.DefaultTolerance.
	Tolerance time.Duration
	// Window is how long an applied ID is remembered. It must cover the
	// sender's whole retry span (courier's MaxAge plus one attempt
	// timeout); a duplicate arriving later is applied again. Required.
	Window time.Duration
	// Store remembers applied IDs: NewMemory() or NewSQL(...). Required.
	Store Store
	// Strict fences every stream on courier-sequence: an event is applied
	// only if its sequence is above the last applied on its
	// courier-stream, and requests without the two headers are refused.
	Strict bool
	// MaxBodyBytes is the largest body read; a larger one gets 413. Zero
	// means DefaultMaxBodyBytes (courier's own default limit).
	MaxBodyBytes int64
	// MaxResponseBytes bounds the application's response, which is held
	// back until the ID is recorded; the rest is dropped. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int
	// Now is the clock for the timestamp check and the window; nil means
	// time.Now.
	Now func() time.Time
	// Logger receives refusals and store errors (never a body, a
	// signature or a secret); nil means slog.Default().
	Logger *slog.Logger
}

// Event is what the middleware tells the application about the delivery.
type Event struct {
	ID      string
	Stream  string // "" if the request had no courier-stream
	Seq     uint64 // 0 if the request had no courier-sequence
	Attempt int    // 0 if the request had no courier-attempt
	Body    []byte // the verified body (also readable from r.Body)
}

type ctxKey struct{}

type delivery struct {
	ev    Event
	claim Claim
}

// FromContext returns the verified event of the request, for the
// application behind the middleware.
func FromContext(ctx context.Context) (Event, bool) {
	d, ok := ctx.Value(ctxKey{}).(*delivery)
	if !ok {
		return Event{}, false
	}
	return d.ev, true
}

// Tx returns the claim's SQL transaction when the Store is SQL, nil
// otherwise. Writes made in it commit only if the application answers
// 2xx, together with the record that the ID was applied: effect once,
// even across a crash. Do not Commit or Rollback it yourself.
func Tx(ctx context.Context) *sql.Tx {
	d, ok := ctx.Value(ctxKey{}).(*delivery)
	if !ok {
		return nil
	}
	return d.claim.Tx()
}

type handler struct {
	cfg      Config
	verifier *webhook.Verifier
	app      http.Handler
}

// New wraps app: every request is verified, deduplicated by webhook-id
// and (if Strict) fenced by sequence before app sees it. See the package
// doc for the answers it gives.
func New(cfg Config, app http.Handler) (http.Handler, error) {
	if app == nil {
		return nil, errors.New("receiver: app is nil")
	}
	switch {
	case cfg.Window <= 0:
		return nil, fmt.Errorf("receiver: Window %s must be positive (at least the sender's MaxAge)", cfg.Window)
	case cfg.Store == nil:
		return nil, errors.New("receiver: Store is nil (use NewMemory or NewSQL)")
	case cfg.Tolerance < 0:
		return nil, fmt.Errorf("receiver: Tolerance %s is negative", cfg.Tolerance)
	case cfg.MaxBodyBytes < 0:
		return nil, fmt.Errorf("receiver: MaxBodyBytes %d is negative", cfg.MaxBodyBytes)
	case cfg.MaxResponseBytes < 0:
		return nil, fmt.Errorf("receiver: MaxResponseBytes %d is negative", cfg.MaxResponseBytes)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	v, err := webhook.NewVerifier(cfg.Secrets, cfg.Tolerance, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("receiver: Secrets: %w", err)
	}
	return &handler{cfg: cfg, verifier: v, app: app}, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodHead: // courier's probe: the path is up
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "POST, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ev, status, err := h.read(w, r)
	if err != nil {
		h.cfg.Logger.Info("receiver: refused", "status", status, "reason", err.Error(), "id", safeID(r))
		http.Error(w, err.Error(), status)
		return
	}
	k := Key{ID: ev.ID}
	if h.cfg.Strict {
		k = Key{ID: ev.ID, Stream: ev.Stream, Seq: ev.Seq, Strict: true}
	}
	claim, verdict, err := h.cfg.Store.Begin(r.Context(), k, h.cfg.Now(), h.cfg.Window)
	if err != nil {
		h.cfg.Logger.Error("receiver: dedup store", "id", ev.ID, "err", err.Error())
		w.Header().Set("Retry-After", "1")
		http.Error(w, "dedup store unavailable", http.StatusServiceUnavailable)
		return
	}
	switch verdict {
	case Duplicate:
		w.Header().Set("courier-receiver", "duplicate")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "duplicate: already applied\n")
		return
	case Superseded:
		http.Error(w, fmt.Sprintf("sequence %d of stream %q is not above the last applied", ev.Seq, ev.Stream), http.StatusConflict)
		return
	}
	h.apply(w, r, ev, claim)
}

// read checks the request and returns its event, or the status to refuse
// it with. The application is never reached from here.
func (h *handler) read(w http.ResponseWriter, r *http.Request) (Event, int, error) {
	body, err := readBody(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes), r.ContentLength, h.cfg.MaxBodyBytes)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return Event{}, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", h.cfg.MaxBodyBytes)
		}
		return Event{}, http.StatusBadRequest, errors.New("cannot read the body")
	}
	if err := h.verifier.Verify(r.Header, body); err != nil {
		if errors.Is(err, webhook.ErrMalformed) {
			return Event{}, http.StatusBadRequest, err
		}
		return Event{}, http.StatusUnauthorized, err
	}
	ev := Event{ID: r.Header.Get(webhook.HeaderID), Stream: r.Header.Get(webhook.HeaderStream), Body: body}
	if s := r.Header.Get(webhook.HeaderSequence); s != "" {
		if ev.Seq, err = strconv.ParseUint(s, 10, 63); err != nil || ev.Seq == 0 || s[0] == '+' {
			return Event{}, http.StatusBadRequest, fmt.Errorf("%s is not a positive decimal", webhook.HeaderSequence)
		}
	}
	if s := r.Header.Get(webhook.HeaderAttempt); s != "" {
		if ev.Attempt, err = strconv.Atoi(s); err != nil || ev.Attempt < 1 {
			return Event{}, http.StatusBadRequest, fmt.Errorf("%s is not a positive decimal", webhook.HeaderAttempt)
		}
	}
	if h.cfg.Strict {
		if err := webhook.CheckID(ev.Stream); err != nil {
			return Event{}, http.StatusBadRequest, fmt.Errorf("strict receiver: %s: %w", webhook.HeaderStream, err)
		}
		if ev.Seq == 0 {
			return Event{}, http.StatusBadRequest, fmt.Errorf("strict receiver: %s is missing", webhook.HeaderSequence)
		}
	}
	return ev, 0, nil
}

// apply runs the application with the claim held, and commits the claim
// only if the application answered 2xx; its response is held back until
// then, so the sender never hears 2xx for an ID that was not recorded.
func (h *handler) apply(w http.ResponseWriter, r *http.Request, ev Event, claim Claim) {
	defer claim.Abort() // no-op after Commit; releases the claim if app panics
	r.Body = io.NopCloser(bytes.NewReader(ev.Body))
	rec := &recorder{header: http.Header{}, limit: h.cfg.MaxResponseBytes}
	h.app.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), ctxKey{}, &delivery{ev: ev, claim: claim})))
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	if rec.status >= 200 && rec.status <= 299 {
		if err := claim.Commit(r.Context()); err != nil {
			h.cfg.Logger.Error("receiver: recording the applied ID failed; answering 503 so the sender retries", "id", ev.ID, "err", err.Error())
			w.Header().Set("Retry-After", "1")
			http.Error(w, "could not record the delivery", http.StatusServiceUnavailable)
			return
		}
	} else {
		claim.Abort()
	}
	for k, vs := range rec.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}

// readBody reads all of rd, sized by the request's Content-Length when it
// has a plausible one, so a large body is read without regrowing.
func readBody(rd io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 || contentLength > limit {
		return io.ReadAll(rd)
	}
	buf := bytes.NewBuffer(make([]byte, 0, contentLength+bytes.MinRead))
	_, err := buf.ReadFrom(rd)
	return buf.Bytes(), err
}

// recorder holds the application's response back, bounded.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	limit  int
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if room := r.limit - r.body.Len(); room > 0 {
		r.body.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// safeID returns the request's webhook-id for a log line if it is well
// formed, so a hostile header cannot forge log content.
func safeID(r *http.Request) string {
	id := r.Header.Get(webhook.HeaderID)
	if webhook.CheckID(id) != nil {
		return "(malformed)"
	}
	return id
}

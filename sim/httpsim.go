package sim

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/httpchannel"
	kit "github.com/courierlab/courier/webhook/receiver"
)

// The real parts in an HTTP world (World.HTTP): the simulator sends each
// attempt with httpchannel.Channel.Send, whose transport (httpParts, an
// http.RoundTripper) hands the request to the receiver kit's handler in
// memory and its response back, or fails the way the world's fault says.
// Nothing opens a socket or starts a goroutine: the whole round trip runs
// inside one happening of the queue, when the request arrives, on the
// virtual clock. The channel signs as of the send (its Now reads the
// sending node's clock then), the kit verifies and deduplicates as of the
// arrival; a flight keeps the channel of its send, so a request signed
// before a rotation's Switch carries the old secret.

// endpoint is where the simulated channel sends; nothing resolves it.
const endpoint = "http://receiver.sim/hooks"

// trip is how one round trip goes.
type trip uint8

const (
	tripRefused trip = iota + 1 // the connection is refused: nothing reaches the receiver
	tripFlap                    // the flapping link answers 502 itself
	tripArrive                  // the receiver answers, the answer comes back
	tripReset                   // the receiver answers, the connection is reset before the answer
)

var (
	errRefused = errors.New("dial tcp 10.0.0.1:80: connect: connection refused")
	errReset   = errors.New("read tcp 10.0.0.2:41000->10.0.0.1:80: read: connection reset by peer")
)

// httpParts are the real channel and receiver kit of a run: a channel
// for each signing secret and a kit handler for each set of secrets it
// accepts, all kits sharing one deduplication store.
type httpParts struct {
	s   *sim
	r   *rand.Rand // the stream "http": reset or hang, the secrets
	rot Rotation
	// sendOld and sendNew are by stream (nil sendNew without a rotation):
	// a platform world's endpoints each have their own status policy.
	sendOld   []*httpchannel.Channel
	sendNew   []*httpchannel.Channel
	kitOld    http.Handler
	kitBoth   http.Handler
	kitNew    http.Handler
	reject    int
	retryHint string // the Retry-After of a rejection, in seconds ("" for none)

	// The round trip under way.
	mode    trip
	signAt  time.Time
	verdict verdict // what the kit or the application did (0: nothing yet)
	why     string  // the kit's reason for refusing a delivery
}

// newHTTP builds the real parts of an HTTP world. It runs after
// initNodes, whose Slack it reads.
func newHTTP(s *sim) *httpParts {
	w := s.w
	h := &httpParts{s: s, r: stream(s.seed, "http"), rot: w.HTTP.Rotation, reject: w.HTTP.rejectStatus()}
	if ra := w.Receiver.RetryAfter; ra > 0 {
		h.retryHint = strconv.FormatInt(int64((ra+time.Second-1)/time.Second), 10) // delay-seconds, rounded up
	}
	old, nu := h.secret(), h.secret()
	h.sendOld = h.channels(old)
	store := kit.NewMemory()
	h.kitOld = h.kit(store, old)
	if h.rot.Add > 0 {
		h.sendNew = h.channels(nu)
		h.kitBoth = h.kit(store, old, nu)
		h.kitNew = h.kit(store, nu)
	}
	return h
}

// secret draws a signing secret from the run's seed.
func (h *httpParts) secret() string {
	key := make([]byte, 24)
	for i := range key {
		key[i] = byte(h.r.Uint32())
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

var quiet = slog.New(slog.DiscardHandler)

// channels are the real HTTP channels signing with secret, by stream:
// one for every stream, or in a platform world one for each endpoint,
// with its status policy (platform.StatusPolicy, as courier serve builds
// it).
func (h *httpParts) channels(secret string) []*httpchannel.Channel {
	chs := make([]*httpchannel.Channel, len(h.s.streams))
	for i := range chs {
		switch {
		case h.s.plat != nil:
			chs[i] = h.channel(secret, platform.StatusPolicy(h.s.w.platformEndpoint(i)))
		case i == 0:
			chs[i] = h.channel(secret, nil)
		default:
			chs[i] = chs[0]
		}
	}
	return chs
}

// channel is the real HTTP channel signing with secret, on this
// transport, rejecting at once what policy says (nil: 410 only). Its
// AttemptTimeout is a day, never reached: the simulator times attempts
// out itself (Channel.ClientTimeout), and the round trip takes no
// virtual time. A fencing receiver's 409 rejects at once too, as the
// fake receiver's refusal does.
func (h *httpParts) channel(secret string, policy *httpchannel.StatusPolicy) *httpchannel.Channel {
	cfg := httpchannel.Config{
		Endpoint: endpoint, Secrets: []string{secret}, AttemptTimeout: 24 * time.Hour,
		Now: func() time.Time { return h.signAt }, Transport: h, Logger: quiet, StatusPolicy: policy,
	}
	if h.s.w.Receiver.Fence {
		rejects := []int{http.StatusGone}
		if policy != nil {
			rejects = policy.RejectOn
		}
		cfg.StatusPolicy = &httpchannel.StatusPolicy{RejectOn: append([]int{http.StatusConflict}, rejects...)}
	}
	ch, err := httpchannel.New(cfg)
	if err != nil {
		panic("sim: the HTTP channel's config: " + err.Error())
	}
	return ch
}

// kit is the receiver kit accepting secrets, on the virtual clock, in
// front of the application (h.app). It remembers an applied ID for
// longer than any copy of it can arrive (kitWindow).
func (h *httpParts) kit(store kit.Store, secrets ...string) http.Handler {
	k, err := kit.New(kit.Config{
		Secrets: secrets, Window: h.kitWindow(), Store: store, Strict: h.s.w.Receiver.Fence,
		Now: func() time.Time { return h.s.now }, Logger: quiet,
	}, http.HandlerFunc(h.app))
	if err != nil {
		panic("sim: the receiver kit's config: " + err.Error())
	}
	return k
}

// kitWindow bounds how long after its first application a copy of an
// event can still arrive: its last attempt starts within MaxAge of its
// acceptance (plus the run's Slack for crashed, stalled or skewed
// owners), and lands within a timeout, a late delay and a round trip.
//
// A replay gives an event a fresh budget whenever the operator runs it,
// however long after its first application, so the window also covers
// the last instant a world may replay (swarm seed 997998392534: a bulk
// replay job resumed after its serve crashed resent, 1m48s after its
// first application, an event whose acknowledgement was lost, and a kit
// that had forgotten it applied it twice). A receiver in production
// needs the same: a Window that covers how late its operators replay.
func (h *httpParts) kitWindow() time.Duration {
	w := h.s.w
	return w.Policy.MaxAge + h.s.runs[0].Slack + w.Policy.AttemptTimeout + w.Channel.ClientTimeout +
		w.Channel.LateDelay + 2*w.Channel.LatencyMax + time.Minute + lastReplay(w)
}

// lastReplay is the latest instant world w may replay an event: an
// operator's replays come by FaultsEnd, a bulk replay at its instant, a
// job resumed after its serve crashed a lease and its Resume later.
func lastReplay(w World) time.Duration {
	var last time.Duration
	if w.Operator.Replays > 0 {
		last = w.FaultsEnd
	}
	for _, b := range w.Platform.Replays {
		at := b.At
		if b.CrashAfter > 0 {
			at += w.LeaseTTL() + b.Resume + time.Millisecond
		}
		last = max(last, at)
	}
	return last
}

// sender is the channel that signs a request of stream i sent now.
func (h *httpParts) sender(i int) *httpchannel.Channel {
	if h.sendNew != nil && h.s.elapsed >= h.rot.Switch {
		return h.sendNew[i]
	}
	return h.sendOld[i]
}

// rejects reports whether stream i's channel rejects the receiver's
// answer to a poison or stubborn event at once: its endpoint's status
// policy lists it.
func (h *httpParts) rejects(i int) bool {
	return h.policyRejects(i, h.goneStatus(i))
}

// receiverKit is the kit as it stands now: the secrets it accepts.
func (h *httpParts) receiverKit() http.Handler {
	switch d := h.s.elapsed; {
	case h.rot.Add == 0 || d < h.rot.Add:
		return h.kitOld
	case d < h.rot.Drop:
		return h.kitBoth
	}
	return h.kitNew
}

// app is the application behind the kit: the fake receiver's events
// (poison, stubborn) without its deduplication and fencing, which are the
// kit's job here.
func (h *httpParts) app(w http.ResponseWriter, r *http.Request) {
	ev, ok := kit.FromContext(r.Context())
	if !ok {
		panic("sim: the receiver kit called the application without an event")
	}
	i := h.s.eventIndex(ev.ID)
	h.verdict = h.s.recv.apply(i)
	if h.verdict == applied {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if h.retryHint != "" {
		w.Header().Set("Retry-After", h.retryHint)
	}
	w.WriteHeader(h.goneStatus(i % len(h.s.streams)))
}

// RoundTrip implements http.RoundTripper for the channel: the round trip
// h.mode says, synchronously.
func (h *httpParts) RoundTrip(req *http.Request) (*http.Response, error) {
	switch h.mode {
	case tripRefused:
		return nil, errRefused
	case tripFlap:
		return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	in := httptest.NewRequestWithContext(req.Context(), req.Method, req.URL.String(), bytes.NewReader(body))
	in.Header = req.Header.Clone()
	rec := httptest.NewRecorder()
	h.receiverKit().ServeHTTP(rec, in)
	resp := rec.Result()
	if req.Method == http.MethodPost && h.verdict == 0 {
		h.kitVerdict(resp)
	}
	if h.mode == tripReset {
		return nil, errReset
	}
	resp.Request = req
	return resp, nil
}

// kitVerdict reads what the kit did with a delivery it did not hand to
// the application: a duplicate, a fenced sequence, or a request that did
// not verify. Any other answer is outside the kit's contract.
func (h *httpParts) kitVerdict(resp *http.Response) {
	switch {
	case resp.StatusCode == http.StatusOK && resp.Header.Get("courier-receiver") == "duplicate":
		h.verdict = duplicate
	case resp.StatusCode == http.StatusConflict && h.s.w.Receiver.Fence:
		h.verdict = fenced
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusBadRequest:
		b, _ := io.ReadAll(resp.Body)
		h.verdict, h.why = unverified, string(bytes.TrimSpace(b))
		resp.Body = io.NopCloser(bytes.NewReader(b))
	default:
		panic("sim: the receiver kit answered " + resp.Status + " without reaching the application")
	}
}

// send makes flight f's round trip as mode says, with the channel of
// its send, and returns the channel's outcome; h.verdict is what the
// receiver did with it (0 if it never reached it).
func (h *httpParts) send(f *flight, mode trip) channel.Outcome {
	h.mode, h.signAt, h.verdict, h.why = mode, f.sentAt, 0, ""
	return f.ch.Send(bg, f.x.Attempt)
}

// probe makes a probe's round trip as mode says.
func (h *httpParts) probe(p *probing, mode trip) channel.Outcome {
	h.mode, h.signAt, h.verdict = mode, p.sentAt, 0
	return h.sender(h.s.streamIndex(p.p.Stream)).Probe(bg, p.p.Stream)
}

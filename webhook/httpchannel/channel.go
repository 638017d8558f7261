package httpchannel

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/ssrf"
)

// HeaderProbe marks a probe request, so a receiver can answer it cheaply.
const HeaderProbe = "courier-probe"

// Errors Check returns (wrapped, with the figures).
var (
	ErrTooLarge   = errors.New("httpchannel: payload too large")
	ErrNoEndpoint = errors.New("httpchannel: no endpoint for stream")
	ErrBadStream  = errors.New("httpchannel: stream name cannot travel in a header")
)

// Channel sends events as signed HTTP POSTs. It implements channel.Channel
// and is safe for concurrent use.
type Channel struct {
	cfg    *validated
	client *http.Client
}

var _ channel.Channel = (*Channel)(nil)

// New validates cfg and builds the channel: no cookies, no redirects
// followed, no proxy unless asked, every dialled address checked by the
// SSRF policy.
func New(cfg Config) (*Channel, error) {
	v, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	if len(v.AllowAddrs) > 0 {
		v.Logger.Warn("httpchannel: SSRF protection relaxed: these address ranges may be dialled although they are not public; never in production",
			"allow_addrs", fmt.Sprint(v.AllowAddrs))
	}
	if v.ProxyFromEnvironment {
		v.Logger.Warn("httpchannel: using proxies from the environment: the SSRF policy checks only the proxy's address, the proxy must enforce its own")
	}
	dialer := &ssrf.Dialer{Allow: v.AllowAddrs, Resolver: v.Resolver, Timeout: v.AttemptTimeout}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if v.TLS != nil {
		tlsCfg = v.TLS.Clone()
		if tlsCfg.MinVersion == 0 {
			tlsCfg.MinVersion = tls.VersionTLS12
		}
	}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // the body is discarded; don't ask for gzip
	}
	if v.ProxyFromEnvironment {
		tr.Proxy = http.ProxyFromEnvironment
	}
	var rt http.RoundTripper = tr
	if v.Transport != nil {
		v.Logger.Warn("httpchannel: Config.Transport replaces the channel's own transport: no SSRF policy, TLS or proxy settings apply; never in production")
		rt = v.Transport
	}
	client := &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		// Jar nil: no cookies kept or sent. Timeout 0: each call's context bounds it.
	}
	return &Channel{cfg: v, client: client}, nil
}

// Close drops idle connections.
func (c *Channel) Close() { c.client.CloseIdleConnections() }

// MaxBodyBytes is the largest payload Send will carry.
func (c *Channel) MaxBodyBytes() int { return c.cfg.MaxBodyBytes }

// Check reports whether an event can be carried by this channel at all:
// its stream has an endpoint and a header-safe name, its ID can be a
// webhook-id, and its payload is within MaxBodyBytes. Call it before
// accepting the event, so that what the channel can never send is refused
// to the producer with this error instead of dead-lettered later.
func (c *Channel) Check(stream, id string, payload []byte) error {
	if _, ok := c.endpoint(stream); !ok {
		return fmt.Errorf("%w %q", ErrNoEndpoint, stream)
	}
	if stream != "" {
		if err := webhook.CheckID(stream); err != nil {
			return fmt.Errorf("%w: %w", ErrBadStream, err)
		}
	}
	if err := webhook.CheckID(id); err != nil {
		return fmt.Errorf("httpchannel: event ID: %w", err)
	}
	if len(payload) > c.cfg.MaxBodyBytes {
		return fmt.Errorf("%w: %d bytes, the HTTP channel's MaxBodyBytes is %d", ErrTooLarge, len(payload), c.cfg.MaxBodyBytes)
	}
	return nil
}

func (c *Channel) endpoint(stream string) (*url.URL, bool) {
	if u, ok := c.cfg.endpoints[stream]; ok {
		return u, true
	}
	return c.cfg.endpoint, c.cfg.endpoint != nil
}

// Send POSTs one attempt, signed, and maps the answer to an Outcome (see
// the package doc for the table).
func (c *Channel) Send(ctx context.Context, a channel.Attempt) channel.Outcome {
	o, _ := c.send(ctx, a, false)
	return o
}

// MaxKeptBodyBytes bounds Response.Body: an attempt log keeps this much
// of a receiver's answer, enough for an error message, never a dump.
const MaxKeptBodyBytes = 4 << 10

// Response is what a receiver answered to one attempt, for an attempt
// log: its headers and the first bytes of its body (at most
// MaxKeptBodyBytes, and at most Config.MaxResponseBytes, which is all
// the channel reads). Both are nil when no answer came (a timeout, a
// refused connection, the SSRF policy).
type Response struct {
	Header http.Header
	Body   []byte
}

// SendResponse is Send that also returns the receiver's answer. Send
// reads the same bytes and discards them; the outcome is the same.
// The headers and body are the receiver's words: a caller that shows
// them to someone else must treat them as untrusted text.
func (c *Channel) SendResponse(ctx context.Context, a channel.Attempt) (channel.Outcome, Response) {
	return c.send(ctx, a, true)
}

// send is Send, keeping the answer if keep.
func (c *Channel) send(ctx context.Context, a channel.Attempt, keep bool) (channel.Outcome, Response) {
	if err := c.Check(a.Stream, a.ID, a.Payload); err != nil {
		// Check should have refused this at acceptance; it can never succeed.
		return channel.Outcome{Result: machine.OutcomeRefused, Detail: channel.Truncate(err.Error())}, Response{}
	}
	u, _ := c.endpoint(a.Stream)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(a.Payload))
	if err != nil {
		return channel.Outcome{Result: machine.OutcomeRefused, Detail: "cannot build the request"}, Response{}
	}
	h := req.Header
	c.setHeaders(h)
	h.Set("User-Agent", userAgent())
	h.Set("Content-Type", c.cfg.ContentType)
	c.cfg.signer.SetHeaders(h, a.ID, c.cfg.Now(), a.Payload)
	if a.Stream != "" {
		h.Set(webhook.HeaderStream, a.Stream)
	}
	if a.Seq > 0 {
		h.Set(webhook.HeaderSequence, strconv.FormatUint(a.Seq, 10))
	}
	h.Set(webhook.HeaderAttempt, strconv.Itoa(a.Attempt))
	return c.do(ctx, req, keep)
}

// Probe sends the configured cheap request to stream's endpoint; its
// answer follows the same table as Send's.
func (c *Channel) Probe(ctx context.Context, stream string) channel.Outcome {
	base, ok := c.endpoint(stream)
	if !ok {
		return channel.Outcome{Result: machine.OutcomeRefused, Detail: fmt.Sprintf("no endpoint for stream %q", channel.Truncate(stream))}
	}
	u := *base
	if c.cfg.ProbePath != "" {
		u.Path, u.RawPath, u.RawQuery = c.cfg.ProbePath, "", ""
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.cfg.ProbeMethod, u.String(), nil)
	if err != nil {
		return channel.Outcome{Result: machine.OutcomeRefused, Detail: "cannot build the probe request"}
	}
	c.setHeaders(req.Header)
	req.Header.Set("User-Agent", userAgent())
	req.Header.Set(HeaderProbe, "1")
	o, _ := c.do(ctx, req, false)
	return o
}

// do sends req and classifies what came back; if keep, it returns the
// answer's headers and first bytes too.
func (c *Channel) do(ctx context.Context, req *http.Request, keep bool) (channel.Outcome, Response) {
	resp, err := c.client.Do(req)
	if err != nil {
		return classifyError(ctx, err, c.cfg.AttemptTimeout), Response{}
	}
	// Read a little and close: a receiver's body never decides the
	// outcome, and a huge one must not hold the attempt.
	var kept Response
	if keep {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, min(c.cfg.MaxResponseBytes, MaxKeptBodyBytes)))
		kept = Response{Header: resp.Header.Clone(), Body: body}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, c.cfg.MaxResponseBytes-int64(len(kept.Body))))
	_ = resp.Body.Close()
	return classifyStatus(resp.StatusCode, resp.Header, c.cfg.Now(), c.cfg.reject), kept
}

// classifyStatus is the outcome table: 2xx is delivered, a status the
// policy rejects on is refused (the event goes dead at once), any other
// is a retryable failure that passes its Retry-After on. A redirect is
// never followed (its target would escape the endpoint the operator
// chose), so it is one of these too, by default a failure.
func classifyStatus(status int, h http.Header, now time.Time, reject rejectSet) channel.Outcome {
	o := channel.Outcome{Status: status}
	switch {
	case status >= 200 && status <= 299:
		o.Result = machine.OutcomeDelivered
		return o
	case reject.rejects(status), status == http.StatusTooManyRequests && plant.On(plant.Channel429Refused):
		o.Result = machine.OutcomeRefused
	default:
		o.Result = machine.OutcomeFailed
		o.RetryAfter, _ = ParseRetryAfter(h.Get("Retry-After"), now)
	}
	o.Detail = statusDetail(status, h, o.Result == machine.OutcomeRefused)
	return o
}

// statusDetail says what the answer was, for the operator reading the
// event's last outcome or its dead reason; the rejection comes before the
// Location, which Truncate may cut.
func statusDetail(status int, h http.Header, rejected bool) string {
	d := "HTTP " + strconv.Itoa(status)
	if rejected {
		d += " rejected at once by the status policy"
	}
	switch {
	case status >= 300 && status <= 399:
		d += ": redirect not followed, to " + sanitize(h.Get("Location"))
	case status == http.StatusGone:
		d += ": Gone, the receiver says this endpoint is gone, stop sending here"
	}
	return channel.Truncate(d)
}

// classifyError maps a transport error: the context's end is a timeout
// (the receiver may have applied the event), the SSRF policy's refusal is
// for good, anything else (connection refused or reset, TLS, DNS) is
// retryable.
func classifyError(ctx context.Context, err error, timeout time.Duration) channel.Outcome {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // url.Error repeats the URL, which may carry a token
	}
	switch {
	case errors.Is(err, ssrf.ErrRefused):
		return channel.Outcome{Result: machine.OutcomeRefused, Detail: channel.Truncate(err.Error())}
	case ctx.Err() != nil:
		why := "no answer within the attempt timeout " + timeout.String()
		if errors.Is(ctx.Err(), context.Canceled) {
			why = "attempt cancelled before an answer"
		}
		return channel.Outcome{Result: machine.OutcomeTimedOut, Detail: why}
	}
	return channel.Outcome{Result: machine.OutcomeFailed, Detail: channel.Truncate(err.Error())}
}

// sanitize keeps a header value printable for the operator's detail.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

var userAgent = sync.OnceValue(func() string {
	return "courier/" + version() + " (+https://github.com/courierlab/courier)"
})

// version is courier's module version as the build recorded it: the main
// module's when courier is the program, the dependency's when it is a
// library, "devel" when unknown.
func version() string {
	const mod = "github.com/courierlab/courier"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := ""
	if bi.Main.Path == mod {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == mod {
			v = d.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}

// setHeaders sets the configured Headers on h; the caller sets the
// channel's own after, so that they win.
func (c *Channel) setHeaders(h http.Header) {
	for name, value := range c.cfg.Headers {
		h.Set(name, value)
	}
}

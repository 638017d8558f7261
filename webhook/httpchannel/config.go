package httpchannel

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/ssrf"
)

// Defaults for the Config fields left zero.
const (
	DefaultAttemptTimeout   = 10 * time.Second
	DefaultMaxBodyBytes     = 1 << 20
	DefaultMaxResponseBytes = 4 << 10
	DefaultContentType      = "application/json"
	DefaultProbeMethod      = http.MethodHead
)

// Config describes one HTTP channel. New validates it and names the
// field at fault.
type Config struct {
	// Endpoint is the http or https URL that events of every stream not in
	// Endpoints are POSTed to. It may carry a query; credentials in it are
	// refused (they would travel to logs and proxies).
	Endpoint string
	// Endpoints maps a stream to its own URL, overriding Endpoint.
	Endpoints map[string]string
	// Secrets sign every request (text form, "whsec_..."); several sign
	// with several signatures, for rotation. At least one.
	Secrets []string
	// AttemptTimeout bounds one attempt or probe, from dial to the last
	// byte read. Zero means DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// MaxBodyBytes is the largest payload the channel sends; Check refuses
	// a larger one at acceptance. Zero means DefaultMaxBodyBytes.
	MaxBodyBytes int
	// MaxResponseBytes is how much of a response body is read (and
	// discarded) before the connection is dropped. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// ContentType of every event. Empty means DefaultContentType.
	ContentType string
	// ProbeMethod and ProbePath make the probe request: method (HEAD if
	// empty) to the stream's endpoint with its path replaced by ProbePath
	// (kept if empty). A probe is unsigned and carries no event.
	ProbeMethod string
	ProbePath   string
	// AllowAddrs lets the channel dial these ranges although the SSRF
	// policy refuses them (for example 127.0.0.0/8 in development). New
	// logs a warning naming them.
	AllowAddrs []netip.Prefix
	// ProxyFromEnvironment uses HTTP_PROXY and friends. Off by default:
	// through a proxy the address policy sees only the proxy.
	ProxyFromEnvironment bool
	// Resolver looks endpoint hosts up; nil means net.DefaultResolver.
	Resolver ssrf.Resolver
	// TLS configures https (custom roots, client certificates). Nil means
	// the system roots. TLS below 1.2 is refused.
	TLS *tls.Config
	// StatusPolicy says which statuses reject an event at once (dead
	// letter) rather than fail it for a retry; nil means
	// DefaultStatusPolicy (only 410 Gone rejects).
	StatusPolicy *StatusPolicy
	// Now is the clock for webhook-timestamp and Retry-After dates; nil
	// means time.Now.
	Now func() time.Time
	// Transport, if set, carries every request instead of the channel's
	// own transport: for tests and the simulator (package sim), which
	// hand requests to an http.Handler in memory. It replaces the dialer,
	// so the SSRF policy (AllowAddrs), TLS and ProxyFromEnvironment do
	// not apply to it; New logs a warning. Never in production.
	Transport http.RoundTripper
	// Logger receives the construction warnings; nil means slog.Default().
	Logger *slog.Logger
	// Headers are set on every request and probe before the channel's
	// own (Content-Type, User-Agent, the webhook-* and courier-*
	// headers), which win over any of the same name. New refuses a name
	// that is no HTTP token and a value with a control character other
	// than tab.
	Headers map[string]string
}

// validated is a Config with defaults filled and URLs parsed.
type validated struct {
	Config
	endpoint  *url.URL
	endpoints map[string]*url.URL
	signer    *webhook.Signer
	reject    rejectSet
}

func validate(cfg Config) (*validated, error) {
	v := &validated{Config: cfg, endpoints: map[string]*url.URL{}}
	var err error
	if cfg.Endpoint == "" && len(cfg.Endpoints) == 0 {
		return nil, errors.New("httpchannel: Endpoint is empty and Endpoints has no stream: nowhere to send")
	}
	if cfg.Endpoint != "" {
		if v.endpoint, err = parseEndpoint(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("httpchannel: Endpoint: %w", err)
		}
	}
	for stream, raw := range cfg.Endpoints {
		if v.endpoints[stream], err = parseEndpoint(raw); err != nil {
			return nil, fmt.Errorf("httpchannel: Endpoints[%q]: %w", stream, err)
		}
	}
	if err := checkHeaders(cfg.Headers); err != nil {
		return nil, err
	}
	secrets, err := webhook.ParseSecrets(cfg.Secrets)
	if err != nil {
		return nil, fmt.Errorf("httpchannel: Secrets: %w", err)
	}
	if v.signer, err = webhook.NewSigner(secrets...); err != nil {
		return nil, fmt.Errorf("httpchannel: Secrets: %w", err)
	}
	switch {
	case cfg.AttemptTimeout < 0:
		return nil, fmt.Errorf("httpchannel: AttemptTimeout %s is negative", cfg.AttemptTimeout)
	case cfg.MaxBodyBytes < 0:
		return nil, fmt.Errorf("httpchannel: MaxBodyBytes %d is negative", cfg.MaxBodyBytes)
	case cfg.MaxResponseBytes < 0:
		return nil, fmt.Errorf("httpchannel: MaxResponseBytes %d is negative", cfg.MaxResponseBytes)
	case cfg.ProbePath != "" && !strings.HasPrefix(cfg.ProbePath, "/"):
		return nil, fmt.Errorf("httpchannel: ProbePath %q must start with /", cfg.ProbePath)
	case cfg.ProbeMethod != "" && !validMethod(cfg.ProbeMethod):
		return nil, fmt.Errorf("httpchannel: ProbeMethod %q is not an HTTP method token", cfg.ProbeMethod)
	case cfg.ContentType != "" && strings.ContainsAny(cfg.ContentType, "\r\n"):
		return nil, errors.New("httpchannel: ContentType contains a line break")
	case cfg.TLS != nil && cfg.TLS.MinVersion != 0 && cfg.TLS.MinVersion < tls.VersionTLS12:
		return nil, errors.New("httpchannel: TLS.MinVersion is below TLS 1.2")
	}
	if v.reject, err = newRejectSet(cfg.StatusPolicy); err != nil {
		return nil, fmt.Errorf("httpchannel: %w", err)
	}
	for i, p := range cfg.AllowAddrs {
		if !p.IsValid() {
			return nil, fmt.Errorf("httpchannel: AllowAddrs[%d] is not a valid prefix", i)
		}
	}
	v.AttemptTimeout = or(v.AttemptTimeout, DefaultAttemptTimeout)
	v.MaxBodyBytes = or(v.MaxBodyBytes, DefaultMaxBodyBytes)
	v.MaxResponseBytes = or(v.MaxResponseBytes, DefaultMaxResponseBytes)
	v.ContentType = or(v.ContentType, DefaultContentType)
	v.ProbeMethod = or(v.ProbeMethod, DefaultProbeMethod)
	if v.Now == nil {
		v.Now = time.Now
	}
	if v.Logger == nil {
		v.Logger = slog.Default()
	}
	return v, nil
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func parseEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL") // url's error repeats the URL, which may hold a token
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("scheme %q: only http and https", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("no host")
	case u.User != nil:
		return nil, errors.New("credentials in the URL are refused (they leak into logs and proxies)")
	case u.Fragment != "":
		return nil, errors.New("a fragment is never sent; remove it")
	}
	return u, nil
}

// checkHeaders refuses a header that would make every request fail: a
// name that is no token, a value with a control character.
func checkHeaders(h map[string]string) error {
	for name, value := range h {
		if !validMethod(name) { // a method and a header name are both tokens
			return fmt.Errorf("httpchannel: Headers: %q is not an HTTP header name", name)
		}
		if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return fmt.Errorf("httpchannel: Headers[%q]: the value holds a control character", name)
		}
	}
	return nil
}

func validMethod(m string) bool {
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return m != ""
}

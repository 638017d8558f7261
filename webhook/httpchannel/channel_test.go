// Tests that the HTTP channel, against real loopback servers, maps every
// status and transport failure to the outcome the table gives,
// signs every attempt so that the receiver's verifier accepts it with the
// event's ID on every attempt, honours Retry-After, the timeouts and the
// size limits, follows no redirect, keeps no cookie, ignores proxies from
// the environment unless asked, refuses non-public addresses at dial time,
// and validates its config naming the field.
package httpchannel

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook"
)

var (
	secret   = webhook.NewSecret()
	loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	quiet    = slog.New(slog.DiscardHandler)
)

func newChannel(t testing.TB, cfg Config) *Channel {
	t.Helper()
	if cfg.Secrets == nil {
		cfg.Secrets = []string{secret}
	}
	if cfg.AllowAddrs == nil {
		cfg.AllowAddrs = loopback
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func attempt(n int) channel.Attempt {
	return channel.Attempt{Stream: "orders", ID: "evt_1", Seq: 7, Attempt: n, Payload: []byte(`{"n":1}`)}
}

// The default policy: 2xx delivered, 410 Gone rejected at once, every
// other status (redirects included, never followed) retried. On the old
// table every 3xx and most 4xx were refused at once.
func TestStatusTable(t *testing.T) {
	s := statusServer(t)
	cases := []struct {
		code   int
		want   machine.Outcome
		detail string
	}{
		{200, machine.OutcomeDelivered, ""},
		{201, machine.OutcomeDelivered, ""},
		{202, machine.OutcomeDelivered, ""},
		{204, machine.OutcomeDelivered, ""},
		{299, machine.OutcomeDelivered, ""},
		{301, machine.OutcomeFailed, "HTTP 301: redirect not followed, to https://elsewhere.example/hooks"},
		{302, machine.OutcomeFailed, "redirect not followed, to https://elsewhere.example/hooks"},
		{303, machine.OutcomeFailed, "redirect"},
		{307, machine.OutcomeFailed, "redirect"},
		{308, machine.OutcomeFailed, "redirect"},
		{400, machine.OutcomeFailed, "HTTP 400"},
		{401, machine.OutcomeFailed, "HTTP 401"},
		{403, machine.OutcomeFailed, "HTTP 403"},
		{404, machine.OutcomeFailed, "HTTP 404"},
		{405, machine.OutcomeFailed, "HTTP 405"},
		{409, machine.OutcomeFailed, "HTTP 409"},
		{410, machine.OutcomeRefused, "HTTP 410 rejected at once by the status policy: Gone, the receiver says this endpoint is gone"},
		{413, machine.OutcomeFailed, "HTTP 413"},
		{422, machine.OutcomeFailed, "HTTP 422"},
		{408, machine.OutcomeFailed, "HTTP 408"},
		{425, machine.OutcomeFailed, "HTTP 425"},
		{429, machine.OutcomeFailed, "HTTP 429"},
		{499, machine.OutcomeFailed, "HTTP 499"},
		{500, machine.OutcomeFailed, "HTTP 500"},
		{502, machine.OutcomeFailed, "HTTP 502"},
		{503, machine.OutcomeFailed, "HTTP 503"},
		{504, machine.OutcomeFailed, "HTTP 504"},
		{599, machine.OutcomeFailed, "HTTP 599"},
	}
	for _, c := range cases {
		checkStatus(t, s, nil, c.code, c.want, c.detail)
	}
}

// A custom policy rejects exactly what it lists, a redirect included;
// an empty one rejects nothing, not even 410.
func TestStatusPolicyTable(t *testing.T) {
	s := statusServer(t)
	strictish := &StatusPolicy{RejectOn: []int{400, 401, 403, 404, 422, 301}}
	none := &StatusPolicy{RejectOn: []int{}}
	cases := []struct {
		policy *StatusPolicy
		code   int
		want   machine.Outcome
		detail string
	}{
		{strictish, 200, machine.OutcomeDelivered, ""},
		{strictish, 400, machine.OutcomeRefused, "HTTP 400 rejected at once by the status policy"},
		{strictish, 404, machine.OutcomeRefused, "HTTP 404 rejected at once by the status policy"},
		{strictish, 422, machine.OutcomeRefused, "HTTP 422 rejected at once"},
		{strictish, 301, machine.OutcomeRefused, "HTTP 301 rejected at once by the status policy: redirect not followed, to https://elsewhere.example/hooks"},
		{strictish, 302, machine.OutcomeFailed, "HTTP 302: redirect not followed"},
		{strictish, 409, machine.OutcomeFailed, "HTTP 409"},
		{strictish, 410, machine.OutcomeFailed, "HTTP 410: Gone"}, // not listed: retried
		{strictish, 429, machine.OutcomeFailed, "HTTP 429"},
		{strictish, 503, machine.OutcomeFailed, "HTTP 503"},
		{none, 204, machine.OutcomeDelivered, ""},
		{none, 410, machine.OutcomeFailed, "HTTP 410: Gone"},
		{none, 400, machine.OutcomeFailed, "HTTP 400"},
		{&StatusPolicy{RejectOn: []int{500}}, 500, machine.OutcomeRefused, "HTTP 500 rejected at once"},
		{&StatusPolicy{RejectOn: []int{500}}, 410, machine.OutcomeFailed, "HTTP 410"},
	}
	for _, c := range cases {
		checkStatus(t, s, c.policy, c.code, c.want, c.detail)
	}
}

// statusServer answers each request with the status its query names, a
// redirect with a Location.
func statusServer(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if code >= 300 && code < 400 {
			w.Header().Set("Location", "https://elsewhere.example/hooks")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s
}

// checkStatus sends one attempt to s answering code, under policy p.
func checkStatus(t *testing.T, s *httptest.Server, p *StatusPolicy, code int, want machine.Outcome, detail string) {
	t.Helper()
	ch := newChannel(t, Config{Endpoint: s.URL + "/hooks?code=" + strconv.Itoa(code), StatusPolicy: p})
	got := ch.Send(context.Background(), attempt(1))
	if got.Result != want || got.Status != code || !strings.Contains(got.Detail, detail) {
		t.Errorf("HTTP %d under %+v: got %v status %d detail %q; want %v with %q", code, p, got.Result, got.Status, got.Detail, want, detail)
	}
	if want == machine.OutcomeDelivered && got.Detail != "" {
		t.Errorf("HTTP %d: delivered with detail %q", code, got.Detail)
	}
	if got.RetryAfter != 0 {
		t.Errorf("HTTP %d: RetryAfter %s without a header", code, got.RetryAfter)
	}
}

// The channel keeps its own copy of the policy: changing the caller's
// slice after New changes nothing.
func TestStatusPolicyIsCopied(t *testing.T) {
	s := statusServer(t)
	p := &StatusPolicy{RejectOn: []int{404}}
	ch := newChannel(t, Config{Endpoint: s.URL + "/hooks?code=404", StatusPolicy: p})
	p.RejectOn[0] = 500
	if got := ch.Send(context.Background(), attempt(1)); got.Result != machine.OutcomeRefused {
		t.Errorf("after the caller changed its slice: %+v, want 404 still refused", got)
	}
}

// The receiver sees a request its verifier accepts, with the same
// webhook-id on every attempt, courier's headers, and no cookie even after
// it set one; the redirect target is never reached.
func TestRequestsAreSignedAndPlain(t *testing.T) {
	v, err := webhook.NewVerifier([]string{secret}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		id, attempt, seq, stream, ua, ct, cookie string
		verr                                     error
	}
	var mu sync.Mutex
	var got []seen
	var redirectedHits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/hooks", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Header.Get("webhook-id"), r.Header.Get("courier-attempt"), r.Header.Get("courier-sequence"),
			r.Header.Get("courier-stream"), r.UserAgent(), r.Header.Get("Content-Type"), r.Header.Get("Cookie"), v.Verify(r.Header, body)})
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc"})
		if r.Header.Get("courier-attempt") == "3" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { redirectedHits.Add(1) })
	s := httptest.NewServer(mux)
	defer s.Close()
	ch := newChannel(t, Config{Endpoint: s.URL + "/hooks"})
	for n := 1; n <= 3; n++ {
		ch.Send(context.Background(), attempt(n))
	}
	if len(got) != 3 {
		t.Fatalf("receiver saw %d requests, want 3", len(got))
	}
	for i, g := range got {
		if g.verr != nil {
			t.Errorf("attempt %d: receiver's Verify: %v", i+1, g.verr)
		}
		want := seen{"evt_1", strconv.Itoa(i + 1), "7", "orders", userAgent(), "application/json", "", nil}
		if g != want {
			t.Errorf("attempt %d: receiver saw %+v, want %+v", i+1, g, want)
		}
	}
	if !strings.HasPrefix(userAgent(), "courier/") {
		t.Errorf("User-Agent %q does not name courier", userAgent())
	}
	if n := redirectedHits.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

func TestRetryAfterReachesTheOutcome(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		code   int
		header string
		want   time.Duration
	}{
		{429, "120", 120 * time.Second},
		{503, now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{503, now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{429, "soon", 0},
		{500, "-5", 0},
		{404, "120", 120 * time.Second}, // a retried 4xx passes it on too
		{302, "60", time.Minute},
		{200, "120", 0}, // a hint on success means nothing
		{410, "120", 0}, // nor on a refusal
	}
	for _, c := range cases {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", c.header)
			w.WriteHeader(c.code)
		}))
		ch := newChannel(t, Config{Endpoint: s.URL, Now: func() time.Time { return now }})
		if got := ch.Send(context.Background(), attempt(1)); got.RetryAfter != c.want {
			t.Errorf("HTTP %d Retry-After %q: got %s, want %s", c.code, c.header, got.RetryAfter, c.want)
		}
		s.Close()
	}
}

func TestTimeouts(t *testing.T) {
	release := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer s.Close()
	defer close(release)
	ch := newChannel(t, Config{Endpoint: s.URL, AttemptTimeout: 100 * time.Millisecond})
	start := time.Now()
	got := ch.Send(context.Background(), attempt(1))
	if got.Result != machine.OutcomeTimedOut || got.Status != 0 {
		t.Errorf("slow receiver: %+v, want timeout", got)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the attempt took %s despite a 100ms AttemptTimeout", el)
	}
	if got := ch.Probe(context.Background(), "orders"); got.Result != machine.OutcomeTimedOut {
		t.Errorf("slow probe: %+v, want timeout", got)
	}
	// The caller's context ends the attempt too.
	ch = newChannel(t, Config{Endpoint: s.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if got := ch.Send(ctx, attempt(1)); got.Result != machine.OutcomeTimedOut {
		t.Errorf("caller's deadline: %+v, want timeout", got)
	}
}

func TestConnectionAndTLSErrorsAreRetryable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	got := newChannel(t, Config{Endpoint: "http://" + addr + "/"}).Send(context.Background(), attempt(1))
	if got.Result != machine.OutcomeFailed || !strings.Contains(got.Detail, "refused") {
		t.Errorf("connection refused: %+v, want failed", got)
	}

	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer s.Close()
	got = newChannel(t, Config{Endpoint: s.URL}).Send(context.Background(), attempt(1))
	if got.Result != machine.OutcomeFailed || !strings.Contains(got.Detail, "certificate") {
		t.Errorf("untrusted certificate: %+v, want failed naming the certificate", got)
	}
	tlsCfg := s.Client().Transport.(*http.Transport).TLSClientConfig
	got = newChannel(t, Config{Endpoint: s.URL, TLS: tlsCfg}).Send(context.Background(), attempt(1))
	if got.Result != machine.OutcomeDelivered {
		t.Errorf("trusted certificate: %+v, want delivered", got)
	}
}

// A large response body is read only up to MaxResponseBytes: the server's
// writes fail once the client stops reading and hangs up.
func TestResponseBodyIsBounded(t *testing.T) {
	wrote := make(chan int64, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		var n int64
		for n < 256<<20 {
			k, err := w.Write(chunk)
			n += int64(k)
			if err != nil {
				break
			}
		}
		wrote <- n
	}))
	defer s.Close()
	got := newChannel(t, Config{Endpoint: s.URL}).Send(context.Background(), attempt(1))
	if got.Result != machine.OutcomeDelivered {
		t.Fatalf("got %+v, want delivered", got)
	}
	select {
	case n := <-wrote:
		if n >= 256<<20 {
			t.Errorf("the client read the whole %d-byte body", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server was still writing the body 30s after the client hung up")
	}
}

func TestBodyLimit(t *testing.T) {
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer s.Close()
	ch := newChannel(t, Config{Endpoint: s.URL})
	if err := ch.Check("orders", "evt_1", make([]byte, DefaultMaxBodyBytes)); err != nil {
		t.Errorf("Check of exactly 1 MiB: %v", err)
	}
	big := make([]byte, DefaultMaxBodyBytes+1)
	err := ch.Check("orders", "evt_1", big)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1048577 bytes") || !strings.Contains(err.Error(), "MaxBodyBytes is 1048576") {
		t.Errorf("Check of 1 MiB + 1: %v, want ErrTooLarge with both figures", err)
	}
	a := attempt(1)
	a.Payload = big
	if got := ch.Send(context.Background(), a); got.Result != machine.OutcomeRefused || hits.Load() != 0 {
		t.Errorf("Send of an oversize payload: %+v with %d requests; want refused, none sent", got, hits.Load())
	}
	for _, bad := range []struct{ stream, id string }{{"orders", "a b"}, {"or ders", "evt"}, {"orders", ""}} {
		if err := ch.Check(bad.stream, bad.id, nil); err == nil {
			t.Errorf("Check(%q, %q) accepted", bad.stream, bad.id)
		}
	}
	only := newChannel(t, Config{Endpoints: map[string]string{"a": s.URL}})
	if err := only.Check("b", "evt", nil); !errors.Is(err, ErrNoEndpoint) {
		t.Errorf("Check for a stream with no endpoint: %v", err)
	}
}

// Without AllowAddrs the same loopback server is refused at dial time,
// and so is a name that resolves to cloud metadata; nothing is sent.
func TestSSRFRefusedForGood(t *testing.T) {
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer s.Close()
	ch := newChannel(t, Config{Endpoint: s.URL, AllowAddrs: []netip.Prefix{}})
	got := ch.Send(context.Background(), attempt(1))
	if got.Result != machine.OutcomeRefused || !strings.Contains(got.Detail, "loopback") {
		t.Errorf("loopback without the allow-list: %+v, want refused naming loopback", got)
	}
	if got := ch.Probe(context.Background(), "orders"); got.Result != machine.OutcomeRefused {
		t.Errorf("probe to loopback without the allow-list: %+v", got)
	}
	port := strings.Split(s.Listener.Addr().String(), ":")[1]
	for _, host := range []string{"2130706433", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]"} {
		o := newChannel(t, Config{Endpoint: "http://" + host + ":" + port + "/", AllowAddrs: []netip.Prefix{}}).Send(context.Background(), attempt(1))
		if o.Result != machine.OutcomeRefused || !strings.Contains(o.Detail, "loopback") {
			t.Errorf("%s: %+v, want refused as loopback", host, o)
		}
	}
	meta := newChannel(t, Config{Endpoint: "http://metadata.test/latest", AllowAddrs: []netip.Prefix{},
		Resolver: resolver{netip.MustParseAddr("169.254.169.254")}})
	if got := meta.Send(context.Background(), attempt(1)); got.Result != machine.OutcomeRefused || !strings.Contains(got.Detail, "link-local") {
		t.Errorf("a name resolving to 169.254.169.254: %+v", got)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("server got %d requests", n)
	}
}

type resolver []netip.Addr

func (r resolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) { return r, nil }

// HTTP_PROXY is ignored by default and used only when asked.
func TestProxyFromEnvironmentIsOptIn(t *testing.T) {
	var proxied, direct atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { proxied.Add(1) }))
	defer proxy.Close()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { direct.Add(1) }))
	defer s.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	// A name, not 127.0.0.1: Go never proxies requests to loopback literals.
	endpoint := "http://hooks.test:" + strings.Split(s.Listener.Addr().String(), ":")[1] + "/"
	r := resolver{netip.MustParseAddr("127.0.0.1")}
	if got := newChannel(t, Config{Endpoint: endpoint, Resolver: r}).Send(context.Background(), attempt(1)); got.Result != machine.OutcomeDelivered {
		t.Fatalf("direct: %+v", got)
	}
	if proxied.Load() != 0 || direct.Load() != 1 {
		t.Fatalf("default config: proxy got %d, server %d; want 0 and 1", proxied.Load(), direct.Load())
	}
	withProxy := newChannel(t, Config{Endpoint: endpoint, Resolver: r, ProxyFromEnvironment: true})
	if withProxy.client.Transport.(*http.Transport).Proxy == nil {
		t.Fatal("ProxyFromEnvironment: the transport has no Proxy")
	}
	// net/http reads the environment once per process: under -count>1 it
	// still holds the first run's proxy, which is closed now.
	probe, _ := http.NewRequest(http.MethodPost, endpoint, nil)
	if u, _ := http.ProxyFromEnvironment(probe); u == nil || u.String() != proxy.URL {
		t.Skipf("net/http cached an earlier HTTP_PROXY (%v); the opt-in half needs a fresh process", u)
	}
	withProxy.Send(context.Background(), attempt(1))
	if proxied.Load() != 1 {
		t.Errorf("ProxyFromEnvironment: proxy got %d requests, want 1", proxied.Load())
	}
}

func TestProbe(t *testing.T) {
	var mu sync.Mutex
	var method, path, probeHeader string
	code := 204
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		method, path, probeHeader = r.Method, r.URL.Path, r.Header.Get(HeaderProbe)
		w.WriteHeader(code)
	}))
	defer s.Close()
	ch := newChannel(t, Config{Endpoint: s.URL + "/hooks?token=x"})
	if got := ch.Probe(context.Background(), "orders"); got.Result != machine.OutcomeDelivered || method != "HEAD" || path != "/hooks" || probeHeader != "1" {
		t.Errorf("default probe: %+v, %s %s probe=%q", got, method, path, probeHeader)
	}
	ch = newChannel(t, Config{Endpoint: s.URL + "/hooks", ProbeMethod: "GET", ProbePath: "/healthz"})
	for _, c := range []struct {
		code int
		want machine.Outcome
	}{{200, machine.OutcomeDelivered}, {503, machine.OutcomeFailed}, {429, machine.OutcomeFailed}, {404, machine.OutcomeFailed}, {301, machine.OutcomeFailed}, {410, machine.OutcomeRefused}} {
		mu.Lock()
		code = c.code
		mu.Unlock()
		got := ch.Probe(context.Background(), "orders")
		if got.Result != c.want || method != "GET" || path != "/healthz" {
			t.Errorf("probe answered %d: %+v via %s %s, want %v via GET /healthz", c.code, got, method, path, c.want)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	good := Config{Endpoint: "https://hooks.example.com/in", Secrets: []string{secret}, Logger: quiet}
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Endpoint = "" }, "Endpoint is empty"},
		{func(c *Config) { c.Endpoint = "ftp://x/" }, `Endpoint: scheme "ftp"`},
		{func(c *Config) { c.Endpoint = "https:///path" }, "Endpoint: no host"},
		{func(c *Config) { c.Endpoint = "https://u:p@x/" }, "Endpoint: credentials"},
		{func(c *Config) { c.Endpoint = "https://x/#frag" }, "Endpoint: a fragment"},
		{func(c *Config) { c.Endpoint = "https://x/%zz" }, "Endpoint: not a URL"},
		{func(c *Config) { c.Endpoints = map[string]string{"s": "nope"} }, `Endpoints["s"]`},
		{func(c *Config) { c.Secrets = nil }, "Secrets: "},
		{func(c *Config) { c.Secrets = []string{"whsec_short"} }, "Secrets: secret 0"},
		{func(c *Config) { c.AttemptTimeout = -1 }, "AttemptTimeout"},
		{func(c *Config) { c.MaxBodyBytes = -1 }, "MaxBodyBytes"},
		{func(c *Config) { c.MaxResponseBytes = -1 }, "MaxResponseBytes"},
		{func(c *Config) { c.ProbePath = "healthz" }, "ProbePath"},
		{func(c *Config) { c.ProbeMethod = "GE T" }, "ProbeMethod"},
		{func(c *Config) { c.ContentType = "a\r\nb" }, "ContentType"},
		{func(c *Config) { c.AllowAddrs = []netip.Prefix{{}} }, "AllowAddrs[0]"},
		{func(c *Config) { c.StatusPolicy = &StatusPolicy{RejectOn: []int{404, 204}} }, "StatusPolicy.RejectOn[1]: 204 is a success"},
		{func(c *Config) { c.StatusPolicy = &StatusPolicy{RejectOn: []int{200}} }, "StatusPolicy.RejectOn[0]: 200 is a success"},
		{func(c *Config) { c.StatusPolicy = &StatusPolicy{RejectOn: []int{99}} }, "StatusPolicy.RejectOn[0]: 99 is not an HTTP status"},
		{func(c *Config) { c.StatusPolicy = &StatusPolicy{RejectOn: []int{410, 600}} }, "StatusPolicy.RejectOn[1]: 600 is not an HTTP status"},
	}
	for _, c := range cases {
		cfg := good
		c.edit(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v", c.want, err)
		}
		if err != nil && strings.Contains(err.Error(), secret[6:]) {
			t.Errorf("error repeats the secret: %v", err)
		}
	}
	if _, err := New(good); err != nil {
		t.Errorf("good config: %v", err)
	}
}

// The allow-list is loud: New logs a warning naming the ranges.
func TestAllowListIsLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	if _, err := New(Config{Endpoint: "http://x/", Secrets: []string{secret}, Logger: log, AllowAddrs: loopback}); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "127.0.0.0/8") {
		t.Errorf("log = %q, want a warning naming 127.0.0.0/8", out)
	}
	buf.Reset()
	if _, err := New(Config{Endpoint: "http://x/", Secrets: []string{secret}, Logger: log}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("a default config logged %q", buf.String())
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{"3600", time.Hour, true},
		{"99999999999999999999999", MaxRetryAfter, true},
		{"Sun, 01 Mar 2026 12:01:00 GMT", time.Minute, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},
		{"Sun Mar  1 12:01:00 2026", time.Minute, true},
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},
		{"Sun, 01 Mar 2036 11:00:00 GMT", MaxRetryAfter, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{" 5", 0, false},
		{"5 ", 0, false},
		{"+5", 0, false},
		{"tomorrow", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestDetailCarriesNoSecretOrURLToken(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	got := newChannel(t, Config{Endpoint: "http://" + addr + "/in?token=sekrit"}).Send(context.Background(), attempt(1))
	if strings.Contains(got.Detail, "sekrit") || strings.Contains(got.Detail, secret[6:]) {
		t.Errorf("Detail leaks: %q", got.Detail)
	}
	if len(got.Detail) > channel.MaxDetailBytes {
		t.Errorf("Detail is %d bytes", len(got.Detail))
	}
}

func TestCheckRejectStatus(t *testing.T) {
	for _, code := range []int{100, 199, 300, 399, 400, 410, 499, 500, 599} {
		if err := CheckRejectStatus(code); err != nil {
			t.Errorf("CheckRejectStatus(%d) = %v, want nil", code, err)
		}
	}
	for _, code := range []int{-1, 0, 99, 200, 204, 299, 600, 1000} {
		if err := CheckRejectStatus(code); err == nil {
			t.Errorf("CheckRejectStatus(%d) = nil, want an error", code)
		}
	}
}

// roundTripper is an http.RoundTripper made of a function.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Config.Transport carries the requests instead of a dialer (no SSRF
// check: the endpoint here is a private address New would otherwise
// refuse at dial time), signed as always on the channel's clock, and the
// answers are classified by the same table: a 429 is a failure with its
// Retry-After, an error after the request is a failure.
func TestTransportCarriesSignedRequests(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var got *http.Request
	var body []byte
	answer := func(r *http.Request) (*http.Response, error) {
		got = r
		body, _ = io.ReadAll(r.Body)
		h := http.Header{"Retry-After": {"3"}}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: r}, nil
	}
	ch := newChannel(t, Config{Endpoint: "http://10.0.0.1/hooks", AllowAddrs: []netip.Prefix{},
		Now: func() time.Time { return now }, Transport: roundTripper(func(r *http.Request) (*http.Response, error) { return answer(r) })})
	o := ch.Send(context.Background(), attempt(2))
	if o.Result != machine.OutcomeFailed || o.RetryAfter != 3*time.Second || o.Status != 429 {
		t.Fatalf("429 through the transport: got %+v, want a failure with Retry-After 3s", o)
	}
	v, err := webhook.NewVerifier([]string{secret}, 0, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(got.Header, body); err != nil {
		t.Errorf("the request through the transport does not verify: %v", err)
	}
	if id := got.Header.Get(webhook.HeaderID); id != "evt_1" {
		t.Errorf("webhook-id %q, want evt_1", id)
	}
	answer = func(*http.Request) (*http.Response, error) { return nil, errors.New("connection reset by peer") }
	if o := ch.Send(context.Background(), attempt(3)); o.Result != machine.OutcomeFailed {
		t.Errorf("a reset through the transport: got %+v, want a failure", o)
	}
}

// TestCustomHeaders: Config.Headers reach every request and probe, the
// channel's own headers win over any of the same name, and New refuses a
// header that would break every request.
func TestCustomHeaders(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	c := newChannel(t, Config{Endpoint: srv.URL, Headers: map[string]string{
		"X-Tenant": "acme", "authorization": "Bearer t0k", "Content-Type": "text/plain", webhook.HeaderID: "forged"}})
	if out := c.Send(t.Context(), attempt(1)); out.Result != machine.OutcomeDelivered {
		t.Fatalf("Send = %v", out)
	}
	if out := c.Probe(t.Context(), "orders"); out.Result != machine.OutcomeDelivered {
		t.Fatalf("Probe = %v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, h := range got {
		if h.Get("X-Tenant") != "acme" || h.Get("Authorization") != "Bearer t0k" {
			t.Errorf("request %d: X-Tenant %q, Authorization %q; want the configured values", i, h.Get("X-Tenant"), h.Get("Authorization"))
		}
	}
	if ct, id := got[0].Get("Content-Type"), got[0].Get(webhook.HeaderID); ct != DefaultContentType || id != "evt_1" {
		t.Errorf("Content-Type %q, webhook-id %q; want the channel's own, %q and evt_1", ct, id, DefaultContentType)
	}
	for _, bad := range []map[string]string{{"X Bad": "v"}, {"X-Ok": "a\r\nInjected: 1"}, {"": "v"}, {"X-Ok": "a\x00"}} {
		if _, err := New(Config{Endpoint: srv.URL, Secrets: []string{secret}, Headers: bad, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "Headers") {
			t.Errorf("New with Headers %q: err = %v; want one naming Headers", bad, err)
		}
	}
}

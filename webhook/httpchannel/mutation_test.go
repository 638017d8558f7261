// This file proves details of the HTTP channel that the table tests leave
// implicit: a caller's TLS MinVersion is kept (never lowered to the
// default), an event without a sequence sends no courier-sequence header,
// the operator's detail keeps a redirect target's spaces and masks only
// control bytes, the User-Agent carries courier's module version as
// the build recorded it, and idle connections are not kept for ever.
package httpchannel

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook"
)

func TestTLSMinVersionIsKept(t *testing.T) {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s.TLS = &tls.Config{MaxVersion: tls.VersionTLS12}
	s.StartTLS()
	defer s.Close()
	trusted := s.Client().Transport.(*http.Transport).TLSClientConfig
	// The server speaks TLS 1.2 at most: a channel that asks for 1.3 must
	// not reach it, and one that leaves MinVersion to courier (1.2) must.
	tls13 := trusted.Clone()
	tls13.MinVersion = tls.VersionTLS13
	if got := newChannel(t, Config{Endpoint: s.URL, TLS: tls13}).Send(context.Background(), attempt(1)); got.Result == machine.OutcomeDelivered {
		t.Errorf("MinVersion TLS 1.3 against a TLS 1.2 server: %+v, want not delivered", got)
	}
	unset := trusted.Clone()
	unset.MinVersion = 0
	if got := newChannel(t, Config{Endpoint: s.URL, TLS: unset}).Send(context.Background(), attempt(1)); got.Result != machine.OutcomeDelivered {
		t.Errorf("MinVersion unset against a TLS 1.2 server: %+v, want delivered", got)
	}
}

func TestNoSequenceSendsNoSequenceHeader(t *testing.T) {
	seqs := make(chan []string, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seqs <- r.Header.Values(webhook.HeaderSequence)
	}))
	defer s.Close()
	a := attempt(1)
	a.Seq = 0
	if got := newChannel(t, Config{Endpoint: s.URL}).Send(context.Background(), a); got.Result != machine.OutcomeDelivered {
		t.Fatalf("Send: %+v", got)
	}
	if got := <-seqs; len(got) != 0 {
		t.Errorf("an event without a sequence sent %s: %q, want no such header", webhook.HeaderSequence, got)
	}
}

func TestSanitizeMasksOnlyControlBytes(t *testing.T) {
	in := "https://x.example/a b~\x00\x1f\x7f\n"
	want := "https://x.example/a b~????"
	if got := sanitize(in); got != want {
		t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
	}
}

func TestUserAgentCarriesTheModuleVersion(t *testing.T) {
	// The package doc's rule, read from the build info independently: the
	// main module's version when courier is the program (as in this test
	// binary), a dependency's when it is a library, "devel" when unknown.
	want := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := ""
		if bi.Main.Path == "github.com/courierlab/courier" {
			v = bi.Main.Version
		}
		if v != "" && v != "(devel)" {
			want = v
		}
	}
	if got := version(); got != want {
		t.Errorf("version() = %q, want %q", got, want)
	}
	if ua := userAgent(); !strings.HasPrefix(ua, "courier/"+want+" ") || strings.Contains(ua, "(devel)") {
		t.Errorf("User-Agent %q, want courier/%s and no \"(devel)\"", ua, want)
	}
}

func TestValidMethodCharacterEdges(t *testing.T) {
	// Each end of each range of RFC 9110's tchar, and the bytes just
	// outside them; '!' is the first of the listed symbols.
	for _, ok := range []string{"A", "Z", "a", "z", "0", "9", "!", "~", "`", "PURGE"} {
		if !validMethod(ok) {
			t.Errorf("validMethod(%q) = false, want true", ok)
		}
	}
	for _, bad := range []string{"", "@", "[", "{", "/", ":", " ", "GET\n"} {
		if validMethod(bad) {
			t.Errorf("validMethod(%q) = true, want false", bad)
		}
	}
}

func TestRetryAfterIsCappedAtAWeek(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const week = 7 * 24 * time.Hour
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"604800", week},
		{"604801", week},
		{now.Add(week).Format(http.TimeFormat), week},
		{now.Add(week + time.Hour).Format(http.TimeFormat), week},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Format(http.TimeFormat), 0},
	}
	for _, c := range cases {
		if got, ok := ParseRetryAfter(c.in, now); !ok || got != c.want {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, true", c.in, got, ok, c.want)
		}
	}
}

func TestRedirectRangeEdgesNameTheTarget(t *testing.T) {
	// 300 and 399 are the ends of the 3xx range: both are redirects whose
	// target the operator is told; 299 and 400 are not.
	s := statusServer(t)
	checkStatus(t, s, nil, 300, machine.OutcomeFailed, "HTTP 300: redirect not followed, to https://elsewhere.example/hooks")
	checkStatus(t, s, nil, 399, machine.OutcomeFailed, "HTTP 399: redirect not followed, to https://elsewhere.example/hooks")
	for _, code := range []int{299, 400} {
		ch := newChannel(t, Config{Endpoint: s.URL + "/hooks?code=" + strconv.Itoa(code)})
		if got := ch.Send(context.Background(), attempt(1)); strings.Contains(got.Detail, "redirect") {
			t.Errorf("HTTP %d: detail %q speaks of a redirect", code, got.Detail)
		}
	}
}

func TestTLSMinVersionFloorIsTLS12(t *testing.T) {
	base := Config{Endpoint: "https://example.com/hooks", Secrets: []string{secret}, Logger: quiet}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := base
		cfg.TLS = &tls.Config{MinVersion: v}
		if _, err := New(cfg); err != nil {
			t.Errorf("TLS.MinVersion %s: %v", tls.VersionName(v), err)
		}
	}
	cfg := base
	cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS11}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "TLS.MinVersion") {
		t.Errorf("TLS.MinVersion TLS 1.1: %v, want an error naming TLS.MinVersion", err)
	}
}

func TestIdleConnectionsAreDroppedInMinutes(t *testing.T) {
	// A channel keeps a pool per endpoint; an endpoint that stops
	// receiving events must not hold its connections until Close. Watching
	// a real connection close would take the whole idle timeout, so this
	// reads the bound off the channel's own transport.
	tr, ok := newChannel(t, Config{Endpoint: "https://example.com/hooks"}).client.Transport.(*http.Transport)
	if !ok {
		t.Fatal("the channel's own transport is not an *http.Transport")
	}
	if d := tr.IdleConnTimeout; d <= 0 || d > 5*time.Minute {
		t.Errorf("IdleConnTimeout %s; want an idle connection dropped within 5 minutes (0 keeps it for ever)", d)
	}
}

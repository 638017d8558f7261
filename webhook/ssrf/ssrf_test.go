// Tests that the policy refuses every non-public range and every IPv4
// address hidden in IPv6, that the Dialer enforces it at connect time
// (numeric host forms, IPv6 literals and a rebinding resolver included)
// against a real loopback server that the allow-list proves reachable, and
// that a refused dial never sends a byte.
package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	refused := map[string]string{
		"127.0.0.1":                            "loopback",
		"127.255.255.254":                      "loopback",
		"10.1.2.3":                             "private",
		"172.16.0.1":                           "private",
		"172.31.255.255":                       "private",
		"192.168.1.1":                          "private",
		"169.254.169.254":                      "link-local",
		"100.64.0.1":                           "CGNAT",
		"100.127.255.255":                      "CGNAT",
		"0.0.0.0":                              "unspecified",
		"255.255.255.255":                      "broadcast",
		"224.0.0.1":                            "multicast",
		"239.255.255.250":                      "multicast",
		"240.0.0.1":                            "reserved",
		"192.0.2.1":                            "documentation",
		"198.51.100.7":                         "documentation",
		"203.0.113.9":                          "documentation",
		"198.18.0.1":                           "benchmarking",
		"192.0.0.8":                            "IETF",
		"::":                                   "unspecified",
		"::1":                                  "loopback",
		"fe80::1":                              "link-local",
		"fe80::1%eth0":                         "link-local",
		"fc00::1":                              "unique-local",
		"fd12:3456::1":                         "unique-local",
		"ff02::1":                              "multicast",
		"2001:db8::1":                          "documentation",
		"3fff::1":                              "documentation",
		"::ffff:127.0.0.1":                     "IPv4-mapped",
		"::ffff:169.254.169.254":               "IPv4-mapped",
		"::ffff:10.0.0.1":                      "IPv4-mapped",
		"::127.0.0.1":                          "IPv4-compatible",
		"::8.8.8.8":                            "IPv4-compatible",
		"2002:7f00:1::":                        "6to4",
		"2002:808:808::1":                      "6to4",
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": "Teredo",
		"64:ff9b::7f00:1":                      "NAT64",
		"64:ff9b::a9fe:a9fe":                   "NAT64",
		"64:ff9b:1::808:808":                   "local-use NAT64",
		"100::1":                               "outside 2000::/3",
		"fec0::1":                              "outside 2000::/3",
	}
	for s, why := range refused {
		err := Check(netip.MustParseAddr(s))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), why) {
			t.Errorf("Check(%s) = %v, want a refusal saying %q", s, err, why)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.215.14", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "169.253.255.255", "2606:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::808:808"} {
		if err := Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", s, err)
		}
	}
}

func TestParseNumericHost(t *testing.T) {
	cases := map[string]string{
		"2130706433":    "127.0.0.1",
		"0177.0.0.1":    "127.0.0.1",
		"0x7f.0.0.1":    "127.0.0.1",
		"0x7f000001":    "127.0.0.1",
		"127.1":         "127.0.0.1",
		"0177.1":        "127.0.0.1",
		"017700000001":  "127.0.0.1",
		"169.254.43518": "169.254.169.254",
		"2852039166":    "169.254.169.254",
		"10.0.1":        "10.0.0.1",
		"1.2.3.4":       "1.2.3.4",
		"0":             "0.0.0.0",
	}
	for in, want := range cases {
		got, ok := ParseNumericHost(in)
		if !ok || got.String() != want {
			t.Errorf("ParseNumericHost(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "example.com", "1.2.3.4.5", "256.1.1.1", "4294967296", "1.2.65536", "08.1.1.1", "0x", "face", "1..2", "a.b"} {
		if got, ok := ParseNumericHost(in); ok {
			t.Errorf("ParseNumericHost(%q) = %v, want not numeric", in, got)
		}
	}
}

// server is a real loopback HTTP server that counts the requests it got.
func server(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(s.Close)
	return s, &hits
}

func client(d *Dialer) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil}, Timeout: 5 * time.Second}
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// Every spelling of the loopback server is refused at dial time, and the
// same spellings reach it when loopback is allowed: the refusal is the
// policy's, not a failure to reach.
func TestDialerRefusesLoopbackSpellings(t *testing.T) {
	s, hits := server(t)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	hosts := []string{"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "127.1", "localhost"}
	for _, h := range hosts {
		u := fmt.Sprintf("http://%s:%d/", h, port)
		_, err := client(&Dialer{}).Get(u)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("GET %s without the allow-list: %v, want ErrRefused", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests through refused dials", n)
	}
	for _, h := range hosts {
		u := fmt.Sprintf("http://%s:%d/", h, port)
		resp, err := client(&Dialer{Allow: loopback}).Get(u)
		if err != nil {
			t.Errorf("GET %s with loopback allowed: %v", u, err)
			continue
		}
		resp.Body.Close()
	}
	if n := hits.Load(); n != int64(len(hosts)) {
		t.Errorf("the allowed dials made %d requests, want %d", n, len(hosts))
	}
}

// IPv6 literals that point at loopback or private space are refused in
// the Control hook. (No listener is needed: the refusal comes before connect.)
func TestDialerRefusesIPv6Literals(t *testing.T) {
	for _, h := range []string{"[::1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[fe80::1%25lo]", "[fc00::1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::1]", "[::]"} {
		u := "http://" + h + ":9/"
		_, err := client(&Dialer{}).Get(u)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("GET %s: %v, want ErrRefused", u, err)
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" {
			t.Errorf("GET %s: the refusal did not come from the dial: %v", u, err)
		}
	}
}

// rebinder answers public the first time and private after: what a hostile
// DNS server does to beat a check made before the request.
type rebinder struct {
	calls   atomic.Int64
	public  netip.Addr
	private netip.Addr
}

func (r *rebinder) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if r.calls.Add(1) == 1 {
		return []netip.Addr{r.public}, nil
	}
	return []netip.Addr{r.private}, nil
}

var errStopped = errors.New("test: stopped before connecting to a public address")

func TestDialerDefeatsRebinding(t *testing.T) {
	s, hits := server(t)
	port := s.Listener.Addr().(*net.TCPAddr).Port
	for _, private := range []string{"127.0.0.1", "169.254.169.254", "10.0.0.1", "::ffff:127.0.0.1"} {
		r := &rebinder{public: netip.MustParseAddr("93.184.215.14"), private: netip.MustParseAddr(private)}
		var allowedPublic atomic.Int64
		d := &Dialer{Resolver: r, beforeConnect: func(ap netip.AddrPort) error {
			if ap.Addr() == r.public {
				allowedPublic.Add(1)
				return errStopped // never send a packet to the internet from a test
			}
			return nil
		}}
		u := fmt.Sprintf("http://hooks.rebind.test:%d/", port)
		// 1. A check made before the request sees the public address and passes.
		if _, err := client(d).Get(u); !errors.Is(err, errStopped) || allowedPublic.Load() != 1 {
			t.Fatalf("%s: first lookup (public): %v, policy allowed it %d times; want it allowed", private, err, allowedPublic.Load())
		}
		// 2. The dial resolves again, gets the private address, and refuses it.
		_, err := client(d).Get(u)
		if !errors.Is(err, ErrRefused) {
			t.Errorf("%s: rebound lookup: %v, want ErrRefused at dial", private, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
}

// A host that resolves to several addresses is dialled address by address,
// each one checked: a private address among public ones is never used.
func TestDialerChecksEveryAddress(t *testing.T) {
	s, hits := server(t)
	u, _ := url.Parse(s.URL)
	var tried []string
	d := &Dialer{Resolver: fixed{netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("127.0.0.1")}, beforeConnect: func(ap netip.AddrPort) error {
		tried = append(tried, ap.Addr().String())
		return nil
	}}
	_, err := client(d).Get("http://multi.test:" + u.Port() + "/")
	if !errors.Is(err, ErrRefused) || len(tried) != 0 || hits.Load() != 0 {
		t.Fatalf("GET: %v; connected to %v, server hits %d; want all refused", err, tried, hits.Load())
	}
	d.Allow = loopback[:1]
	resp, err := client(d).Get("http://multi.test:" + u.Port() + "/")
	if err != nil {
		t.Fatalf("GET with loopback allowed: %v", err)
	}
	resp.Body.Close()
	if fmt.Sprint(tried) != "[127.0.0.1]" {
		t.Errorf("connected to %v, want only 127.0.0.1 (10.0.0.7 refused)", tried)
	}
}

type fixed []netip.Addr

func (f fixed) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) { return f, nil }

package ssrf

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrRefused is wrapped by every refusal of an address.
var ErrRefused = errors.New("address refused by SSRF policy")

type rule struct {
	prefix netip.Prefix
	why    string
}

func rules(list ...string) []rule {
	out := make([]rule, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, rule{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// IPv4 ranges that are not public unicast (IANA special-purpose registry).
var v4Refused = rules(
	"0.0.0.0/8", "unspecified (this network)",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "shared address space (CGNAT)",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local (cloud metadata lives here)",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "IETF protocol assignments",
	"192.0.2.0/24", "documentation (TEST-NET-1)",
	"192.88.99.0/24", "6to4 relay anycast (deprecated)",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation (TEST-NET-2)",
	"203.0.113.0/24", "documentation (TEST-NET-3)",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// IPv6 ranges refused outright, inside 2000::/3 (everything outside it is
// refused as not global unicast). The transition ranges carry an IPv4
// address that the policy cannot see through reliably, and no webhook
// receiver needs them.
var v6Refused = rules(
	"2001::/32", "Teredo (IPv4 embedded in IPv6)",
	"2001:2::/48", "benchmarking",
	"2001:10::/28", "ORCHID",
	"2001:20::/28", "ORCHIDv2",
	"2001:db8::/32", "documentation",
	"2002::/16", "6to4 (IPv4 embedded in IPv6)",
	"3fff::/20", "documentation",
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	compat         = netip.MustParsePrefix("::/96")
)

// Check reports why a may not be dialled, or nil if it may. An IPv4-mapped
// address (::ffff:a.b.c.d) and a well-known-prefix NAT64 address
// (64:ff9b::a.b.c.d) are judged by the IPv4 address they carry; the other
// IPv4-in-IPv6 forms (compatible, 6to4, Teredo, local NAT64) are refused.
func Check(a netip.Addr) error {
	a = a.WithZone("")
	if a.Is4In6() {
		if err := Check(a.Unmap()); err != nil {
			return fmt.Errorf("%w: %s is IPv4-mapped %s", ErrRefused, a, explain(err))
		}
		return nil
	}
	if a.Is4() {
		for _, r := range v4Refused {
			if r.prefix.Contains(a) {
				return fmt.Errorf("%w: %s is %s", ErrRefused, a, r.why)
			}
		}
		return nil
	}
	if !a.IsValid() {
		return fmt.Errorf("%w: no address", ErrRefused)
	}
	if nat64.Contains(a) {
		b := a.As16()
		if err := Check(netip.AddrFrom4([4]byte(b[12:]))); err != nil {
			return fmt.Errorf("%w: %s is NAT64 of %s", ErrRefused, a, explain(err))
		}
		return nil
	}
	if compat.Contains(a) {
		return fmt.Errorf("%w: %s is %s", ErrRefused, a, kind6(a))
	}
	if !globalUnicast6.Contains(a) {
		return fmt.Errorf("%w: %s is %s", ErrRefused, a, kind6(a))
	}
	for _, r := range v6Refused {
		if r.prefix.Contains(a) {
			return fmt.Errorf("%w: %s is %s", ErrRefused, a, r.why)
		}
	}
	return nil
}

// explain strips the sentinel's text from a nested refusal.
func explain(err error) string {
	s := err.Error()
	if _, after, ok := strings.Cut(s, ": "); ok {
		return "(" + after + ")"
	}
	return s
}

func kind6(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case compat.Contains(a):
		return "IPv4-compatible (IPv4 embedded in IPv6, deprecated)"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case netip.MustParsePrefix("fc00::/7").Contains(a):
		return "unique-local"
	case netip.MustParsePrefix("64:ff9b:1::/48").Contains(a):
		return "local-use NAT64 (IPv4 embedded in IPv6)"
	}
	return "not global unicast (outside 2000::/3)"
}

// ParseNumericHost reads the numeric host forms that inet_aton and many
// URL parsers accept but net/netip does not: a 32-bit decimal
// ("2130706433"), octal or hex parts ("0177.0.0.1", "0x7f.1"), and fewer
// than four parts ("127.1"). It returns the IPv4 address such a resolver
// would connect to, and false if host is not such a form.
func ParseNumericHost(host string) (netip.Addr, bool) {
	if host == "" || strings.Trim(host, "0123456789abcdefxABCDEFX.") != "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	// The last part fills the remaining bytes; the others are one byte each.
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n := uint32(last)
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= uint32(v) << (24 - 8*i)
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// Resolver looks hosts up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer dials TCP with every address checked at the last moment: in the
// socket's Control hook, after resolution and before connect, so the
// address checked is the address connected to and DNS rebinding cannot
// slip a private address in between. Use its DialContext as an
// http.Transport's.
type Dialer struct {
	// Allow lists prefixes dialled even though Check refuses them (for
	// example 127.0.0.0/8 for local development). Empty: none.
	Allow []netip.Prefix
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds one connect; 0 means none beyond the context's.
	Timeout time.Duration

	// beforeConnect, if set, runs after the policy allowed an address and
	// before connect; tests use it to stop short of a public address.
	beforeConnect func(netip.AddrPort) error
}

// Permit reports whether a may be dialled under d's policy.
func (d *Dialer) Permit(a netip.Addr) error {
	err := Check(a)
	if err == nil {
		return nil
	}
	for _, p := range d.Allow {
		if p.Contains(a.Unmap().WithZone("")) {
			return nil
		}
	}
	return err
}

// control is the net.Dialer Control hook: address is the literal ip:port
// about to be connected to.
func (d *Dialer) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse the dialled address %q", ErrRefused, address)
	}
	if err := d.Permit(ap.Addr()); err != nil {
		return err
	}
	if d.beforeConnect != nil {
		return d.beforeConnect(ap)
	}
	return nil
}

// DialContext resolves address's host (numeric forms as inet_aton reads
// them) and dials each address in turn through the Control check. It
// returns the first refusal if every address was refused.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ip, ok := ParseNumericHost(host); ok {
		ips = []netip.Addr{ip}
	} else {
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		ips, err = r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("lookup %s: no addresses", host)
		}
	}
	nd := net.Dialer{Timeout: d.Timeout, Control: d.control}
	var first error
	for _, ip := range ips {
		c, err := nd.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil || (errors.Is(err, ErrRefused) && !errors.Is(first, ErrRefused)) {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

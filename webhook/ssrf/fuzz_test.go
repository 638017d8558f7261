// Fuzz tests: ParseNumericHost never panics and what it accepts has 1 to
// 4 numeric parts; Check never panics and judges an IPv4 address the same
// plain or IPv4-mapped. Seeds in testdata/fuzz run in plain go test.
package ssrf

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func FuzzParseNumericHost(f *testing.F) {
	for _, s := range []string{"2130706433", "0177.0.0.1", "0x7f.1", "127.1", "1.2.3.4", "4294967295", "4294967296", "08", "0x", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, ok := ParseNumericHost(host)
		if !ok {
			return
		}
		if !a.Is4() {
			t.Fatalf("%q gave non-IPv4 %v", host, a)
		}
		if n := strings.Count(host, ".") + 1; n > 4 {
			t.Fatalf("%q has %d parts", host, n)
		}
		_ = Check(a)
	})
}

// FuzzCheck: Check never panics on any 16 bytes, and an IPv4 address is
// judged the same whether it comes plain or IPv4-mapped.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::", "2001:db8::1", "8.8.8.8"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(b))
		err := Check(a)
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Fatalf("Check(%s) = %v, not ErrRefused", a, err)
		}
		if a.Is4In6() && (Check(a.Unmap()) == nil) != (err == nil) {
			t.Fatalf("Check(%s) and Check(%s) disagree", a, a.Unmap())
		}
	})
}

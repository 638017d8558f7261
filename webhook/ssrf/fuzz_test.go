// Fuzz test: ParseNumericHost never panics, and whatever it accepts
// consists of 1 to 4 numeric parts and is refused or allowed by Check
// without panicking either. Seeds in testdata/fuzz run in plain go test.
package ssrf

import (
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

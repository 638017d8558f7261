// Tests that Truncate bounds operator-facing detail without splitting a
// UTF-8 character.
package channel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"short", "connection refused", 18},
		{"exact", strings.Repeat("a", MaxDetailBytes), MaxDetailBytes},
		{"long ascii", strings.Repeat("a", 1000), MaxDetailBytes},
		{"multibyte at the cut", strings.Repeat("a", MaxDetailBytes-1) + "é" + "tail", MaxDetailBytes - 1},
	}
	for _, c := range cases {
		got := Truncate(c.in)
		if len(got) != c.want {
			t.Errorf("%s: len(Truncate) = %d, want %d", c.name, len(got), c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: Truncate produced invalid UTF-8 %q", c.name, got)
		}
		if !strings.HasPrefix(c.in, got) {
			t.Errorf("%s: Truncate is not a prefix of its input", c.name)
		}
	}
}

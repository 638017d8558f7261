// Fuzz test: ParseRetryAfter never panics, never returns a negative or
// over-cap delay, and says false exactly when it returns nothing usable.
// Seeds in testdata/fuzz run in plain go test.
package httpchannel

import (
	"testing"
	"time"
)

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "18446744073709551616", "Sun, 01 Mar 2026 12:01:00 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:01:00 2026", "-1", "1e3", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || d > MaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %s, outside [0, %s]", v, d, MaxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %s with ok false", v, d)
		}
	})
}

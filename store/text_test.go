// This file proves the two text rules every backend shares: CheckName
// accepts exactly the non-empty valid UTF-8 without NUL and names the
// argument otherwise, and CleanDetail always yields bounded, NUL-free
// UTF-8, leaving text that is already so untouched.
package store_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/courierlab/courier/store"
)

// FuzzCheckName: CheckName refuses a name if and only if it is empty, not
// UTF-8 or holds a NUL, always with ErrBadArgument naming the field.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"", "e1", "a\x00b", "a\xffb", "\uFFFD", "\xef\xbf", "日本", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := store.CheckName("get", "the field", name)
		text := name != "" && utf8.ValidString(name) && !strings.Contains(name, "\x00")
		switch {
		case text && err != nil:
			t.Fatalf("CheckName(%q) = %v, want nil", name, err)
		case !text && !errors.Is(err, store.ErrBadArgument):
			t.Fatalf("CheckName(%q) = %v, want ErrBadArgument", name, err)
		case !text && !strings.Contains(err.Error(), "get: the field "):
			t.Fatalf("CheckName(%q) = %v, want it to name the call and the field", name, err)
		}
	})
}

// FuzzCleanDetail: whatever the detail, the kept one is valid UTF-8
// without NUL, at most MaxDetailBytes long, and a detail that already was
// is kept as it is.
func FuzzCleanDetail(f *testing.F) {
	for _, s := range []string{"", "HTTP 503", "a\x00b", "\xff", strings.Repeat("é", 200), strings.Repeat("a\xff", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		got := store.CleanDetail(d)
		if !utf8.ValidString(got) || strings.Contains(got, "\x00") || len(got) > store.MaxDetailBytes {
			t.Fatalf("CleanDetail(%q) = %q: not NUL-free UTF-8 of at most %d bytes", d, got, store.MaxDetailBytes)
		}
		if utf8.ValidString(d) && !strings.Contains(d, "\x00") && len(d) <= store.MaxDetailBytes && got != d {
			t.Fatalf("CleanDetail(%q) = %q, want it unchanged", d, got)
		}
		if again := store.CleanDetail(got); again != got {
			t.Fatalf("CleanDetail is not idempotent: %q, then %q", got, again)
		}
	})
}

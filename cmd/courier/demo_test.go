// This file proves that courier demo is a real run that ends with a
// verdict: it publishes, survives the receiver's outage and the dropped
// replies, and reports every event applied once or dead as refused; then
// its fan-out gives a healthy endpoint 20/20, a rate-limited one 20/20
// at no more than its limit in any second, and a down one 0/20, all
// waiting.
package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestDemoEndsWithAPassingVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("a real run of a few seconds; skipped with -short")
	}
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"demo", "-events", "100", "-seed", "7"}, &out, &errs); code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	text := out.String()
	for _, want := range []string{"receiver down", "receiver up", "accepted             100", "dead letters         4", "0 lost, 0 applied twice", "verdict: PASS — invariants.Check judged"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Dropped replies were retried and absorbed by the kit, one for one.
	m := regexp.MustCompile(`replies dropped +(\d+)[^\n]*\n +duplicates absorbed +(\d+)`).FindStringSubmatch(text)
	if m == nil || m[1] == "0" || m[1] != m[2] {
		t.Errorf("want dropped replies > 0, each absorbed as a duplicate; got %v in\n%s", m, text)
	}
	// The fan-out: the healthy and rate-limited endpoints got every
	// message once, the latter never more than its limit in a second; the
	// down one got none, all waiting.
	for _, want := range []string{"healthy        20/20 applied, 0 more than once", "rate-limited   20/20 applied, 0 more than once",
		"down           0/20 delivered, 20 waiting", "fan-out: PASS"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	m = regexp.MustCompile(`at most (\d+) in any 0\.9 s \(limit 5/s\), over (\d+\.\d) s`).FindStringSubmatch(text)
	if most, span := atoi(m, 1), atof(m, 2); m == nil || most > 5 || most < 1 || span < 2.9 {
		t.Errorf("want the rate-limited endpoint at most 5 in any 0.9 s, over at least 2.9 s; got %v in\n%s", m, text)
	}
	if strings.Contains(text, "\r") {
		t.Errorf("progress bar drawn on a non-terminal")
	}
}

func TestDemoRefusesBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"demo", "-events", "0"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "-events 0") {
		t.Errorf("demo -events 0 = exit %d, %q; want 2 naming -events", code, errs.String())
	}
	if code := run(context.Background(), []string{"serve", "-config", "/nonexistent.toml"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "nonexistent") {
		t.Errorf("serve with a missing config = exit %d, %q; want 2 naming the file", code, errs.String())
	}
	if code := run(context.Background(), []string{"launch"}, &out, &errs); code != 2 {
		t.Errorf("unknown command = exit %d; want 2", code)
	}
}

// atoi and atof read submatch i of m (0 if m is nil or it is no number).
func atoi(m []string, i int) int {
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[i])
	return n
}

func atof(m []string, i int) float64 {
	if m == nil {
		return 0
	}
	f, _ := strconv.ParseFloat(m[i], 64)
	return f
}

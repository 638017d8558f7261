// This file proves that courier demo is a real run that ends with a
// verdict: it publishes, survives the receiver's outage and the dropped
// replies, and reports every event applied once or dead as refused.
package main

import (
	"bytes"
	"context"
	"regexp"
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

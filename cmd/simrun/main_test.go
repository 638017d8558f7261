// simrun keeps its documented contract: RESULTS.md is exactly what the code
// produces now, every command's output and exit code are as documented,
// and bad input is rejected with an error naming what was wrong.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

// TestResultsWithoutCatchMatrix holds RESULTS.md to the code in a normal
// build: everything but the planted-bug section, which only a plant build
// can produce (sweep_plant_test.go checks the whole file).
func TestResultsWithoutCatchMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: regenerating RESULTS.md runs every scenario's standard seeds; the plain test does")
	}
	got, err := resultsText(func() (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := string(data)
	i := strings.Index(want, plantedHeading)
	j := strings.Index(want, "## The scenarios")
	if i < 0 || j < i {
		t.Fatalf("RESULTS.md lacks the planted-bug section before the scenarios; regenerate it with `make results`")
	}
	want = want[:i] + want[j:]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RESULTS.md is stale (-committed +code); regenerate it with `make results` and review the diff:\n%s", diff)
	}
}

func TestCommands(t *testing.T) {
	allHeld := fmt.Sprintf("invariants: all %d held", len(invariants.Names))
	steady, err := scenarios.Lookup("steady")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := steady.Run(1, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // substrings
		wantStderr []string
	}{
		{name: "no command", args: nil, wantCode: exitUsage, wantStderr: []string{"usage:"}},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: exitUsage, wantStderr: []string{`unknown command "frobnicate"`}},
		{name: "help", args: []string{"-h"}, wantCode: exitOK, wantStdout: []string{"simrun run -scenario NAME -seed N"}},
		{name: "list", args: []string{"list"}, wantCode: exitOK, wantStdout: scenarios.Names()},
		{name: "list takes no args", args: []string{"list", "x"}, wantCode: exitUsage, wantStderr: []string{"takes no arguments"}},
		{name: "run held", args: []string{"run", "-scenario", "steady", "-seed", "1"}, wantCode: exitOK,
			wantStdout: []string{allHeld, "reproduce: go run ./cmd/simrun run -scenario steady -seed 1 -trace", "hash " + r.Hash}},
		{name: "run with trace", args: []string{"run", "-scenario", "poison", "-seed", "2", "-trace"}, wantCode: exitOK,
			wantStdout: []string{"out  persist e005 seq=5 dead attempts=10 reason=exhausted", allHeld}},
		{name: "unknown scenario", args: []string{"run", "-scenario", "nope", "-seed", "1"}, wantCode: exitUsage, wantStderr: []string{`unknown scenario "nope"`, "steady"}},
		{name: "missing scenario", args: []string{"run", "-seed", "1"}, wantCode: exitUsage, wantStderr: []string{"-scenario is required"}},
		{name: "missing seed", args: []string{"run", "-scenario", "steady"}, wantCode: exitUsage, wantStderr: []string{"bad seed: -seed is required"}},
		{name: "negative seed", args: []string{"run", "-scenario", "steady", "-seed", "-3"}, wantCode: exitUsage, wantStderr: []string{`bad seed: "-3" is not a decimal number`}},
		{name: "seed too big", args: []string{"run", "-scenario", "steady", "-seed", "18446744073709551616"}, wantCode: exitUsage, wantStderr: []string{"bad seed"}},
		{name: "bad flag", args: []string{"run", "-scenario", "steady", "-seed", "1", "-bogus"}, wantCode: exitUsage, wantStderr: []string{"flag provided but not defined: -bogus"}},
		{name: "stray argument", args: []string{"run", "-scenario", "steady", "-seed", "1", "extra"}, wantCode: exitUsage, wantStderr: []string{`unexpected arguments ["extra"]`}},
		{name: "largest seed", args: []string{"run", "-scenario", "steady", "-seed", "18446744073709551615"}, wantCode: exitOK, wantStdout: []string{"seed 18446744073709551615"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, s := range tt.wantStdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tt.wantStderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}

func TestVerdictExitCodes(t *testing.T) {
	liveness := invariants.Violation{Invariant: invariants.Liveness, ID: "e1", Step: -1}
	lost := invariants.Violation{Invariant: invariants.NothingLost, ID: "e2", Step: -1}
	tests := []struct {
		name   string
		vs     []invariants.Violation
		fails  []string
		want   int
		reason string
	}{
		{"clean", nil, nil, exitOK, "nothing failed"},
		{"expectation only", nil, []string{"x"}, exitExpectation, "invariants held, the scenario's own claim did not"},
		{"liveness only", []invariants.Violation{liveness}, []string{"x"}, exitLiveness, "liveness outranks expectations"},
		{"safety and liveness", []invariants.Violation{liveness, lost}, nil, exitSafety, "any safety violation outranks liveness"},
		{"lease kept only", []invariants.Violation{{Invariant: invariants.LeaseKept, Step: 3}}, nil, exitLiveness, "a lease given up too early costs availability, not safety"},
	}
	for _, tt := range tests {
		if got := verdict(tt.vs, tt.fails); got != tt.want {
			t.Errorf("%s: verdict = %d, want %d (%s)", tt.name, got, tt.want, tt.reason)
		}
	}
}

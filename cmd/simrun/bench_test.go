// simrun bench prints a row per scenario with its rates and a sweep rate,
// and rejects bad flags as usage errors.
package main

import (
	"strconv"
	"strings"
	"testing"
)

func TestBenchCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "-scenario", "steady", "-seeds", "2", "-sweep", "0", "-min", "0")
	if code != exitOK {
		t.Fatalf("bench exited %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"events/s", "compression", "steady     2      80"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "bench", "-scenario", "nope")
	if code != exitUsage {
		t.Errorf("bench of an unknown scenario exited %d, want %d:\n%s", code, exitUsage, out)
	}
	for _, args := range [][]string{{"bench", "-seeds", "0"}, {"bench", "-sweep", "-1"}, {"bench", "-parallel", "0"}, {"bench", "-min", "-1s"}, {"bench", "-min", "2h"}, {"bench", "x"}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("simrun %v exited %d, want %d", args, code, exitUsage)
		}
	}
}

func TestBenchSweepRate(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "-scenario", "steady", "-seeds", "1", "-sweep", "20", "-min", "0")
	if code != exitOK || !strings.Contains(out, "sweep: 20 swarm seeds") || !strings.Contains(out, "(0 failed)") {
		t.Fatalf("bench exited %d:\n%s%s", code, out, errOut)
	}
}

// TestBenchRounds: with -min, a scenario's seeds run round after round
// until that much wall time is measured, and the row sums every run.
func TestBenchRounds(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "-scenario", "steady", "-seeds", "2", "-sweep", "0", "-min", "50ms")
	if code != exitOK {
		t.Fatalf("bench exited %d:\n%s%s", code, out, errOut)
	}
	var runs, events int
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "steady" {
			runs, _ = strconv.Atoi(f[1])
			events, _ = strconv.Atoi(f[2])
		}
	}
	// Two seeds a round, 40 events each; one round takes well under 50ms.
	if runs <= 2 || runs%2 != 0 || events != 40*runs {
		t.Errorf("steady ran %d runs of %d events in all; want whole rounds of 2 seeds, more than one, 40 events each:\n%s", runs, events, out)
	}
}

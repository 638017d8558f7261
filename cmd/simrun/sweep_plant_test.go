//go:build plant

// In a plant build, a broken build's failure line carries a replay file
// that replays the same run (same trace hash), and RESULTS.md, catch
// matrix included, is exactly what the code produces.
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/internal/plant"
)

func TestBrokenBuildFailureReplaysExactly(t *testing.T) {
	restore, err := plant.Set(plant.DrainOutOfOrder)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, out, _ := runCLI(t, "sweep", "-seeds", "10", "-failures", dir)
	restore()
	if code != exitSafety {
		t.Fatalf("a sweep of a broken build exited %d, want %d (safety):\n%s", code, exitSafety, out)
	}
	m := regexp.MustCompile(`reproduce: go run -tags plant -ldflags=-X=github.com/courierlab/courier/internal/plant.build=drain-out-of-order ./cmd/simrun replay (\S+) -trace`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no reproduce line naming the planted bug and a replay file:\n%s", out)
	}
	data, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var f ReplayFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Bug != plant.DrainOutOfOrder || len(f.Violations) == 0 || !strings.HasPrefix(f.Violations[0], "order:") {
		t.Fatalf("replay file does not record the bug and its order violation: %+v", f)
	}
	// The replay sets the bug from the file; the normal build stays clean.
	code, out, errOut := runCLI(t, "replay", m[1])
	if code != exitSafety || !strings.Contains(out, "replayed exactly: trace hash "+f.Hash) {
		t.Fatalf("replay exited %d; want %d and a matching hash %s:\n%s%s", code, exitSafety, f.Hash, out, errOut)
	}
	if plant.Active() != "" {
		t.Fatalf("replay left planted bug %q active", plant.Active())
	}
}

func TestResultsFileIsCurrent(t *testing.T) {
	var got bytes.Buffer
	if err := writeResults(&got); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("RESULTS.md is stale (-committed +code); regenerate it with `make results` and review the diff:\n%s", diff)
	}
}

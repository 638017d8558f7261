// The built simrun never hides a failure: a replay that no longer
// reproduces exits 6 naming the field that differs, a replay file without
// a seed is a usage error, and an output file that cannot be written exits
// 7 (before any run when it can tell) without masking the runs' verdict,
// the worst code winning. Each case runs the binary built by go build.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary builds simrun with the given go build flags into t.TempDir().
func binary(t *testing.T, flags ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "simrun")
	args := append(append([]string{"build"}, flags...), "-o", path, ".")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", flags, err, out)
	}
	return path
}

// simrun runs the binary and returns its exit code and output.
func simrun(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

// replayFileOf writes a replay file for swarm seed 7 as the current build
// would, then lets edit change it.
func replayFileOf(t *testing.T, bin, name string, edit func(f map[string]any)) string {
	t.Helper()
	code, out, errOut := simrun(t, bin, "sweep", "-seeds", "1", "-from", "7")
	if code != exitOK {
		t.Fatalf("sweep of seed 7 exited %d:\n%s%s", code, out, errOut)
	}
	f := map[string]any{"seed": 7, "hash": hashOf(t, bin, 7), "world": worldOf(t, bin, 7), "violations": []string{}}
	edit(f)
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hashOf and worldOf read what a replay of seed prints, from a replay
// file the test writes with a made-up hash.
func hashOf(t *testing.T, bin string, seed int) string  { return field(t, bin, seed, "trace:    hash ") }
func worldOf(t *testing.T, bin string, seed int) string { return field(t, bin, seed, "world: ") }

func field(t *testing.T, bin string, seed int, prefix string) string {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"seed": seed, "hash": "0"})
	path := filepath.Join(t.TempDir(), "probe.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ := simrun(t, bin, "replay", path)
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	t.Fatalf("replay printed no %q line:\n%s", prefix, out)
	return ""
}

func TestBinaryReplayMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun")
	}
	bin := binary(t)
	tests := []struct {
		name     string
		file     string
		edit     func(f map[string]any)
		wantCode int
		want     []string
	}{
		{"reproduces", "seed-7.json", func(map[string]any) {}, exitOK, []string{"replayed exactly"}},
		{"hash differs", "seed-7.json", func(f map[string]any) { f["hash"] = "0123456789abcdef" }, exitMismatch,
			[]string{"NOT the same run", "replay mismatch: hash: trace hash", "the file has 0123456789abcdef"}},
		{"world differs", "seed-7.json", func(f map[string]any) { f["world"] = "strict events=1" }, exitMismatch,
			[]string{"replay mismatch: world: the file has", "strict events=1"}},
		{"seed differs from its name", "seed-8.json", func(map[string]any) {}, exitMismatch,
			[]string{"replay mismatch: seed: the file is named for seed 8 but holds seed 7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := replayFileOf(t, bin, tt.file, tt.edit)
			code, out, errOut := simrun(t, bin, "replay", path)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestBinaryReplayFileWithoutSeed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun")
	}
	bin := binary(t)
	path := filepath.Join(t.TempDir(), "seed-0.json")
	if err := os.WriteFile(path, []byte(`{"hash": "0184dd65e155c317", "world": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := simrun(t, bin, "replay", path)
	if code != exitUsage || !strings.Contains(errOut, "has no seed") || out != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, \"has no seed\" and no run", code, errOut, out, exitUsage)
	}
}

func TestBinaryOutputErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun")
	}
	bin := binary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		args      []string
		wantCode  int
		wantOut   []string // "" alone: nothing may be printed (no run started)
		wantErr   string
		reasoning string
	}{
		{"html in a missing directory", []string{"run", "-scenario", "steady", "-seed", "1", "-html", filepath.Join(dir, "no", "t.html")},
			exitOutput, []string{""}, "no such file", "detected before the run"},
		{"html write fails", []string{"run", "-scenario", "steady", "-seed", "1", "-html", "/dev/full"},
			exitOutput, []string{"invariants: all", "reproduce:"}, "writing the timeline", "the verdict is printed, then the output error's code"},
		{"failures is a file", []string{"sweep", "-seeds", "3", "-failures", file},
			exitOutput, []string{""}, "not a directory", "detected before the sweep"},
		{"failures under a file", []string{"sweep", "-seeds", "3", "-failures", filepath.Join(file, "sub")},
			exitOutput, []string{""}, "not a directory", "detected before the sweep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := simrun(t, bin, tt.args...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tt.reasoning, code, errOut, tt.wantCode, tt.wantErr)
			}
			for _, w := range tt.wantOut {
				if w == "" && out != "" {
					t.Errorf("%s: printed %q; want nothing", tt.reasoning, out)
				}
				if !strings.Contains(out, w) {
					t.Errorf("%s: output lacks %q:\n%s", tt.reasoning, w, out)
				}
			}
		})
	}
	t.Run("mismatch outranks an output error", func(t *testing.T) {
		path := replayFileOf(t, bin, "seed-7.json", func(f map[string]any) { f["hash"] = "0123456789abcdef" })
		code, out, errOut := simrun(t, bin, "replay", path, "-html", "/dev/full")
		if code != exitMismatch || !strings.Contains(errOut, "writing the timeline") {
			t.Errorf("exit %d, want %d (a replay mismatch is worse than an output error)\n%s%s", code, exitMismatch, out, errOut)
		}
	})
}

// A planted-bug build's sweep whose replay files cannot be written still
// prints every failure and exits with the safety code: the output error
// never masks the verdict.
func TestBinaryFailuresWriteErrorKeepsTheVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun with a planted bug")
	}
	bin := binary(t, "-tags", "plant", "-ldflags=-X=github.com/courierlab/courier/internal/plant.build=drain-out-of-order")
	dir := t.TempDir()
	for i := 1; i <= 10; i++ {
		// A directory where each replay file should go: every write fails.
		if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("seed-%d.json", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := simrun(t, bin, "sweep", "-seeds", "10", "-failures", dir)
	if code != exitSafety {
		t.Errorf("exit %d, want %d (safety outranks the output error)\n%s%s", code, exitSafety, out, errOut)
	}
	for _, w := range []string{"FAIL seed", "VIOLATION order", "replay file: (not written)"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if !strings.Contains(errOut, "writing the replay file of seed") {
		t.Errorf("stderr does not report the write error:\n%s", errOut)
	}
}

//go:build !plant

// A normal build has no planted-bug switch: the linker option that sets one
// in a plant build is refused with a message saying how to rebuild, the
// binary holds no switch symbol (while a plant build does), and a replay
// file naming a planted bug is refused the same way.
package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const plantBuildFlag = "-ldflags=-X=github.com/courierlab/courier/internal/plant.build=drain-out-of-order"

// buildSimrun builds ./ (cmd/simrun) with extra go build flags.
func buildSimrun(t *testing.T, name string, flags ...string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test builds simrun and needs the go command: %v", err)
	}
	out := filepath.Join(t.TempDir(), name)
	args := append(append([]string{"build", "-o", out}, flags...), ".")
	if msg, err := exec.Command(goTool, args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return out
}

// plantSymbols lists the planted-bug package's symbols in the binary at path.
func plantSymbols(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("go", "tool", "nm", path).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", path, err)
	}
	var syms []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && strings.HasPrefix(f[2], "github.com/courierlab/courier/internal/plant.") {
			syms = append(syms, strings.TrimPrefix(f[2], "github.com/courierlab/courier/internal/plant."))
		}
	}
	return " " + strings.Join(syms, " ") + " "
}

func TestNormalBuildHasNoSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simrun twice")
	}
	normal := buildSimrun(t, "simrun-normal", plantBuildFlag)
	planted := buildSimrun(t, "simrun-plant", "-tags", "plant", plantBuildFlag)

	// The switch: the active bug and Set. A plant build has them (so this
	// check can fail); a normal build, even one given the linker option,
	// does not.
	for _, sym := range []string{" active ", " Set "} {
		if !strings.Contains(plantSymbols(t, planted), sym) {
			t.Fatalf("the plant build lacks plant.%s; the symbol check below would prove nothing", strings.TrimSpace(sym))
		}
		if syms := plantSymbols(t, normal); strings.Contains(syms, sym) {
			t.Errorf("the normal build holds plant.%s: %s", strings.TrimSpace(sym), syms)
		}
	}

	// The normal build refuses the request instead of running clean.
	cmd := exec.Command(normal, "run", "-scenario", "outage", "-seed", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(stderr.String(), "rebuild with -tags plant") {
		t.Fatalf("normal build with %s: err %v, stderr %q; want exit %d and a rebuild hint", plantBuildFlag, err, stderr.String(), exitUsage)
	}
	// The plant build does switch the bug on: the outage drains out of order.
	out, err := exec.Command(planted, "run", "-scenario", "outage", "-seed", "1").Output()
	if !errors.As(err, &exit) || exit.ExitCode() != exitSafety || !strings.Contains(string(out), "VIOLATION order") {
		t.Fatalf("plant build with %s: err %v; want exit %d and an order violation:\n%s", plantBuildFlag, err, exitSafety, out)
	}
}

func TestReplayNamingPlantedBugIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seed-3.json")
	if err := os.WriteFile(path, []byte(`{"seed": 3, "bug": "drain-out-of-order", "hash": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "replay", path)
	if code != exitUsage || !strings.Contains(errOut, `planted bug "drain-out-of-order"`) || !strings.Contains(errOut, "rebuild with -tags plant") {
		t.Fatalf("replay of a planted-bug file in a normal build: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "swarm seed") {
		t.Fatalf("the refused replay ran anyway:\n%s", out)
	}
	code, _, errOut = runCLI(t, "results")
	if code == exitOK || !strings.Contains(errOut, "-tags plant") {
		t.Fatalf("results in a normal build: exit %d, stderr %q; want a refusal naming -tags plant", code, errOut)
	}
}

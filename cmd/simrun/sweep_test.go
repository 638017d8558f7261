// The hunting commands keep their contract: a sweep's results do not depend
// on -parallel, a broken build's failure line carries a replay file that
// replays the same run (same trace hash), bad flags are usage errors, and
// the timeline is a well-formed page with one lane per event.
package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestSweepHealthy(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "sweep", "-seeds", "40", "-from", "11", "-parallel", "2", "-failures", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"swarm seeds 11..50 on 2 goroutines", "summary: 40 seeds", "0 violations in 0 seeds"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A sweep on SQLite runs each seed on its own database file under
// -store-dir, leaves none behind, and holds every invariant.
func TestSweepOnSQLite(t *testing.T) {
	dbs := t.TempDir()
	code, out, errOut := runCLI(t, "sweep", "-seeds", "3", "-from", "11", "-store", "sqlite", "-store-dir", dbs, "-failures", t.TempDir())
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"store sqlite", "summary: 3 seeds", "0 violations in 0 seeds"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if left, _ := os.ReadDir(dbs); len(left) != 0 {
		t.Errorf("%d databases left under -store-dir", len(left))
	}
}

func TestSweepIndependentOfParallelism(t *testing.T) {
	one := scenarios.Sweep(1, 30, 1, nil)
	many := scenarios.Sweep(1, 30, 4, nil)
	for i := range one {
		if one[i].Seed != many[i].Seed || one[i].Hash != many[i].Hash {
			t.Fatalf("slot %d: seed %d hash %s with 1 goroutine, seed %d hash %s with 4",
				i, one[i].Seed, one[i].Hash, many[i].Seed, many[i].Hash)
		}
	}
}

func TestSweepAndReplayUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"seed": 1, "bug": "no-such-bug"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sweep"}, "-seeds is 0"},
		{[]string{"sweep", "-seeds", "-4"}, "-seeds is -4"},
		{[]string{"sweep", "-seeds", "5", "-parallel", "0"}, "-parallel is 0"},
		{[]string{"sweep", "-seeds", "5", "-from", "x"}, `bad seed: "x"`},
		{[]string{"sweep", "-seeds", "5", "-from", "18446744073709551615"}, "runs past the largest seed"},
		{[]string{"sweep", "-seeds", "5", "extra"}, "unexpected arguments"},
		{[]string{"sweep", "-seeds", "5", "-store", "postgres"}, `"postgres": want memstore or sqlite`},
		{[]string{"sweep", "-seeds", "5", "-store-dir", "/tmp"}, "-store-dir applies to -store sqlite only"},
		{[]string{"replay"}, "a replay file is required"},
		{[]string{"replay", filepath.Join(t.TempDir(), "missing.json")}, "no such file"},
		{[]string{"replay", bad}, `unknown planted bug "no-such-bug"`},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("simrun %v: exit %d, stderr %q; want exit %d and %q", tt.args, code, errOut, exitUsage, tt.want)
		}
	}
}

func TestTimelineIsWellFormed(t *testing.T) {
	sc, err := scenarios.Lookup("everything")
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := sc.Run(1, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.html")
	code, out, errOut := runCLI(t, "run", "-scenario", "everything", "-seed", "1", "-html", path)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Well formed: every element closes, every entity is known.
	d := xml.NewDecoder(bytes.NewReader(data))
	lanes := map[string]bool{}
	var svgs int
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("timeline is not well formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "svg" {
			svgs++
		}
		if cd, ok := tok.(xml.CharData); ok {
			if m := regexp.MustCompile(`^(e\d{3}) (pending|retry|parked|delivered|dead) `).FindStringSubmatch(string(cd)); m != nil {
				lanes[m[1]] = true
			}
		}
	}
	if svgs != 1 {
		t.Errorf("found %d svg elements, want 1", svgs)
	}
	if len(lanes) != r.Stats.Accepted {
		t.Errorf("timeline has %d event lanes, want one per accepted event (%d)", len(lanes), r.Stats.Accepted)
	}
	for _, want := range []string{"<title>courier timeline: scenario everything, seed 1</title>", "outage [10s,20s)", "restart at", "probe 1 at"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
}

func TestSweepExitCodeIsTheWorst(t *testing.T) {
	tests := []struct{ a, b, want int }{
		{exitOK, exitLiveness, exitLiveness},
		{exitLiveness, exitSafety, exitSafety},
		{exitSafety, exitLiveness, exitSafety},
		{exitSafety, exitCrash, exitCrash},
		{exitCrash, exitSafety, exitCrash},
	}
	for _, tt := range tests {
		if got := worse(tt.a, tt.b); got != tt.want {
			t.Errorf("worse(%d, %d) = %d, want %d (crash > safety > liveness > ok)", tt.a, tt.b, got, tt.want)
		}
	}
}

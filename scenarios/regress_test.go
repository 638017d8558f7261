// Seeds that once broke an invariant are kept as replay files under
// testdata/regressions, each with its whole world (spec), and must now
// hold every invariant on the same run. The trace hash pins the run: a
// file whose hash no longer matches may no longer reach the situation it
// was kept for, so the test fails until someone reviews the trace and
// rewrites the hashes with -update.
package scenarios

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/courierlab/courier/sim"
)

// regression is the part of a simrun replay file this test reads.
type regression struct {
	Seed       uint64     `json:"seed"`
	Hash       string     `json:"hash"`
	Violations []string   `json:"violations"` // what it failed with, once
	Spec       *sim.World `json:"spec"`
}

func TestRegressionSeeds(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "regressions", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no regression files (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var f regression
			if err := json.Unmarshal(data, &f); err != nil || f.Spec == nil {
				t.Fatalf("not a replay file with a spec: %v", err)
			}
			r, _ := RunWorld(f.Seed, *f.Spec, sim.Options{})
			for _, v := range r.Violations {
				t.Errorf("seed %d: %s\n  it once failed with: %q\n  replay: go run ./cmd/simrun replay %s -trace", f.Seed, v, f.Violations, path)
			}
			if r.Hash == f.Hash {
				return
			}
			if !*update {
				t.Fatalf("seed %d: trace hash %s, the file has %s: the run changed, so it may no longer reach what it was kept for; review its trace, then rewrite with -update", f.Seed, r.Hash, f.Hash)
			}
			hash := regexp.MustCompile(`"hash": "[0-9a-f]*"`)
			out := hash.ReplaceAll(data, []byte(`"hash": "`+r.Hash+`"`))
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

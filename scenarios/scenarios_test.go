// Every scenario, over many seeds, holds every invariant and shows what it
// exists to show; the same seed always gives the same trace.
package scenarios

import (
	"fmt"
	"testing"

	"github.com/courierlab/courier/sim"
)

func TestScenariosHoldInvariants(t *testing.T) {
	for _, sc := range All() {
		t.Run(sc.Name, func(t *testing.T) {
			if sc.Seeds > 0 && testing.Short() {
				t.Skip("-short: a long scenario runs in the plain test")
			}
			t.Parallel()
			for seed := uint64(1); seed <= uint64(sc.SeedCount()); seed++ {
				r, fails, err := sc.Run(seed, sim.Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range r.Violations {
					t.Errorf("seed %d: %s\n  replay: go run ./cmd/simrun run -scenario %s -seed %d -trace", seed, v, sc.Name, seed)
				}
				for _, f := range fails {
					t.Errorf("seed %d: expectation failed: %s\n  replay: go run ./cmd/simrun run -scenario %s -seed %d -trace", seed, f, sc.Name, seed)
				}
				if testing.Verbose() && seed <= 3 {
					fmt.Printf("%s seed %d: %+v\n", sc.Name, seed, r.Stats)
				}
			}
		})
	}
}

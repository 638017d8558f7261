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
			seen := map[string]uint64{} // trace hash -> seed
			for seed := uint64(1); seed <= uint64(sc.SeedCount()); seed++ {
				r, fails, err := sc.Run(seed, sim.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if other, ok := seen[r.Hash]; ok && sc.Seeds > 0 {
					t.Errorf("seeds %d and %d gave the same hash %s: the seed does not reach the run", other, seed, r.Hash)
				}
				seen[r.Hash] = seed
				if seed == 1 && sc.Seeds > 0 {
					sameSeedSameHash(t, sc, r)
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

// sameSeedSameHash runs a long scenario's seed 1 a second time and holds
// it to the first run's hash, which covers every traced operation. This
// is TestSameSeedSameTrace for a long scenario, done here on a run this
// test makes anyway: each long-outage run takes some 20 seconds.
func sameSeedSameHash(t *testing.T, sc Scenario, first sim.Result) {
	t.Helper()
	again, _, err := sc.Run(first.Seed, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash != first.Hash {
		t.Fatalf("seed %d, run twice: different hashes %s and %s", first.Seed, first.Hash, again.Hash)
	}
}

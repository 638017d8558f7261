// SweepEach hands results out in seed order whatever the parallelism, and
// holds no more than SweepWindow of them at once however many seeds it
// runs: a sweep's memory is bounded by its parallelism, not its length.
package scenarios

import "testing"

func TestSweepEachIsOrderedAndBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 100 swarm seeds")
	}
	const n = 100
	want := Sweep(1, n, 1, nil)
	for _, parallel := range []int{1, 3} {
		var got []SeedResult
		held := SweepEach(1, n, parallel, func(r SeedResult) { got = append(got, r) })
		if len(got) != n {
			t.Fatalf("parallel %d: %d results for %d seeds", parallel, len(got), n)
		}
		for i := range got {
			if got[i].Seed != want[i].Seed || got[i].Hash != want[i].Hash {
				t.Fatalf("parallel %d, slot %d: seed %d hash %s, want seed %d hash %s", parallel, i, got[i].Seed, got[i].Hash, want[i].Seed, want[i].Hash)
			}
		}
		// The bound is the window, which depends on parallel alone: with
		// n many times the window, holding more would mean memory that
		// grows with the seed count.
		if w := SweepWindow(parallel); held > w || w >= n/4 {
			t.Errorf("parallel %d: held %d results at once over %d seeds; the window is %d", parallel, held, n, w)
		}
	}
}

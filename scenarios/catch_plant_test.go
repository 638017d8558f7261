//go:build plant

// Every planted bug is caught by the invariant the catalogue expects,
// within CatchBound swarm seeds: proof that the checker would catch the
// real bugs they imitate. Not parallel: a planted bug is process-wide.
package scenarios

import (
	"testing"

	"github.com/courierlab/courier/internal/plant"
)

func TestPlantedBugsAreCaught(t *testing.T) {
	if len(plant.All()) < 8 {
		t.Fatalf("the catalogue has %d bugs; the floor is 8", len(plant.All()))
	}
	for _, bug := range plant.All() {
		c, err := CatchBug(bug, CatchBound)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Caught() {
			t.Errorf("%s: %s did not catch it within %d swarm seeds", bug, c.Expected, CatchBound)
			continue
		}
		t.Logf("%s: caught by %s at seed %d (violated: %v)", bug, c.Expected, c.Seed, c.Also)
	}
}

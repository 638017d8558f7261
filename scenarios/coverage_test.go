// The standard sweep reaches every cell of the fault-by-state matrix that
// the design says is reachable at least MinCoverage times, often enough
// that the checker guards it, and never one it says is not.
package scenarios

import (
	"fmt"
	"testing"

	"github.com/courierlab/courier/sim"
)

func TestCoverageMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps CoverageSeeds seeds")
	}
	c := SweepCoverage(CoverageSeeds)
	least, where := -1, ""
	for _, f := range sim.Faults() {
		for _, s := range sim.States() {
			n := c.At(f, s)
			if Reachable(f, s) && (least < 0 || n < least) {
				least, where = n, fmt.Sprintf("%s x %s", f, s)
			}
			switch reach := Reachable(f, s); {
			case reach && n < MinCoverage:
				t.Errorf("%s met an event in %s %d times over %d swarm seeds; a reachable cell needs at least %d", f, s, n, CoverageSeeds, MinCoverage)
			case !reach && n != 0:
				t.Errorf("%s met an event in %s %d times; the design says it cannot", f, s, n)
			}
		}
	}
	t.Logf("the thinnest reachable cell, %s, was reached %d times over %d seeds (floor %d)", where, least, CoverageSeeds, MinCoverage)
}

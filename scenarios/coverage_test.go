// The standard sweep reaches every cell of the fault-by-state matrix that
// the design says is reachable, and never one it says is not.
package scenarios

import (
	"testing"

	"github.com/courierlab/courier/sim"
)

func TestCoverageMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps CoverageSeeds seeds")
	}
	c := SweepCoverage(CoverageSeeds)
	for _, f := range sim.Faults() {
		for _, s := range sim.States() {
			n := c.At(f, s)
			switch reach := Reachable(f, s); {
			case reach && n == 0:
				t.Errorf("%s never met an event in %s over %d swarm seeds; the design says it can", f, s, CoverageSeeds)
			case !reach && n != 0:
				t.Errorf("%s met an event in %s %d times; the design says it cannot", f, s, n)
			}
		}
	}
}

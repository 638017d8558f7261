// The cost of a whole simulated run, checker included, per scenario and
// per swarm seed: the figures `simrun bench` prints as rates, here in a
// form benchstat can compare across commits.
package scenarios

import (
	"testing"

	"github.com/courierlab/courier/sim"
)

// BenchmarkScenario runs each scenario once per iteration, cycling over
// its standard seeds, and judges the run.
func BenchmarkScenario(b *testing.B) {
	for _, sc := range All() {
		b.Run(sc.Name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				seed := uint64(i%sc.SeedCount() + 1)
				i++
				if _, _, err := sc.Run(seed, sim.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSwarmSeed runs one swarm seed per iteration, cycling over the
// first thousand, on one goroutine: what a sweep does per seed.
func BenchmarkSwarmSeed(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		RunSwarmSeed(uint64(i%1000+1), sim.Options{})
		i++
	}
}

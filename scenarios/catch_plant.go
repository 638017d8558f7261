//go:build plant

package scenarios

import (
	"fmt"
	"slices"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/sim"
)

// CatchBug switches bug on, sweeps swarm seeds from 1 until the expected
// invariant flags a run (at most limit seeds), and switches it off again.
// A bug no swarm world reaches is hunted in its scenario's worlds
// instead, seed by seed (catchWorlds).
// It must not run while any other run is in progress: the bug is global.
func CatchBug(bug plant.Bug, limit int) (Catch, error) {
	expected, ok := plant.Expected[bug]
	if !ok {
		return Catch{}, fmt.Errorf("unknown planted bug %q", bug)
	}
	restore, err := plant.Set(bug)
	if err != nil {
		return Catch{}, err
	}
	defer restore()
	c := Catch{Bug: bug, Expected: expected}
	world := Swarm
	if w, ok := catchWorlds[bug]; ok {
		world = w // a bug only a scenario's world reaches (rate.go)
	}
	for seed := uint64(1); seed <= uint64(limit); seed++ {
		r, _ := RunWorld(seed, world(seed), sim.Options{})
		var names []string
		for _, v := range r.Violations {
			if !slices.Contains(names, v.Invariant) {
				names = append(names, v.Invariant)
			}
		}
		if slices.Contains(names, expected) {
			c.Seed = seed
			c.Also = sortByCatalogue(names)
			return c, nil
		}
	}
	return c, nil
}

func sortByCatalogue(names []string) []string {
	order := append(slices.Clone(invariants.Names), Crash)
	slices.SortFunc(names, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	return names
}

// catchWorlds are the worlds in which CatchBug hunts a planted bug that
// no swarm world reaches (the swarm draws no rate limit, so that its
// traces stay what they were): a scenario's, seed by seed.
var catchWorlds = map[plant.Bug]func(seed uint64) sim.World{
	plant.RateResetOnProbe: rateLimited().World,
	// The swarm's rotation worlds end before a stream can wait out the
	// bound, however unfair the claims; producers-64 runs long enough.
	plant.ClaimByName: producers64().World,
}

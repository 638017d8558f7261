//go:build plant

package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
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
	// The swarm reaches it, but past the bound (first at seed 240): a
	// save refused as stale with sends in it needs a lease revoked while
	// its owner still believes in it (an operator's replay) and a backlog
	// behind the replies; a lease that ran out is caught by the driver's
	// deadline check first.
	plant.BatchActsOnRefused: replayedBacklog,
}

// replayedBacklog is three workers on four busy streams whose poison
// events die fast, and an operator who replays dead letters, each replay
// revoking its stream's lease: replies gathered for 20 ms come back to
// an owner whose lease a replay revoked, and their batches, which start
// attempts of the backlog, are refused as stale.
func replayedBacklog(seed uint64) sim.World {
	w := ClusterBase(seed)
	w.Streams, w.Events, w.Interarrival = 4, 120, 10*time.Millisecond
	w.Policy.Ordering, w.Policy.Window, w.Policy.MaxAttempts = machine.Independent, 2, 3
	w.Receiver.Fence = false // independent ordering
	for i := 0; i < w.Events; i += 7 {
		w.Receiver.Poison = append(w.Receiver.Poison, sim.EventID(i))
	}
	w.FaultsEnd = 30 * time.Second
	w.Operator.Replays = 40
	w.Driver.Gather = 20 * time.Millisecond
	return w
}

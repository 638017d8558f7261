// Swarm worlds with a rate limit added hold every invariant, rate-limit
// included. The swarm itself draws no limit, so that its traces stay what
// they were; this gives its worlds one (1 to 6 starts per 0.1s to 2s, from
// the seed), over the first seeds and the seeds that once failed: 782592196178,
// where a pause between persist and send bunched the sends, before the
// rule judged a start at its persist.
package scenarios

import (
	"testing"
	"time"

	"github.com/courierlab/courier/sim"
)

// rateSwarm is the swarm world of seed with a rate limit drawn from it.
func rateSwarm(seed uint64) sim.World {
	w := Swarm(seed)
	w.Policy.RateLimit = 1 + int(seed%6)
	w.Policy.RatePer = time.Duration(100+(seed*7919)%1900) * time.Millisecond
	return w
}

func TestRateLimitedSwarmWorlds(t *testing.T) {
	seeds := []uint64{782592196178}
	for s := uint64(1); s <= 100; s++ {
		seeds = append(seeds, s)
	}
	for _, seed := range seeds {
		w := rateSwarm(seed)
		r, _ := RunWorld(seed, w, sim.Options{})
		for _, v := range r.Violations {
			t.Errorf("seed %d (limit %d per %v): %s", seed, w.Policy.RateLimit, w.Policy.RatePer, v)
		}
	}
}

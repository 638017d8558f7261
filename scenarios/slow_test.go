// Tests that the swarm's slow-call pass gives slow store calls to about
// SlowShare of its clusters (secret rotations kept valid: sim.Run
// validates), and that those worlds do meet slow calls and hold every
// guarantee.
package scenarios

import (
	"math"
	"strings"
	"testing"

	"github.com/courierlab/courier/sim"
)

func TestSwarmDrawsSlowCalls(t *testing.T) {
	const seeds = 400
	clusters, slow, met, rotations := 0, 0, 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		w := Swarm(seed)
		if w.Cluster.Workers == 0 {
			continue
		}
		clusters++
		if w.Store.Slow == (sim.SlowCalls{}) {
			continue
		}
		slow++
		if w.HTTP.Rotation.Add > 0 {
			rotations++
		}
		r, err := sim.Run(w, seed, sim.Options{Trace: true})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, v := range r.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		for _, line := range r.Trace {
			if strings.Contains(line, "fault slow-call:") {
				met++
				break
			}
		}
	}
	share := float64(slow) / float64(clusters)
	t.Logf("%d of %d clusters draw slow calls (%.0f%%), %d of them with a secret rotation; %d met one", slow, clusters, 100*share, rotations, met)
	if math.Abs(share-SlowShare) > 0.1 || met < slow/2 {
		t.Fatalf("%d of %d clusters draw slow calls and %d met one: want about %.0f%%, and most to meet one", slow, clusters, met, 100*SlowShare)
	}
}

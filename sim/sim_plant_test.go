//go:build plant

// The checker sees the planted ReceiverNoDedup bug in the faulty world: a
// run is only as good as the checker that judges it.
package sim_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

func TestRunFaultyNoDedupIsCaught(t *testing.T) {
	w := faulty(1)
	w.Policy.Ordering, w.Policy.Window = machine.Independent, 4
	w.Receiver = sim.Receiver{}
	w.Channel.LostAckRate = 0.5
	restore, err := plant.Set(plant.ReceiverNoDedup)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(w, 1, sim.Options{})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	if r.Stats.AppliedTwice == 0 {
		t.Fatalf("with NoDedup and lost replies nothing was applied twice: %+v", r.Stats)
	}
	var names []string
	for _, v := range r.Violations {
		if !strings.Contains(strings.Join(names, " "), v.Invariant) {
			names = append(names, v.Invariant)
		}
	}
	if diff := cmp.Diff([]string{invariants.AppliedOnce}, names); diff != "" {
		t.Errorf("invariants the checker reports for NoDedup (-want +got):\n%s\nviolations: %v", diff, r.Violations)
	}
}

// The HTTP worlds (World.HTTP) run the real channel and receiver kit:
// under every fault, with a secret rotation, in strict order with a
// fencing kit and out of order without, every invariant holds, the kit
// deduplicates the copies that lost replies make, the run is the same
// twice, and Validate names a rotation that is done wrong.
package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

// httpWorld is faulty(seed) through the real parts, with poison and
// stubborn events answered 429, lost replies half reset and half hung,
// and a rotation while the faults last.
func httpWorld(seed uint64, strict bool) sim.World {
	w := faulty(seed)
	w.Channel.LostAckRate = 0.3
	w.Receiver.Poison = []string{"e007"}
	w.Receiver.Stubborn = []sim.Stubborn{{ID: "e011", Failures: 2}}
	w.Receiver.RetryAfter = 1500 * time.Millisecond
	if strict {
		w.Policy.Ordering = machine.Strict
		w.Receiver.Fence = true
	} else {
		w.Policy.Ordering = machine.Independent
		w.Policy.Window = 4
	}
	w.HTTP = sim.HTTP{On: true, RejectStatus: 429, ResetRate: 0.5}
	sw := 6 * time.Second
	w.HTTP.Rotation = sim.Rotation{Add: 4 * time.Second, Switch: sw, Drop: sw + w.RotationHold() + time.Second}
	return w
}

func TestHTTPWorldsHold(t *testing.T) {
	for _, strict := range []bool{false, true} {
		var tot sim.Stats
		for seed := uint64(1); seed <= 10; seed++ {
			w := httpWorld(seed, strict)
			r, err := sim.Run(w, seed, sim.Options{Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Violations {
				t.Errorf("strict=%v seed %d: %s", strict, seed, v)
			}
			for _, line := range r.Trace {
				if strings.Contains(line, "receiver unverified") {
					t.Errorf("strict=%v seed %d: a delivery did not verify during a rotation done right: %s", strict, seed, line)
				}
			}
			again, _ := sim.Run(w, seed, sim.Options{})
			if again.Hash != r.Hash {
				t.Errorf("strict=%v seed %d: hash %s, then %s: the real parts made the run nondeterministic", strict, seed, r.Hash, again.Hash)
			}
			tot.Add(r.Stats)
		}
		if tot.Applied == 0 || tot.Duplicates == 0 {
			t.Errorf("strict=%v: %d applied, %d duplicates discarded by the kit; the lost replies must make some", strict, tot.Applied, tot.Duplicates)
		}
		if tot.AppliedTwice != 0 || tot.Lost != 0 {
			t.Errorf("strict=%v: %d applied twice, %d lost", strict, tot.AppliedTwice, tot.Lost)
		}
	}
}

func TestHTTPWorldValidate(t *testing.T) {
	ok := httpWorld(1, false)
	if err := ok.Validate(); err != nil {
		t.Fatalf("the HTTP world is invalid: %v", err)
	}
	tests := []struct {
		name   string
		break_ func(w *sim.World)
	}{
		{"switch before add", func(w *sim.World) { w.HTTP.Rotation.Switch = w.HTTP.Rotation.Add }},
		{"drop too soon", func(w *sim.World) { w.HTTP.Rotation.Drop = w.HTTP.Rotation.Switch + w.RotationHold() - 1 }},
		{"a status that is not retried", func(w *sim.World) { w.HTTP.RejectStatus = 410 }},
		{"a rate above 1", func(w *sim.World) { w.HTTP.ResetRate = 1.5 }},
		{"faults without HTTP", func(w *sim.World) { w.HTTP.On = false }},
	}
	for _, tt := range tests {
		w := httpWorld(1, false)
		tt.break_(&w)
		err := w.Validate()
		if !errors.Is(err, sim.ErrInvalidWorld) || !strings.Contains(err.Error(), "HTTP.") {
			t.Errorf("%s: Validate gave %v, want an invalid world naming an HTTP field", tt.name, err)
		}
	}
}

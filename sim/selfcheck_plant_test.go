//go:build plant

// The fakes check their own fault model: a fake channel that answers a
// probe healthy during an outage stops the run with a panic naming the
// rule it broke, instead of letting the run go on in a world that cannot
// happen.
package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

func TestFakeChannelSelfCheck(t *testing.T) {
	w := scenarios.Base(1)
	w.FaultsEnd = 20 * time.Second
	w.Channel.Outages = []sim.Window{{From: 5 * time.Second, To: 15 * time.Second}}
	if _, err := sim.Run(w, 1, sim.Options{}); err != nil {
		t.Fatalf("the outage world itself runs clean: %v", err)
	}
	restore, err := plant.Set(plant.ProbeHealthyInOutage)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	defer func() {
		p := recover()
		if p == nil {
			t.Fatal("a probe answered healthy during an outage, and the run went on")
		}
		if msg, _ := p.(string); !strings.Contains(msg, "[probe-in-outage]") {
			t.Fatalf("the panic does not name the rule: %v", p)
		}
	}()
	sim.Run(w, 1, sim.Options{})
}

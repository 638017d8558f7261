package sim

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
	"github.com/courierlab/courier/worker/observe"
)

// The simulator skips observe.Worker for the kinds entryless names: it
// must make no entry of any of them, whatever the event holds.
func TestEntrylessKindsMakeNoEntries(t *testing.T) {
	made := 0
	for k := range math.MaxUint8 + 1 {
		ev := worker.Event{
			Kind: worker.Kind(k), At: Epoch.Add(time.Second), Stream: "s01", Token: 7,
			Records: []machine.Record{{ID: "e001", Seq: 1}, {ID: "e002", Seq: 2}},
			Circuit: machine.Open, Outcome: channel.Outcome{Result: machine.OutcomeDelivered},
			ID: "e001", Seq: 1, Attempt: 2, Op: "Save", Err: errors.New("boom"), Count: 3, Detail: "4",
		}
		got := observe.Worker(nil, "w1", ev)
		if entryless(ev.Kind) && len(got) > 0 {
			t.Errorf("%v: entryless, but observe.Worker makes %d entries: %+v", ev.Kind, len(got), got)
		}
		if len(got) > 0 {
			made++
		}
	}
	if made == 0 {
		t.Fatal("observe.Worker made no entry of any kind: the test's event is not one it logs")
	}
}

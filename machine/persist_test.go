package machine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
)

// TestKeptPersistListsStayPut holds persistRoom, which carves batches'
// Persist lists from shared blocks, to the plain contract of one fresh
// allocation per list: a caller that keeps every batch (as an observer
// does) and appends to them sees each list hold what it held when handed
// out, whatever later steps and appends do.
func TestKeptPersistListsStayPut(t *testing.T) {
	cfg := machine.DefaultConfig()
	cfg.Ordering, cfg.Window = machine.Independent, 3
	m, err := machine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var kept, copies [][]machine.Record
	now := epoch
	for i := range 200 {
		now = now.Add(time.Millisecond)
		var in machine.Input = machine.Accept{At: now, ID: fmt.Sprintf("e%d", i), Payload: []byte{byte(i)}}
		if i%3 == 2 { // a step that settles several records at once
			in = machine.Tick{At: now.Add(time.Hour)}
			now = now.Add(time.Hour)
		}
		b, err := m.Step(in)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, b.Persist)
		copies = append(copies, slices.Clone(b.Persist))
		for _, p := range kept[max(0, len(kept)-4):] {
			// An append past a kept list's length must not reach a list
			// handed out after it.
			_ = append(p, machine.Record{ID: "scribble", Seq: 1 << 40})
		}
	}
	for i := range kept {
		if diff := cmp.Diff(copies[i], kept[i]); diff != "" {
			t.Fatalf("batch %d's Persist changed after it was handed out (-then +now):\n%s", i, diff)
		}
	}
}

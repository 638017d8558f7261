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

// TestKeptPayloadsStayPut holds clonePayload, which carves small payloads
// from shared blocks, to the plain slices.Clone it replaced: every
// payload handed out (in Sends and Persist) is a copy of the one accepted,
// nil for nil and empty for empty, and stays what it was whatever the
// caller does to the payload it passed in and whatever it appends to the
// payloads it was handed, of any size around the carving limit.
func TestKeptPayloadsStayPut(t *testing.T) {
	cfg := machine.DefaultConfig()
	cfg.Ordering, cfg.Window = machine.Independent, 1_000
	m, err := machine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type kept struct{ got, want []byte }
	var all []kept
	now := epoch
	for i := range 600 {
		now = now.Add(time.Millisecond)
		var p []byte
		switch n := i % 150; {
		case n == 0:
			p = nil
		case n == 1:
			p = []byte{}
		default:
			p = make([]byte, n-2, n+5) // room to scribble into past its length
			for j := range p {
				p[j] = byte(i + j)
			}
		}
		b, err := m.Step(machine.Accept{At: now, ID: fmt.Sprintf("e%d", i), Payload: p})
		if err != nil || len(b.Sends) != 1 || len(b.Persist) != 1 {
			t.Fatalf("accept e%d: %v; %d sends, %d records", i, err, len(b.Sends), len(b.Persist))
		}
		want := slices.Clone(p)
		for _, got := range [][]byte{b.Sends[0].Payload, b.Persist[0].Payload} {
			if (got == nil) != (want == nil) || !slices.Equal(got, want) {
				t.Fatalf("e%d: payload %v (nil %t), want %v (nil %t)", i, got, got == nil, want, want == nil)
			}
			all = append(all, kept{got, want})
			_ = append(got, 0xff, 0xff, 0xff) // must not reach the next payload
		}
		for j := range p {
			p[j] = 0xee // the caller's buffer is its own again
		}
	}
	for i, k := range all {
		if !slices.Equal(k.got, k.want) {
			t.Fatalf("payload %d changed after it was handed out: %v, want %v", i, k.got, k.want)
		}
	}
}

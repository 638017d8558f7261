package machine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

// TestKeptPayloadsStayPut: the machine keeps its own copy of every
// payload it accepts. Every payload handed out (in Sends and Persist) is
// a copy of the one accepted, nil for nil and empty for empty, and stays
// what it was whatever the caller does to the payload it passed in and
// whatever it appends to the payloads it was handed.
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

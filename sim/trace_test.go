// Every trace op has a format with one verb per argument its call sites
// pass, and a line is formatted exactly as the hash encodes it: checked on
// a hand-made line of each argument kind.
package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

func TestTraceFormatsComplete(t *testing.T) {
	for o := opWorld; o <= opLast; o++ {
		if formats[o] == "" {
			t.Errorf("op %d has no format", o)
		}
	}
	if len(formats) != int(opLast)+1 {
		t.Errorf("formats has %d entries for %d ops", len(formats)-1, opLast)
	}
}

func TestTraceLineText(t *testing.T) {
	r := machine.Record{ID: "e001", Seq: 1, State: machine.Retry, Attempts: 2, NextAt: Epoch.Add(1500 * time.Millisecond)}
	now := Epoch.Add(2 * time.Second)
	tests := []struct {
		name   string
		worker string
		o      op
		args   []arg
		want   string
	}{
		{"world", "", opWorld, []arg{unum(7), num(40), str("strict"), dur(25 * time.Second)}, "        2s  world seed=7 events=40 ordering=strict faults-end=25s"},
		{"persist", "w1", opPersist, []arg{record(&r)}, "        2s  w1 out  persist e001 seq=1 retry attempts=2 next=1.5s"},
		{"input", "", opIn, []arg{input(machine.Tick{At: now})}, "        2s  in   tick at=2s"},
		{"lease", "w2", opLease, []arg{str("s"), unum(3), instant(Epoch.Add(time.Minute))}, "        2s  w2 lease s token=3 until 1m0s"},
	}
	for _, tt := range tests {
		if got := formatLine(now, tt.worker, tt.o, tt.args); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
		if strings.Count(formats[tt.o], "%") != len(tt.args) {
			t.Errorf("%s: format %q takes %d arguments, the test passes %d", tt.name, formats[tt.o], strings.Count(formats[tt.o], "%"), len(tt.args))
		}
	}
}

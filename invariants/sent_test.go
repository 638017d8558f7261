package invariants

import (
	"testing"
	"time"
)

// TestSentBeforeBothRanges: attempt numbers are remembered whether they fit
// the bit set (0 to 63) or spill into the map.
func TestSentBeforeBothRanges(t *testing.T) {
	var v eventView
	for _, n := range []int{1, 63, 64, 1000, -1} {
		if v.sentBefore(n) {
			t.Errorf("attempt %d reported as sent before its first send", n)
		}
		if !v.sentBefore(n) {
			t.Errorf("attempt %d sent twice, but not reported", n)
		}
	}
	if v.sentBefore(2) {
		t.Error("attempt 2 was never sent, but reported as sent")
	}
}

// TestPlusIsAdd: plus gives t.Add(d) exactly, the same fields, for zero and
// other durations, with and without a monotonic clock reading.
func TestPlusIsAdd(t *testing.T) {
	times := []time.Time{{}, time.Now(), time.Now().Round(0), time.Unix(1e9, 5).UTC(), time.Unix(-1e12, 999999999)}
	durs := []time.Duration{0, 1, -1, time.Hour, -time.Hour, 1<<63 - 1, -1 << 63}
	for _, tm := range times {
		for _, d := range durs {
			if got, want := plus(tm, d), tm.Add(d); got != want {
				t.Errorf("plus(%v, %v) = %#v, want %#v", tm, d, got, want)
			}
		}
	}
}

package invariants

import "testing"

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

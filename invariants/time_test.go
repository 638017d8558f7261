package invariants

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimeShortcutsMatchTime: before and reached, which settle equal
// times without calling time's methods, answer as a.Before(b) and
// !t.Before(u.Add(d)) do, on random instants that are often equal (in the
// same or another location), a nanosecond apart, or zero, and durations
// that are often zero, negative, or a nanosecond.
func TestTimeShortcutsMatchTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	locs := []*time.Location{time.UTC, time.FixedZone("x", 3600)}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	instant := func() time.Time {
		switch rng.IntN(6) {
		case 0:
			return time.Time{}
		case 1:
			return base.In(locs[rng.IntN(2)])
		}
		return base.Add(time.Duration(rng.IntN(5)-2) * time.Duration([]int64{1, 1e9}[rng.IntN(2)])).In(locs[rng.IntN(2)])
	}
	for range 20000 {
		a, b := instant(), instant()
		if rng.IntN(3) == 0 {
			b = a
		}
		d := time.Duration(rng.IntN(5)-2) * time.Duration([]int64{1, 1e9, 1 << 62}[rng.IntN(3)])
		if got, want := before(a, b), a.Before(b); got != want {
			t.Fatalf("before(%v, %v) = %v, want %v", a, b, got, want)
		}
		if got, want := reached(a, b, d), !a.Before(b.Add(d)); got != want {
			t.Fatalf("reached(%v, %v, %v) = %v, want %v", a, b, d, got, want)
		}
	}
}

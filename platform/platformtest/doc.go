// Package platformtest is the conformance suite of platform.Store: every
// store runs it with one call from its own test, on a fresh store per
// check, under a clock the suite moves.
//
//	func TestConformance(t *testing.T) {
//		platformtest.Run(t, func(t *testing.T, now func() time.Time) platform.Store { return open(t, now) })
//	}
package platformtest

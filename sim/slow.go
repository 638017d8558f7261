package sim

import (
	"fmt"
	"time"
)

// Slow store calls (World.Store.Slow). The simulator's store calls are
// synchronous: a slow call holds the whole world, as if every other
// process waited too. Its virtual clock moves on by the call's delay,
// either before the store acts (the store acts late, on a lease that may
// have run out meanwhile) or after it (the reply comes late, to a caller
// whose clock reading is that much older). What the world scheduled in
// the meantime happens when the call returns, late by what it held.
//
// A worker call (Advance, Deliver) meets at most one slow store call, so
// that a reading is never staler than Max from them: the checker's slack
// grows by Max, as for a stall of Max.

// SlowCalls makes single store calls of the workers (ClaimDue, Renew,
// Pending, Save, Release) slow while faults last. The producer's Enqueue
// and the operator's calls are never slow.
type SlowCalls struct {
	// Rate is the chance that a worker's store call is slow.
	Rate float64
	// Each slow call takes a delay drawn in [Min, Max].
	Min, Max time.Duration
	// Limit is the most slow calls in all, so that the time they hold
	// the world is bounded (Limit*Max); a secret rotation's RotationHold
	// grows by it.
	Limit int
}

// on reports whether the world has slow calls.
func (c SlowCalls) on() bool { return c.Rate > 0 && c.Limit > 0 }

// held is the most time slow calls hold the world in all.
func (c SlowCalls) held() time.Duration {
	if !c.on() {
		return 0
	}
	return time.Duration(c.Limit) * c.Max
}

func (c SlowCalls) validate(w World) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Store.Slow.%s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	switch {
	case !(c.Rate >= 0 && c.Rate <= 1):
		return bad("Rate", "is %v; must be within 0..1", c.Rate)
	case c.Min < 0:
		return bad("Min", "is %v; must not be negative", c.Min)
	case c.Max < c.Min:
		return bad("Max", "is %v; must be at least Min (%v)", c.Max, c.Min)
	case c.Limit < 0:
		return bad("Limit", "is %d; must not be negative", c.Limit)
	case c.on() && c.Max <= 0:
		return bad("Max", "is %v; must be positive when Rate and Limit are", c.Max)
	}
	return nil
}

func (c SlowCalls) describe() string {
	if !c.on() {
		return ""
	}
	return fmt.Sprintf(" slow-calls=%.2f:%v..%v<=%d", c.Rate, c.Min, c.Max, c.Limit)
}

// slowCall draws whether n's store call op is slow. A slow call holds
// the world for its delay before the store acts, and slowCall returns 0,
// or returns the delay to hold after the store acted (its reply comes
// late), for the caller to pass to hold. Nothing is drawn in a world
// without slow calls, after FaultsEnd, once Limit were drawn, or when
// the worker's call under way met a slow call already.
func (s *sim) slowCall(n *node, op string) (after time.Duration) {
	c := &s.w.Store.Slow
	if !c.on() || s.slowCalls >= c.Limit || s.slowed || !s.faulty() || !chance(s.rSlow, c.Rate) {
		return 0
	}
	s.slowCalls++
	s.slowed = true
	d := between(s.rSlow, c.Min, c.Max)
	if s.rSlow.IntN(2) == 0 {
		s.note(n, opSlowCall, str(op), dur(d), str("before the store acts"))
		s.hold(d)
		return 0
	}
	s.note(n, opSlowCall, str(op), dur(d), str("after the store acted: its reply comes late"))
	return d
}

// hold moves the virtual clock on by d inside the happening under way:
// the world waits for a slow call.
func (s *sim) hold(d time.Duration) {
	if d > 0 {
		s.elapsed += d
		s.now = Epoch.Add(s.elapsed)
	}
}

// savedAt is when the store made a Save through the lease token.
type savedAt struct {
	token uint64
	at    time.Time
}

// noteSaved notes that the store made a Save through token now.
func (s *sim) noteSaved(token uint64) {
	s.saved = append(s.saved, savedAt{token: token, at: s.now})
}

// savedFor takes the instant of the earliest Save through token in the
// worker call under way; the current instant if none is noted.
func (s *sim) savedFor(token uint64) time.Time {
	for i, sv := range s.saved {
		if sv.token == token {
			s.saved = append(s.saved[:i], s.saved[i+1:]...)
			return sv.at
		}
	}
	return s.now
}

package invariants

import "time"

// pauseState follows an operator's pauses of one stream (Paused,
// Resumed) and the leases granted during them, for the pause rule.
type pauseState struct {
	on    bool      // paused now
	first time.Time // when the first pause began; zero: never paused
	at    time.Time // when the current pause began
	step  int       // its step
	rule  string    // the rule it is judged by: PauseHeld, or DisabledGetsNothing for a disable
	// grants are the leases granted during the current pause, and held
	// those of pauses that ended: no send may go out under any of them.
	grants []pausedGrant
	held   []pausedGrant
}

// pausedGrant is a lease granted while the stream was paused.
type pausedGrant struct {
	token uint64
	at    time.Time
	pause int    // the step of the pause
	rule  string // the pause's rule
}

func (s *pauseState) reset() {
	*s = pauseState{grants: s.grants[:0], held: s.held[:0]}
}

// changed notes a pause or a resume. A grant up to stall before the
// resume may have read the pause on a stale clock after it ended, and
// rightly kept the stream: it is forgotten.
func (s *pauseState) changed(e *Entry, stall time.Duration) {
	switch e.Kind {
	case Paused:
		if !s.on {
			s.on, s.at, s.step, s.rule = true, e.At, e.Step, PauseHeld
			if e.Detail == PauseDisabled {
				s.rule = DisabledGetsNothing
			}
		}
		if s.first.IsZero() {
			s.first = e.At
		}
	case Resumed:
		for _, g := range s.grants {
			if g.at.Add(stall).Before(e.At) {
				s.held = append(s.held, g)
			}
		}
		s.on, s.grants = false, s.grants[:0]
	}
}

// granted notes a lease granted while the stream is paused.
func (s *pauseState) granted(e *Entry) {
	if s.on {
		s.grants = append(s.grants, pausedGrant{token: e.Token, at: e.At, pause: s.step, rule: s.rule})
	}
}

// heldBy reports whether token was granted during a pause, and that
// pause's step and rule: a takeover the pause must have stopped.
func (s *pauseState) heldBy(token uint64) (int, string, bool) {
	if token == 0 {
		return 0, "", false
	}
	for _, list := range [][]pausedGrant{s.grants, s.held} {
		for _, g := range list {
			if g.token == token {
				return g.pause, g.rule, true
			}
		}
	}
	return 0, "", false
}

// overdue reports, while the stream is paused, how long after the pause
// began an instant at falls, when that is more than within: an owner
// asks Policy again at each renewal, so it stops sending within one.
func (s *pauseState) overdue(at time.Time, within time.Duration) (time.Duration, bool) {
	if !s.on {
		return 0, false
	}
	late := at.Sub(s.at)
	return late, late > within
}

package courier

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/worker"
)

func limitedSend(stream string, at time.Time, per time.Duration) worker.Send {
	return worker.Send{Attempt: channel.Attempt{Stream: stream}, At: at, RatePer: per}
}

// The case TestPlatformRateLimit met under load: four sends started at 0
// left 300ms late, four started 1s later were handed out only 50ms late.
// Those wait until a second after the first four left.
func TestSpacingHoldsALaterCallsSends(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := sendSpacing{}
	for range 4 {
		if h := s.hold(limitedSend("e", t0, time.Second), t0.Add(300*time.Millisecond)); h != 0 {
			t.Fatalf("the first call's sends are held %v; want none", h)
		}
	}
	for range 4 {
		if h := s.hold(limitedSend("e", t0.Add(time.Second), time.Second), t0.Add(1050*time.Millisecond)); h != 250*time.Millisecond {
			t.Fatalf("the second call's send is held %v; want 250ms (to 1s after the first call's left)", h)
		}
	}
	// A stream without a limit is never held nor kept.
	if h := s.hold(limitedSend("free", t0, 0), t0); h != 0 || len(s) != 1 {
		t.Fatalf("an unlimited send: held %v, %d streams kept; want 0 and 1", h, len(s))
	}
	// Once the starts are more than RatePer apart plus the hold, nothing waits.
	if h := s.hold(limitedSend("e", t0.Add(2600*time.Millisecond), time.Second), t0.Add(2610*time.Millisecond)); h != 0 {
		t.Fatalf("a send started 1.6s after the last is held %v; want none", h)
	}
	s.prune(t0.Add(3610 * time.Millisecond))
	if len(s) != 0 {
		t.Fatalf("prune a RatePer after the last departure kept %v", s)
	}
}

// Whatever the lag of each call, departures keep the machine's rule when
// the starts do: attempt k+limit leaves no earlier than RatePer after
// attempt k. Starts are drawn to obey the rule, tightly, with calls of
// one to limit sends and lags of 0 to 400ms.
func TestSpacingKeepsTheRateLimitOnDepartures(t *testing.T) {
	const (
		limit = 4
		per   = time.Second
	)
	rng := rand.New(rand.NewPCG(26, 1))
	for round := range 200 {
		s := sendSpacing{}
		t0 := time.Unix(1000, 0)
		var starts, left []time.Time
		at, handed := t0, t0
		for len(starts) < 60 {
			at = at.Add(time.Duration(rng.Int64N(int64(400 * time.Millisecond))))
			if k := len(starts) - limit; k >= 0 && at.Before(starts[k].Add(per)) {
				at = starts[k].Add(per) // the machine's rule on starts
			}
			handed = later(handed, at.Add(time.Duration(rng.Int64N(int64(400*time.Millisecond)))))
			for range 1 + rng.IntN(limit) {
				if k := len(starts) - limit; k >= 0 && at.Before(starts[k].Add(per)) {
					break // this call may start no more
				}
				starts = append(starts, at)
				left = append(left, handed.Add(s.hold(limitedSend("e", at, per), handed)))
			}
		}
		for k := limit; k < len(left); k++ {
			if gap := left[k].Sub(left[k-limit]); gap < per {
				t.Fatalf("round %d: sends %d and %d left %v apart (started %v apart); want at least %v",
					round, k-limit, k, gap, starts[k].Sub(starts[k-limit]), per)
			}
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

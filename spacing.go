package courier

import (
	"time"

	"github.com/courierlab/courier/worker"
)

// sendSpacing keeps each rate-limited stream's sends at least as far
// apart, as they leave, as the worker started them. The machine's rate
// limit (at most RateLimit starts in any RatePer) holds for the starts
// by the worker's clock (worker.Send.At); the loop hands a call's sends
// out only after the call's store work, so without spacing a receiver
// would see the window shortened by however much one call's store work
// outlasted a later one's (TestPlatformRateLimit under -race and load:
// two starts 1s apart arrived 867ms apart).
//
// The rule: a send leaves no earlier than the previous send of its
// stream left plus the gap between their starts, that gap capped at
// RatePer. Any RateLimit+1 consecutive starts span at least RatePer, so
// their departures do too: the gaps add up to RatePer or more, or one of
// them alone is RatePer. The cap lets the hold shrink again once the
// stream's starts are more than RatePer apart, so one slow call delays
// the sends of a window, not every later one.
//
// It only spaces what the loop hands out: sends that then wait for a
// slot of the global bound (Config.MaxInFlight) leave when they get one.
// The loop owns it (one goroutine); a stream without a limit (RatePer 0)
// is never held and not kept.
type sendSpacing map[string]departure

// departure is a stream's last send: when the worker started it and
// when the loop let it leave.
type departure struct {
	at, left time.Time
	per      time.Duration
}

// hold returns how long x waits before it is sent, handed out at now.
func (s sendSpacing) hold(x worker.Send, now time.Time) time.Duration {
	if x.RatePer <= 0 {
		return 0
	}
	leaves := now
	if last, ok := s[x.Stream]; ok {
		gap := min(max(x.At.Sub(last.at), 0), x.RatePer)
		if earliest := last.left.Add(gap); earliest.After(leaves) {
			leaves = earliest
		}
	}
	s[x.Stream] = departure{at: x.At, left: leaves, per: x.RatePer}
	return leaves.Sub(now)
}

// prune forgets the streams whose last send left a whole RatePer before
// now: the rule holds back none of their next sends (it leaves at
// last.left + at most RatePer), so they need no entry, and streams the
// worker gave up do not pile up.
func (s sendSpacing) prune(now time.Time) {
	for stream, d := range s {
		if !now.Before(d.left.Add(d.per)) {
			delete(s, stream)
		}
	}
}

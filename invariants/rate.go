package invariants

import "time"

// RateLimit: with a rate limit (Policy.RateLimit starts per RatePer), no
// interval of RatePer holds more than RateLimit attempt starts of the
// stream, by every owner: start k+RateLimit lies at least RatePer after
// start k. An attempt starts when an owner persists its record with the
// attempt counted (the Persisted entry before its Sent): that is when the
// machine decided it, by its clock, whereas a worker may stall between
// the persist and the send (a pause), and its delayed sends then bunch up
// with the next ones at the receiver, which no limit in the machine can
// prevent. Probes do not count (machine/doc.go, "Rate limit"). Slack:
// 2*Run.Skew, since each owner decides by its own clock, up to Skew off
// the log's either way (Stall included).
const RateLimit = "rate-limit"

// rateRule judges RateLimit as the log goes by: it keeps the instants of
// the stream's last RateLimit starts.
type rateRule struct {
	limit  int
	per    time.Duration
	slack  time.Duration
	starts []time.Time // a ring of the last limit starts: next is the oldest once full
	next   int
	n      int
	// recovered is when the single sender's machine was last recovered,
	// for the late half of retry-timing (due.go): a recovered machine
	// counts a full window of starts then.
	recovered time.Time
}

func (r *rateRule) reset(run Run) {
	r.limit, r.per, r.slack = run.Policy.RateLimit, run.Policy.RatePer, 2*run.Skew
	r.starts = r.starts[:0]
	r.next, r.n = 0, 0
	r.recovered = time.Time{}
	if r.limit > 0 {
		r.starts = append(r.starts, make([]time.Time, r.limit)...)
	}
}

// started judges the start of attempt e.Record.Attempts, persisted by e.
func (r *rateRule) started(e *Entry, fail func(inv, id string, step int, format string, args ...any)) {
	if r.limit == 0 {
		return
	}
	if r.n == r.limit {
		oldest := r.starts[r.next]
		if e.At.Add(r.slack).Before(oldest.Add(r.per)) {
			fail(RateLimit, e.Record.ID, e.Step, "attempt %d started %v after the start %d starts before it, within RatePer %v: %d starts in one window (RateLimit %d)",
				e.Record.Attempts, e.At.Sub(oldest), r.limit, r.per, r.limit+1, r.limit)
		}
	} else {
		r.n++
	}
	r.starts[r.next] = e.At
	r.next = (r.next + 1) % r.limit
}

// restarted notes a recovery of the single sender's machine.
func (r *rateRule) restarted(e *Entry) {
	if e.Worker == "" {
		r.recovered = e.At
	}
}

// mayHold reports whether the rate limit may hold back a start of the
// single sender due at instant at: a full window of starts lies within
// RatePer before it, or its machine was recovered within RatePer before it.
func (r *rateRule) mayHold(at time.Time) bool {
	if r.limit == 0 {
		return false
	}
	if !r.recovered.IsZero() && at.Before(r.recovered.Add(r.per)) {
		return true
	}
	return r.n == r.limit && at.Before(r.starts[r.next].Add(r.per))
}

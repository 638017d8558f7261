package invariants

import (
	"time"

	"github.com/courierlab/courier/machine"
)

// The late half of retry-timing: a retry is not only scheduled within the
// policy's greatest delay (judged on the NextAt persisted with the
// failure), it also goes out at that NextAt when nothing holds it back.
// Judged for the single sender only (Entry.Worker ""), whose clock is the
// log's and whose timers fire on time; a worker of a cluster may stall or
// lose its lease, which no log entry excuses in advance.
//
// Nothing holds a retry back when, at its NextAt, the same machine still
// runs, its circuit has been closed since before that instant, and the
// window cannot be full: every non-terminal event fits in it at once (in
// strict order, the retry is the only non-terminal event). The check runs
// once the log has moved past NextAt, so that everything that happened at
// that instant counts.

type dueRetry struct {
	at      time.Time
	ev      int // the event, by number
	attempt int // the attempt that failed; the retry is attempt+1
	inc     int
	step    int // where the failure was persisted
}

// less orders retries by NextAt, then by step: the order retriesDue
// judges them in.
//
//lint:ignore U1000 used through minHeap's type constraint, which staticcheck does not follow
func (d dueRetry) less(o dueRetry) bool {
	return d.at.Before(o.at) || d.at.Equal(o.at) && d.step < o.step
}

// expectRetry notes a failure persisted in retry by the single sender.
func (p *policy) expectRetry(e *Entry, at ref, w *workerState) {
	if e.Worker != "" || e.Record.State != machine.Retry {
		return
	}
	p.due.push(dueRetry{at: e.Record.NextAt, ev: at.ev, attempt: e.Record.Attempts, inc: w.inc, step: e.Step})
}

// retriesDue judges every retry due before now, as the log reaches now.
// A retry due at or after paused (when an operator first paused the
// stream; zero: never) is not judged: the owner stops starting attempts
// once it sees the pause, and after the resume a new owner rebuilds.
func (p *policy) retriesDue(now time.Time, step int, paused time.Time) {
	for p.due.len() > 0 && p.due.min().at.Before(now) {
		d := p.due.pop()
		v, w := &p.events[d.ev], p.worker(p.single)
		switch {
		case v.rec.State != machine.Retry || v.rec.Attempts != d.attempt || !v.rec.NextAt.Equal(d.at):
			continue // it went out, died, or was parked
		case !paused.IsZero() && !d.at.Before(paused):
			continue // a pause may hold it
		case w.inc != d.inc || w.circuit != machine.Closed || !w.circuitAt.Before(d.at):
			continue // another machine, or the circuit held it
		case p.run.Policy.Ordering == machine.Strict && p.live > 1:
			continue // an earlier event may hold the stream
		case p.live > max(p.run.Policy.Window, 1):
			continue // the window may be full
		case p.rate.mayHold(d.at):
			continue // the rate limit may hold it (rate.go)
		}
		p.fail(RetryTiming, p.ids.list[d.ev], step, "attempt %d was due at its NextAt %v after its failure (step %d), with the circuit closed and room in the window, and had not gone out by %v",
			d.attempt+1, d.at.Sub(v.failedAt), d.step, now.Sub(d.at))
	}
}

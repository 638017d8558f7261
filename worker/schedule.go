package worker

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Scheduling (issue 26): the store hands out streams earliest due first
// (store.Store.ClaimDue), and the worker keeps only streams with work
// near. Two rules make every stream's wait for an owner bounded, however
// many streams there are:
//
//   - far release: a parked stream (its circuit open) whose next timed
//     work (the probe owed, an event's MaxAge) is more than FarRelease
//     away, with no attempt out, is released until that instant
//     (store.Store.ReleaseUntil), and the store grants it again then;
//   - yield: at its claim poll, a full worker asks the store for as many
//     due streams as it has streams owned for YieldAfter; for each one
//     the store grants, it gives one of those back (at once, or, with
//     attempts out, once they are answered or an AttemptTimeout later),
//     released at the store's now, so it queues behind every stream that
//     waited before it.
//
// The bound: with room = the streams all workers may own together, a
// stream with due work waits for an owner at most
//
//	⌈streams ÷ room⌉ × (YieldAfter + AttemptTimeout + 2×Poll)
//
// beyond the delays faults add (a stall, a failed or slow store call, a
// clock skew: the checker's Slack). Why: a waiting stream W is due since
// an instant d. Every stream released after W fell due is due at its
// release or later, so it queues behind W; only the streams already due
// before d can be granted before it, at most streams-1 of them. Each of
// the room slots turns over within YieldAfter and a Poll (the claim poll
// that swaps it; a stream that goes idle or parked frees its slot
// sooner), all slots at once, so W is granted within ⌈streams ÷ room⌉
// turnovers. AttemptTimeout and the second Poll are a margin: a yielded
// stream's attempts out keep it owned that much longer (beside the
// stream granted in its place), and a claim may come a Poll after the
// release it follows. WaitBound computes it.

// WaitBound is the longest a stream with due work waits for an owner,
// beyond what faults add, when streams streams share workers whose
// MaxStreams add up to room, each configured as c (defaults filled in)
// and attemptTimeout the streams' longest AttemptTimeout.
func WaitBound(c Config, attemptTimeout time.Duration, streams, room int) time.Duration {
	if room < 1 {
		room = 1
	}
	turns := (streams + room - 1) / room
	return time.Duration(turns) * (c.YieldAfter + attemptTimeout + 2*c.Poll)
}

// releaseFar releases st until its next timed work when that is more
// than FarRelease away and nothing of it is out. It reports whether the
// stream was released (or lost).
func (w *Worker) releaseFar(ctx context.Context, st *stream, now time.Time) bool {
	if w.draining || st.gone || st.closing != "" || st.m == nil || len(st.handed) > 0 || st.m.Queued() == 0 {
		return false
	}
	if st.wakeAt.IsZero() || st.wakeAt.Sub(now) <= w.cfg.FarRelease {
		return false
	}
	if st.m.Circuit() != machine.Open || len(st.m.InFlight()) > 0 || st.m.ProbeOut() {
		// Only a parked stream: its next owner recovers it open and
		// probes at once, when the probe falls due, as this owner would
		// have. A stream in a long backoff is kept: a recovered retry
		// probes first, which would cost it its retry's timing. Nor one
		// with a probe out: its answer would be dropped, and an owner
		// that released the stream after each probe (its timeout beyond
		// FarRelease) would never hear one and never close the circuit
		// (swarm seed 148331270897: 26s parked after the channel healed).
		return false
	}
	until := st.wakeAt
	err := w.cfg.Store.ReleaseUntil(ctx, st.lease, until)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		w.lose(st, "release refused: "+err.Error(), err)
		return true
	case err != nil:
		// Kept: it is still owned, and tried again at the next poll.
		w.observe(Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "ReleaseUntil", Err: err})
		return false
	}
	w.observe(Event{Kind: LeaseReleased, Stream: st.lease.Stream, Token: st.lease.Token, Until: until,
		Detail: "next work at " + until.Format(time.RFC3339Nano) + ", more than FarRelease away"})
	w.forget(st)
	return true
}

// yieldAt is when the worker, full, next has a stream to yield: the
// earliest instant one of its streams (not yielding already) has been
// owned for YieldAfter. ok is false when it has none.
func (w *Worker) yieldAt() (at time.Time, ok bool) {
	for _, st := range w.order {
		if st.closing != "" {
			continue
		}
		if t := st.since.Add(w.cfg.YieldAfter); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// candidates are the streams a full worker may yield at now: those owned
// for YieldAfter at least and not closing, longest owned first, ties by
// name.
func (w *Worker) candidates(now time.Time) []*stream {
	var out []*stream
	for _, st := range w.order { // by name: a stable sort keeps ties so
		if st.closing == "" && !now.Before(st.since.Add(w.cfg.YieldAfter)) {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(a, b *stream) int { return a.since.Compare(b.since) })
	return out
}

// swap is a full worker's claim poll: it asks the store for as many due
// streams as it has streams to yield, and yields one for each stream
// granted in its place, longest owned first. Every slot of the worker
// thus turns over within YieldAfter and a Poll while streams wait, all
// slots at once. A grant may be of a stream the worker thought it held
// (its lease ran out in the store): adoptLease replaces that stream,
// which takes no room, so nothing is yielded for it, and a candidate so
// replaced is passed over.
func (w *Worker) swap(ctx context.Context, now time.Time) {
	w.claimAt = w.nextPoll(now)
	cands := w.candidates(now)
	if len(cands) == 0 {
		return
	}
	leases, err := w.cfg.Store.ClaimDue(ctx, w.cfg.Owner, w.cfg.LeaseTTL, len(cands))
	if err != nil {
		w.observe(Event{Kind: StoreFailed, Op: "ClaimDue", Err: err})
		return
	}
	for _, l := range leases {
		replaced := w.streams[l.Stream] != nil
		w.adoptLease(ctx, l, now)
		if replaced || w.streams[l.Stream] == nil {
			continue // no room taken: a replacement, or given back at once
		}
		for len(cands) > 0 && (cands[0].gone || cands[0].closing != "") {
			cands = cands[1:]
		}
		if len(cands) == 0 {
			return // every candidate was replaced: one over the room, yielded later
		}
		w.yield(ctx, cands[0], now)
		cands = cands[1:]
	}
}

// yield gives st back to make room: at once if nothing of it is out,
// otherwise once its attempts are answered, or an AttemptTimeout later.
func (w *Worker) yield(ctx context.Context, st *stream, now time.Time) {
	st.yielding = true
	if !st.awaiting() {
		w.release(ctx, st, "owned for YieldAfter: yielding to a waiting stream")
		return
	}
	st.closing = "owned for YieldAfter: yielding to a waiting stream"
	st.closeBy = now.Add(st.cfg.AttemptTimeout)
	st.idleSince = time.Time{}
	w.reschedule(st)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

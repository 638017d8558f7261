package worker

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// pendingSave is one batch of a stream's machine waiting for its Save:
// what Save writes, and what the worker does once it is durable.
type pendingSave struct {
	st      *stream
	lease   store.Lease
	ups     []store.Update
	persist []machine.Record
	sends   []machine.Send
	probes  []machine.Probe
	wake    time.Time
}

// Deliver hands a Send's or Probe's outcome to the machine that asked for
// it and carries out what follows. A reply for a stream the worker no
// longer owns, or for a machine it has since rebuilt, is dropped. It is
// DeliverAll with one reply.
func (w *Worker) Deliver(ctx context.Context, reading time.Time, r Reply) Effects {
	return w.DeliverAll(ctx, reading, []Reply{r})
}

// DeliverAll is Deliver for several replies at once, in order: what a
// driver does with the replies that came in while it was busy. Each
// reply's machine steps as Deliver would step it, but the batches they
// persist wait, and go to the store together, in one
// store.BatchSaver.SaveBatch call when the store has it (one commit for
// all: group commit) and in one Save each otherwise (store.SaveEach).
// Nothing a batch starts is handed out before its own Save returned nil,
// and a Save the store refuses fails its own stream only. A stream whose
// batch waits is not stepped again until the waiting batches are made: a
// second reply of the same stream makes them first.
//
// A stream that handed out sends or probes in the call is not stepped
// again before the driver made them: its further replies are held, and
// the next call (DeliverAll or Advance; Next says now) steps them first,
// as a Deliver after the driver sent would. Otherwise a later reply could
// trip the stream's circuit while attempts it started earlier in the call
// have yet to go out: they would go out while the circuit is checking.
func (w *Worker) DeliverAll(ctx context.Context, reading time.Time, rs []Reply) Effects {
	w.deliverAll(ctx, w.clock(reading), rs)
	return w.flush()
}

// deliverAll is DeliverAll at the worker's clock reading now, after the
// replies it held last time.
func (w *Worker) deliverAll(ctx context.Context, now time.Time, rs []Reply) {
	rs = append(w.held, rs...)
	w.held = nil
	w.batching = true
	var touched, answered []*stream
	for _, r := range rs {
		st := w.streams[r.Stream]
		if st != nil && st.saving {
			w.saveWaiting(ctx, now) // which may hand out st's sends
		}
		if st != nil && st.handedOut {
			w.held = append(w.held, r)
			continue
		}
		st, stepped := w.deliverOne(ctx, now, r)
		if st != nil {
			touched = append(touched, st)
		}
		if stepped {
			answered = append(answered, st)
		}
	}
	w.saveWaiting(ctx, now)
	w.batching = false
	for _, st := range answered {
		if !st.gone && st.closing != "" {
			w.closeIfDone(ctx, st, now)
		}
	}
	for _, st := range touched {
		w.reschedule(st)
	}
}

// saveWaiting makes the Saves that wait, in one call, and carries out
// what follows each.
func (w *Worker) saveWaiting(ctx context.Context, now time.Time) {
	if len(w.saves) == 0 {
		return
	}
	waiting := w.saves
	w.saves = nil
	batch := make([]store.LeaseSave, len(waiting))
	for i, sv := range waiting {
		sv.st.saving = false
		batch[i] = store.LeaseSave{Lease: sv.lease, Updates: sv.ups}
	}
	errs := store.SaveEach(ctx, w.cfg.Store, batch)
	for i, sv := range waiting {
		if plantedActsOnStale(errs[i]) {
			// The planted BatchActsOnRefused: the fenced-off owner
			// sends, and learns of its loss only at its next renewal.
			w.handOut(sv.st, now, sv.sends, sv.probes)
			sv.st.wakeAt = sv.wake
			continue
		}
		w.saved(now, sv, errs[i])
		w.reschedule(sv.st)
	}
}

// deliverOne steps the machine r answers, if it is still there. It
// returns the stream r names, if the worker owned it, and whether a
// send's outcome was stepped (the stream may be closing: DeliverAll
// then sees whether it can be released, once its batch is saved).
func (w *Worker) deliverOne(ctx context.Context, now time.Time, r Reply) (named *stream, stepped bool) {
	named = w.streams[r.Stream]
	st := named
	if st != nil && !w.renewedBeforeReply(ctx, st, now) {
		st = nil // lost: the reply is dropped below
	}
	if st == nil || st.m == nil || st.gen != r.Gen {
		w.observe(Event{Kind: ReplyDropped, Stream: r.Stream, ID: r.ID, Attempt: r.Attempt, Outcome: r.Outcome,
			Detail: "the machine that asked for it is gone"})
		return named, false
	}
	if r.Probe != 0 {
		if w.draining || st.closing != "" {
			return named, false // nothing new goes out while draining
		}
		w.observe(Event{Kind: ProbeReplied, Stream: r.Stream, Token: st.lease.Token, Outcome: r.Outcome, Detail: strconv.FormatUint(r.Probe, 10)})
		w.step(ctx, st, now, machine.ProbeResult{At: now, N: r.Probe, Healthy: r.Outcome.Result == machine.OutcomeDelivered})
		return named, false
	}
	retryAfter := plantedRetryAfter(r.Outcome.RetryAfter)
	if r.Outcome.Result != machine.OutcomeFailed || retryAfter < 0 {
		retryAfter = 0 // a hint goes only with a retryable failure
	}
	w.observe(Event{Kind: Replied, Stream: r.Stream, Token: st.lease.Token, ID: r.ID, Attempt: r.Attempt, Outcome: r.Outcome})
	in := machine.Result{At: now, ID: r.ID, Attempt: r.Attempt, Outcome: r.Outcome.Result, RetryAfter: retryAfter}
	w.stepAnswer(ctx, st, now, in, &answer{id: r.ID, outcome: store.Outcome{
		Attempt: r.Attempt,
		Status:  r.Outcome.Status,
		Detail:  channel.Truncate(strings.ToValidUTF8(r.Outcome.Detail, "?")),
	}})
	return named, true
}

// settle makes the waiting Saves when st's batch is among them: before
// any other store call about st, and before its machine steps again, so
// that each call sees what the batch wrote (or the stream lost, if the
// store refused it).
func (w *Worker) settle(ctx context.Context, st *stream) {
	if st.saving {
		w.saveWaiting(ctx, w.now)
	}
}

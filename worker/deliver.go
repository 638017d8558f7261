package worker

import (
	"context"
	"slices"
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
	gen     uint64 // the machine that made the batch (stream.gen)
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
// and a Save the store refuses fails its own stream only.
//
// A stream whose batch waits may be stepped again by a reply that says
// delivered or refused, when no batch of the stream that waits persists
// a failure: such a reply cannot move the circuit, so the sends of the
// batch that waits stay right to make, and its own batch waits behind
// it, to be saved in the same call, after it (joins). So a window of
// several attempts that come back together costs one commit, not one
// each. Any other reply (a failure, a timeout, a probe's) of that stream
// makes the waiting batches first: it could trip the circuit, and the
// sends that wait would then go out while it checks.
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
		if st != nil && st.saving && (r.Probe != 0 || !st.joins(r.Outcome.Result)) {
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

// joins reports whether a send's outcome o may step st's machine while a
// batch of st waits for its Save (DeliverAll): delivered or refused,
// behind batches that persist no failure. The machine counts neither
// outcome as a failure, so neither moves the circuit (executeAnswer
// checks it). And as no failure lands between the batches, the log reads
// the same as if each batch were saved before the next reply stepped:
// the failures the log shows before a reply's success are the ones its
// own step made (the checker counts the breaker's streak so).
func (st *stream) joins(o machine.Outcome) bool {
	return (o == machine.OutcomeDelivered || o == machine.OutcomeRefused) && !st.savingFailure
}

// landsFailure reports whether persist has a record the channel failed:
// to retry, parked, or dead of anything but a refusal.
func landsFailure(persist []machine.Record) bool {
	return slices.ContainsFunc(persist, func(r machine.Record) bool {
		return r.State == machine.Retry || r.State == machine.Parked || (r.State == machine.Dead && r.Reason != machine.Rejected)
	})
}

// saveWaiting makes the Saves that wait, in one call, and carries out
// what follows each, in order. Once a stream's batch fails, its later
// batches are not acted on: the machine that made them is gone.
func (w *Worker) saveWaiting(ctx context.Context, now time.Time) {
	if len(w.saves) == 0 {
		return
	}
	waiting := w.saves
	w.saves = nil
	batch := make([]store.LeaseSave, len(waiting))
	for i, sv := range waiting {
		sv.st.saving, sv.st.savingFailure = false, false
		batch[i] = store.LeaseSave{Lease: sv.lease, Updates: sv.ups}
	}
	errs := store.SaveEach(ctx, w.cfg.Store, batch)
	for i, sv := range waiting {
		if sv.st.gone || sv.st.m == nil || sv.st.gen != sv.gen {
			w.madeUnacted(sv, errs[i])
			continue
		}
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

// madeUnacted reports what the Save of sv wrote, when its stream's
// machine is gone (an earlier batch of the stream failed, or a later
// step faulted): nothing of sv is acted on, but what the store made is
// made, and the log says so.
func (w *Worker) madeUnacted(sv pendingSave, err error) {
	if err == nil && len(sv.persist) > 0 {
		w.observe(Event{Kind: Persisted, Stream: sv.lease.Stream, Token: sv.lease.Token, Records: sv.persist})
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

package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// stream is one owned stream: its lease, its machine and its timers, all
// on the worker's clock.
type stream struct {
	cfg   machine.Config
	lease store.Lease
	// renewAt is when to renew; expiresAt is when the lease ends as the
	// worker sees it: the call that granted or renewed it started before
	// the store's clock read its start, so start+ttl-margin is no later
	// than the store's end unless the clocks drift apart by more than
	// the margin.
	renewAt, expiresAt time.Time

	m         *machine.Machine // nil: to be rebuilt from the store
	gen       uint64           // names m; replies name it
	rebuildAt time.Time        // when m is nil: when to try again
	lastSeq   uint64           // the highest Seq m knows
	adoptAt   time.Time        // next look for newly enqueued records
	handed    []machine.Record // records local producers enqueued (Enqueued), to adopt without a read
	wakeAt    time.Time        // m's WakeAt; zero: none
	idleSince time.Time        // zero unless m has nothing left to do
	releaseAt time.Time        // idleSince+IdleRelease, when idleSince is set
	unsent    map[string]bool  // draining: events whose started attempt was not sent
	gone      bool             // forgotten (lost or released): no longer in order
	// closing, when not empty, says why the worker is giving the stream
	// back of its own accord: Policy refused the stream at a renewal (an
	// operator paused it, its endpoint was disabled). The stream drains
	// as a draining worker does, and is released once no attempt it sent
	// awaits its reply, or at closeBy, an attempt's timeout after the
	// refusal, whichever comes first.
	closing string
	closeBy time.Time
	// since is when the lease was granted; yielding, that the stream is
	// being given back to make room (schedule.go).
	since    time.Time
	yielding bool
	// saving: a batch of the stream waits in Worker.saves for its Save
	// (DeliverAll); only a reply that joins steps the stream again
	// before it is made. savingFailure: one of those batches persists a
	// failure, so no reply joins.
	saving, savingFailure bool
	// handedOut: the current call handed out sends or probes of the
	// stream; DeliverAll holds its further replies (Worker.held).
	handedOut bool

	// due is earliest(draining) as of the last call that acted on the
	// stream: Advance and Next compare one instant per stream, not five,
	// and they run after every simulated event. The worker sets it
	// (Worker.reschedule) at the end of each call, for every stream the
	// call may have changed; nothing else writes it.
	due time.Time
}

// earliest is the first instant at which the stream has timed work: its
// renewal and lease end and, unless the worker is draining, its rebuild
// (without a machine) or its adoption poll, its machine's WakeAt and its
// idle release. Nothing of the stream is due before it. Each timer
// replaces t only when strictly before it: the first of equal instants is
// the one kept.
func (st *stream) earliest(draining bool) time.Time {
	t := st.renewAt
	if st.expiresAt.Before(t) {
		t = st.expiresAt
	}
	switch {
	case st.closing != "":
		if st.closeBy.Before(t) {
			t = st.closeBy
		}
	case draining:
	case st.m == nil:
		if st.rebuildAt.Before(t) {
			t = st.rebuildAt
		}
	case len(st.handed) > 0:
		t = time.Time{} // handed records: adopt them now
	default:
		if st.adoptAt.Before(t) {
			t = st.adoptAt
		}
		if !st.wakeAt.IsZero() && st.wakeAt.Before(t) {
			t = st.wakeAt
		}
		if !st.idleSince.IsZero() && st.releaseAt.Before(t) {
			t = st.releaseAt
		}
	}
	return t
}

// leased records a grant or renewal whose call started at start.
func (st *stream) leased(start time.Time, c *Config) {
	st.renewAt = start.Add(c.RenewEvery)
	st.expiresAt = start.Add(c.LeaseTTL - c.ClockMargin)
}

func (w *Worker) advanceStream(ctx context.Context, st *stream, now time.Time) {
	if !now.Before(st.expiresAt) && !w.lastRenewal(ctx, st, now) {
		return
	}
	if !now.Before(st.renewAt) && !w.renewAndRecheck(ctx, st, now) {
		return
	}
	if st.closing != "" {
		w.closeIfDone(ctx, st, now)
		return
	}
	if w.draining {
		return // renewals only: the attempts out finish under the lease
	}
	if st.m == nil && (now.Before(st.rebuildAt) || !w.rebuild(ctx, st, now)) {
		return
	}
	if len(st.handed) > 0 && !w.adoptHanded(ctx, st, now) {
		return
	}
	if !now.Before(st.adoptAt) && !w.adopt(ctx, st, now) {
		return
	}
	if !st.wakeAt.IsZero() && !now.Before(st.wakeAt) {
		st.wakeAt = time.Time{}
		if !w.step(ctx, st, now, machine.Tick{At: now}) {
			return
		}
	}
	if st.saving {
		w.tails = append(w.tails, st) // idle and far release judge the saved machine
		return
	}
	w.idle(ctx, st, now)
	w.releaseFar(ctx, st, now)
}

// renew extends the lease. It reports false if the stream was lost.
func (w *Worker) renew(ctx context.Context, st *stream, now time.Time) bool {
	w.settle(ctx, st)
	l, err := w.cfg.Store.Renew(ctx, st.lease, w.cfg.LeaseTTL)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		w.lose(st, "renewal refused: "+err.Error(), err)
		return false
	case err != nil && renewGivesUp(err):
		w.lose(st, "renewal refused once: giving the stream up", nil)
		return false
	case err != nil:
		// The lease may still be valid: go on, and try again soon. Sends
		// stop at expiresAt whatever happens.
		w.observe(Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Renew", Err: err})
		st.renewAt = now.Add(w.cfg.RetryAfterFailure)
		return true
	}
	st.lease = l
	st.leased(now, &w.cfg)
	w.observe(Event{Kind: LeaseRenewed, Stream: l.Stream, Token: l.Token})
	return true
}

// lastRenewal is tried once when the worker's clock says the lease has
// run out, before the worker gives it up. Renewals failed for a whole
// lease, but one whose reply was lost may have extended it in the store:
// asking once more keeps a stream the worker still owns, where giving it
// up would leave it unserved until the store's lease ran out. Nothing is
// sent meanwhile (every send's deadline was the old end). It reports
// whether the lease is held; a renewal that succeeds asks Policy again,
// as every renewal does.
func (w *Worker) lastRenewal(ctx context.Context, st *stream, now time.Time) bool {
	w.settle(ctx, st)
	l, err := w.cfg.Store.Renew(ctx, st.lease, w.cfg.LeaseTTL)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		w.lose(st, "last renewal refused: "+err.Error(), err)
		return false
	case err != nil:
		// Another worker may own the stream now. Stop acting on it; the
		// lease runs out in the store.
		w.observe(Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Renew", Err: err})
		w.lose(st, "the lease ran out by the worker's clock before a renewal succeeded", nil)
		return false
	}
	st.lease = l
	st.leased(now, &w.cfg)
	w.observe(Event{Kind: LeaseRenewed, Stream: l.Stream, Token: l.Token, Detail: "last renewal"})
	w.recheck(st, now)
	return true
}

// renewAndRecheck renews the lease and asks Policy again whether the
// stream may still be delivered: a pause or a disabled endpoint then
// stops an owner within one RenewEvery, not only the next takeover; a
// changed policy (policyChanged) closes the stream the same way, so the
// next claim builds its machine with the new one. It is
// asked whatever the renewal's outcome, so store trouble does not delay
// it. It reports false if the stream was lost.
func (w *Worker) renewAndRecheck(ctx context.Context, st *stream, now time.Time) bool {
	if !w.renew(ctx, st, now) {
		return false
	}
	w.recheck(st, now)
	return true
}

// recheck asks Policy whether the stream may still be delivered, and
// starts closing it if not.
func (w *Worker) recheck(st *stream, now time.Time) {
	if st.closing != "" {
		return
	}
	cfg, err := w.policy(st.lease.Stream)
	if err == nil && policyChanged(st.cfg, cfg) {
		err = ErrPolicyChanged
	}
	if err != nil {
		w.observe(Event{Kind: Faulted, Stream: st.lease.Stream, Token: st.lease.Token,
			Err: fmt.Errorf("policy for stream %q: %w", st.lease.Stream, err), Detail: "giving the stream back"})
		st.closing = err.Error()
		st.closeBy = now.Add(st.cfg.AttemptTimeout)
		st.idleSince = time.Time{}
	}
}

// closeIfDone releases a closing stream once no attempt it sent awaits
// its reply, or once closeBy has come.
func (w *Worker) closeIfDone(ctx context.Context, st *stream, now time.Time) {
	if now.Before(st.closeBy) && st.awaiting() {
		return
	}
	why := "policy refused the stream: " + st.closing
	if st.yielding {
		why = st.closing
	}
	w.release(ctx, st, why)
}

// awaiting reports whether an attempt the stream sent awaits its reply:
// one the machine holds in flight that was handed out (not withheld as
// unsent while draining).
func (st *stream) awaiting() bool {
	if st.m == nil {
		return false
	}
	for _, s := range st.m.InFlight() {
		if !st.unsent[s.ID] {
			return true
		}
	}
	return false
}

// idle gives the stream back once nothing has been left to do for
// IdleRelease.
func (w *Worker) idle(ctx context.Context, st *stream, now time.Time) {
	if st.m == nil || st.m.Queued() > 0 {
		if !st.idleSince.IsZero() {
			st.idleSince = time.Time{}
		}
		return
	}
	if st.idleSince.IsZero() {
		st.idleSince, st.releaseAt = now, now.Add(w.cfg.IdleRelease)
	}
	if !now.Before(st.releaseAt) {
		w.release(ctx, st, "nothing left to do")
	}
}

// pending reads the stream's non-terminal records with Seq above after,
// page by page (PageSize records per store call).
func (w *Worker) pending(ctx context.Context, st *stream, after uint64) ([]machine.Record, error) {
	w.settle(ctx, st)
	var all []machine.Record
	for {
		page, err := w.cfg.Store.Pending(ctx, st.lease, after, w.cfg.PageSize)
		if err != nil {
			return nil, err
		}
		if all == nil && len(page) < w.cfg.PageSize {
			return page, nil // one page: the store's copy is ours already
		}
		all = append(all, page...)
		if len(page) < w.cfg.PageSize {
			return all, nil
		}
		after = page[len(page)-1].Seq
	}
}

// readFailed handles an error from a read through the lease. It reports
// whether the stream is still owned.
func (w *Worker) readFailed(st *stream, now time.Time, err error) bool {
	if errors.Is(err, store.ErrStaleLease) {
		w.lose(st, "read refused: "+err.Error(), err)
		return false
	}
	w.observe(Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Pending", Err: err})
	st.rebuildAt = now.Add(w.cfg.RetryAfterFailure)
	st.adoptAt = st.rebuildAt
	return true
}

// rebuild recovers a machine from the store's records and carries out its
// first batch. It reports whether the stream has a machine afterwards.
func (w *Worker) rebuild(ctx context.Context, st *stream, now time.Time) bool {
	w.settle(ctx, st)
	st.m, st.wakeAt, st.idleSince = nil, time.Time{}, time.Time{}
	recs, err := w.pending(ctx, st, 0)
	if err != nil {
		w.readFailed(st, now, err)
		return false
	}
	m, b, err := machine.Recover(st.cfg, now, plantedRecords(recs, now))
	if err != nil {
		// The store holds records no machine could have written: a broken
		// store. Leave the stream alone rather than act on them.
		w.observe(Event{Kind: Faulted, Stream: st.lease.Stream, Err: err})
		w.release(ctx, st, "its records cannot be recovered")
		return false
	}
	w.gen++
	st.m, st.gen = m, w.gen
	st.lastSeq = 0
	for _, r := range recs {
		st.lastSeq = max(st.lastSeq, r.Seq)
	}
	st.adoptAt = w.nextPoll(now)
	w.observe(Event{Kind: Rebuilt, Stream: st.lease.Stream, Token: st.lease.Token, Records: recs, Circuit: m.Circuit()})
	return w.execute(ctx, st, now, b)
}

// adoptHanded hands the machine, without a read, the records local
// producers handed over (Enqueued) that follow the last it knows with no
// gap. A gap is a record another producer enqueued: the adoption then
// reads the store at once, which finds them all. It reports whether the
// machine is still there.
func (w *Worker) adoptHanded(ctx context.Context, st *stream, now time.Time) bool {
	handed := st.handed
	st.handed = nil
	slices.SortFunc(handed, func(a, b machine.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, r := range handed {
		switch {
		case r.Seq <= st.lastSeq:
			continue // known already: a rebuild or a poll read it
		case r.Seq != st.lastSeq+1:
			st.adoptAt = time.Time{}
			return true
		}
		st.lastSeq = r.Seq
		if !w.adoptOne(ctx, st, now, r) {
			return false
		}
	}
	return true
}

// adopt hands the machine the records enqueued since it last looked.
func (w *Worker) adopt(ctx context.Context, st *stream, now time.Time) bool {
	st.adoptAt = w.nextPoll(now)
	recs, err := w.pending(ctx, st, st.lastSeq)
	if err != nil {
		return w.readFailed(st, now, err) && st.m != nil
	}
	for _, r := range recs {
		if r.State != machine.Pending || r.Attempts != 0 {
			// Someone else acted on it since: another owner in between.
			// What this machine knows is out of date; re-read it all.
			w.observe(Event{Kind: Faulted, Stream: st.lease.Stream,
				Err: fmt.Errorf("record %q (seq %d) is %s with %d attempts, not new: rebuilding", r.ID, r.Seq, r.State, r.Attempts)})
			return w.rebuild(ctx, st, now)
		}
		st.lastSeq = max(st.lastSeq, r.Seq)
		if !w.adoptOne(ctx, st, now, r) {
			return false
		}
	}
	return true
}

// adoptOne hands the machine one new record. The batch of the stream's
// last step, if it waits, is saved first: what the machine knew before
// the adoption (a probe it sent, say) is durable before the adoption is
// reported. It reports whether the machine is still there.
func (w *Worker) adoptOne(ctx context.Context, st *stream, now time.Time, r machine.Record) bool {
	w.settle(ctx, st)
	if st.gone || st.m == nil {
		return false
	}
	w.observe(Event{Kind: Adopted, Stream: st.lease.Stream, Token: st.lease.Token, ID: r.ID, Seq: r.Seq})
	return w.step(ctx, st, now, machine.Adopt{At: now, Record: r})
}

// answer is the channel's outcome of one attempt, kept with the record the
// batch that answers it persists.
type answer struct {
	id      string
	outcome store.Outcome
}

// step feeds one input to the stream's machine and carries out the batch.
// It reports whether the machine is still there.
func (w *Worker) step(ctx context.Context, st *stream, now time.Time, in machine.Input) bool {
	return w.stepAnswer(ctx, st, now, in, nil)
}

// stepAnswer is step for a Result: ans is kept with the record it answers.
//
// in is at now, the worker's latest clock reading (every caller builds it
// at now), and the machine has seen no later one: clock never lets the
// reading go back, and the machine was recovered and stepped only at
// readings it gave. So the machine never refuses in as earlier than its
// clock (TestClockSteppedBackIsHeldAtTheLatestReading).
func (w *Worker) stepAnswer(ctx context.Context, st *stream, now time.Time, in machine.Input, ans *answer) bool {
	if res, ok := in.(machine.Result); !ok || !st.joins(res.Outcome) {
		w.settle(ctx, st)
	}
	if st.gone || st.m == nil {
		return false // the batch that waited was refused
	}
	b, err := st.m.Step(in)
	if err != nil {
		w.observe(Event{Kind: Faulted, Stream: st.lease.Stream, Err: err})
		w.dropMachine(st, now)
		return false
	}
	return w.executeAnswer(ctx, st, now, b, ans)
}

// dropMachine forgets what the machine knew; the next Advance rebuilds it
// from the store.
func (w *Worker) dropMachine(st *stream, now time.Time) {
	st.m, st.wakeAt, st.idleSince = nil, time.Time{}, time.Time{}
	st.rebuildAt = now.Add(w.cfg.RetryAfterFailure)
}

// execute carries out a batch in the order machine.Batch requires:
// persist through the lease; then (there are no producer acks: the store
// acknowledged them) hand out the sends and probes; then wait for WakeAt,
// if it is not zero. It reports whether the machine is still there.
func (w *Worker) execute(ctx context.Context, st *stream, now time.Time, b machine.Batch) bool {
	return w.executeAnswer(ctx, st, now, b, nil)
}

// executeAnswer is execute for a batch that answers an attempt: ans is
// saved with the record, so an operator sees why it retries or died.
func (w *Worker) executeAnswer(ctx context.Context, st *stream, now time.Time, b machine.Batch, ans *answer) bool {
	if st.saving && len(b.Circuit) > 0 {
		// Only a delivered or refused reply steps a machine whose batch
		// waits (joins), and the machine moves the circuit on neither.
		panic(fmt.Sprintf("worker: stream %q: the circuit moved while a batch waits for its Save", st.lease.Stream))
	}
	for _, c := range b.Circuit {
		w.observe(Event{Kind: CircuitChanged, Stream: st.lease.Stream, Token: st.lease.Token, Circuit: c.To})
	}
	persist, sends, probes := plantedPersist(b.Persist), b.Sends, b.Probes
	if w.draining || st.closing != "" {
		for _, s := range sends {
			if st.unsent == nil {
				st.unsent = make(map[string]bool)
			}
			st.unsent[s.ID] = true
		}
		persist = withoutUnsent(persist, st.unsent)
		sends, probes = nil, nil
	}
	if sendsBeforeSave() {
		w.handOut(st, now, sends, probes)
		sends, probes = nil, nil
	}
	sv := pendingSave{st: st, gen: st.gen, lease: st.lease, persist: persist, sends: sends, probes: probes, wake: b.WakeAt}
	switch {
	case st.saving:
		w.waitBehind(sv, ans)
		return true // the machine stays unless a Save before it refuses it
	case len(persist) == 0:
		return w.saved(now, sv, nil)
	}
	sv.ups = updates(persist, ans)
	if w.batching {
		st.saving = true
		st.savingFailure = landsFailure(persist)
		w.saves = append(w.saves, sv)
		return true // the machine stays unless the batch's Save refuses it
	}
	return w.saved(now, sv, w.cfg.Store.Save(ctx, sv.lease, sv.ups))
}

// waitBehind puts sv, the batch of a reply that joins (DeliverAll),
// behind the batch of its stream that waits: to be saved and acted on
// after it, in the same call. An empty batch needs no Save: what it
// hands out, and its WakeAt, which is the machine's latest, go with the
// batch before it.
func (w *Worker) waitBehind(sv pendingSave, ans *answer) {
	if len(sv.persist) > 0 {
		sv.ups = updates(sv.persist, ans)
		sv.st.savingFailure = sv.st.savingFailure || landsFailure(sv.persist)
		w.saves = append(w.saves, sv)
		return
	}
	for i := len(w.saves) - 1; i >= 0; i-- {
		if last := &w.saves[i]; last.st == sv.st {
			last.sends = append(last.sends, sv.sends...)
			last.probes = append(last.probes, sv.probes...)
			last.wake = sv.wake
			return
		}
	}
	panic(fmt.Sprintf("worker: stream %q is saving, but none of its batches waits", sv.st.lease.Stream))
}

// saved carries out what follows a batch's Save, which returned err (nil
// for a batch with nothing to persist): the sends and probes go out and
// the machine waits for its WakeAt, or, if the Save failed, the batch is
// not acted on. It reports whether the machine is still there.
func (w *Worker) saved(now time.Time, sv pendingSave, err error) bool {
	st := sv.st
	switch {
	case err == nil && len(sv.persist) > 0:
		w.observe(Event{Kind: Persisted, Stream: sv.lease.Stream, Token: sv.lease.Token, Records: sv.persist})
	case err == nil:
	case plantedActsOn(err):
		// The planted UnknownSaveActedOn: the batch may not be written.
	case plantedKeepsMachine(err):
		// The planted RefusedSaveKeepsMachine: no sends, but the
		// machine stays, past what the store holds, and the failure
		// goes unreported.
		st.wakeAt = sv.wake
		return true
	default:
		w.saveFailed(st, now, err)
		return false
	}
	if st.gone {
		return false // lost meanwhile: its sends must not go out
	}
	w.handOut(st, now, sv.sends, sv.probes)
	st.wakeAt = plantedWake(sv.wake)
	return true
}

// handOut gives the driver a batch's sends and probes, whose attempt and
// probe numbers are durable by now.
func (w *Worker) handOut(st *stream, now time.Time, sends []machine.Send, probes []machine.Probe) {
	if len(sends)+len(probes) > 0 {
		st.handedOut = true
	}
	for _, s := range sends {
		w.observe(Event{Kind: Sent, Stream: st.lease.Stream, Token: st.lease.Token, ID: s.ID, Seq: s.Seq, Attempt: s.Attempt})
		w.out.Sends = append(w.out.Sends, Send{
			Attempt:  channel.Attempt{Stream: st.lease.Stream, ID: s.ID, Seq: s.Seq, Attempt: s.Attempt, Payload: s.Payload},
			Token:    st.lease.Token,
			Gen:      st.gen,
			Deadline: st.expiresAt,
			Timeout:  st.cfg.AttemptTimeout,
			At:       now,
			RatePer:  st.cfg.RatePer,
		})
	}
	for _, p := range probes {
		w.observe(Event{Kind: Probed, Stream: st.lease.Stream, Token: st.lease.Token, Detail: strconv.FormatUint(p.N, 10)})
		w.out.Probes = append(w.out.Probes, Probe{
			Stream: st.lease.Stream, Token: st.lease.Token, Gen: st.gen, N: p.N,
			Deadline: st.expiresAt, Timeout: st.cfg.ProbeTimeout,
		})
	}
}

// updates turns a batch's records into the store's updates, with the
// answered attempt's outcome on its record when it answers the record's
// latest attempt. A late reply to an earlier attempt (one the machine
// timed out and tried again) may still settle the event, but its outcome
// is not kept: the store keeps the latest attempt's outcome, and an older
// one must not replace it (store.CheckUpdate refuses that write).
func updates(persist []machine.Record, ans *answer) []store.Update {
	ups := store.UpdatesOf(persist)
	for i := range ups {
		if ans != nil && ups[i].ID == ans.id && ups[i].Attempts == ans.outcome.Attempt {
			ups[i].Outcome = &ans.outcome
		}
	}
	return ups
}

// saveFailed: nothing of the batch may be acted on. A stale lease ends
// ownership. After store.ErrUnknown the batch may or may not be written;
// after any other error it is not, but the machine has moved past what
// the store holds. Either way the machine is dropped and rebuilt from
// what the store holds: the worker re-reads before it acts again.
func (w *Worker) saveFailed(st *stream, now time.Time, err error) {
	if errors.Is(err, store.ErrStaleLease) {
		w.lose(st, "write fenced off: "+err.Error(), err)
		return
	}
	detail := "nothing was written; rebuilding from the store"
	if errors.Is(err, store.ErrUnknown) {
		detail = "outcome unknown; re-reading the store before acting"
	}
	w.observe(Event{Kind: StoreFailed, Stream: st.lease.Stream, Token: st.lease.Token, Op: "Save", Err: err, Detail: detail})
	w.dropMachine(st, now)
}

// withoutUnsent returns persist less the records of events whose attempt
// was started while draining and never sent: the store keeps their state
// from before that attempt began, a state the machine had, so the stop
// costs them no attempt. The machine itself believes the attempt is out;
// it is used for nothing but the replies still due, and dropped at Stop.
func withoutUnsent(persist []machine.Record, unsent map[string]bool) []machine.Record {
	if len(unsent) == 0 {
		return persist
	}
	out := make([]machine.Record, 0, len(persist))
	for _, r := range persist {
		if !unsent[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

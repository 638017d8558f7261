package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	renewAt, expiresAt stamp

	m         *machine.Machine // nil: to be rebuilt from the store
	gen       uint64           // names m; replies name it
	rebuildAt stamp            // when m is nil: when to try again
	lastSeq   uint64           // the highest Seq m knows
	adoptAt   stamp            // next look for newly enqueued records
	wakeAt    stamp            // m's WakeAt; zero: none
	idleSince time.Time        // zero unless m has nothing left to do
	releaseAt stamp            // idleSince+IdleRelease, when idleSince is set
	unsent    map[string]bool  // draining: events whose started attempt was not sent
	gone      bool             // forgotten (lost or released): no longer in order

	// due caches earliest(draining) for dueDraining, the worker's draining
	// when it was computed; dueOK false means it is to be computed again.
	// Every write to a timer above or to m clears dueOK (changed), so Next
	// and an Advance with nothing due read one instant per stream, not
	// five, and mostly compare it as an integer (stamp). due points at
	// the timer itself: while dueOK none has been written since, so it
	// need not be copied.
	due         *stamp
	dueOK       bool
	dueDraining bool
	// still says quiet found nothing to do, or did it, since the last
	// change: what it looks at (m's queue, idleSince, the worker's
	// draining, which is never undone) changes only with a call of
	// changed, so an Advance need not look again.
	still bool
}

// stamp is an instant with, when one exists, an integer that orders it
// exactly as time.Time.Before does. The worker's timers are stamps: Before
// costs a call and a branch on monotonic readings, and every call of the
// worker compares its clock reading with every stream's timers. A stamp
// made by add from one with an integer has one too, at no more cost than
// the addition; only a reading from outside (the driver's clock, the
// machine's WakeAt) is looked at by stampOf.
type stamp struct {
	t  time.Time
	ns int64 // nanoseconds since the Unix epoch; math.MinInt64 for the zero instant
	// ok says ns orders t: t has no monotonic reading (Before compares
	// two readings, not wall times, when both carry one) and is the zero
	// instant or within ns's range.
	ok bool
}

// maxStampSec bounds the Unix seconds of an instant with an ns: ns is
// sec*1e9+nsec, which must not overflow.
const maxStampSec = math.MaxInt64/int64(time.Second) - 1

// stampOf returns t's stamp. It inlines, so that the stamp is set where
// the caller keeps it (see set).
func stampOf(t time.Time) stamp {
	var s stamp
	s.set(t)
	return s
}

// set sets s to t's stamp.
func (s *stamp) set(t time.Time) {
	s.t, s.ns, s.ok = t, 0, false
	if t.IsZero() {
		s.ns, s.ok = math.MinInt64, true
		return
	}
	if t != t.Round(0) {
		return // Round(0) strips a monotonic reading
	}
	if sec := t.Unix(); sec >= -maxStampSec && sec <= maxStampSec {
		s.ns, s.ok = sec*1e9+int64(t.Nanosecond()), true
	}
}

// zeroStamp is the zero instant's stamp: before every other.
var zeroStamp = stamp{ns: math.MinInt64, ok: true}

// before is a.t.Before(b.t), by the integers when both have one.
func (a *stamp) before(b *stamp) bool {
	if a.ok && b.ok {
		return a.ns < b.ns
	}
	return a.t.Before(b.t)
}

// add is the stamp of a.t.Add(d). It inlines, so that its result is
// set where the caller keeps it, not copied there (see setAdd).
func (a *stamp) add(d time.Duration) stamp {
	var s stamp
	s.setAdd(a, d)
	return s
}

// setAdd sets s to the stamp of a.t.Add(d); s may be a. Its integer is
// a's plus d when a has one, is not the zero instant's, and the sum stays
// in range: then a.t.Add(d) is exactly that many nanoseconds after the
// Unix epoch.
func (s *stamp) setAdd(a *stamp, d time.Duration) {
	ns := a.ns + int64(d)
	ok := a.ok && a.ns != math.MinInt64 && (ns > a.ns) == (d > 0) &&
		ns >= -maxStampSec*1e9 && ns < (maxStampSec+1)*1e9
	if ok && a.t.Location() == time.UTC {
		// a.t has no monotonic reading (a.ok) and is in UTC, as a
		// simulated clock's readings are: a.t.Add(d) is the instant ns
		// after the Unix epoch in UTC, to the bit, which time.Unix builds
		// without Add's carries, overflow checks and call.
		s.t, s.ns, s.ok = time.Unix(0, ns).UTC(), ns, true
		return
	}
	s.t, s.ns, s.ok = a.t.Add(d), ns, ok
}

// changed says that a timer or m changed: due is to be computed again.
func (st *stream) changed() { st.dueOK, st.still = false, false }

// dueAt is earliest(draining), computed once per change.
func (st *stream) dueAt(draining bool) *stamp {
	if st.dueOK && st.dueDraining == draining {
		return st.due
	}
	return st.refresh(draining)
}

// refresh is kept out of line so that dueAt, which calls it once per
// change, inlines where it is called once per stream per pass.
//
//go:noinline
func (st *stream) refresh(draining bool) *stamp {
	st.due, st.dueOK, st.dueDraining = st.earliest(draining), true, draining
	return st.due
}

// earliest is the first instant at which the stream has timed work: its
// renewal and lease end and, unless the worker is draining, its rebuild
// (without a machine) or its adoption poll, its machine's WakeAt and its
// idle release. Nothing of the stream is due before it.
//
// Each timer replaces t only when strictly before it: the first of equal
// instants is the one kept. It returns the timer itself, which
// refresh keeps.
func (st *stream) earliest(draining bool) *stamp {
	t := &st.renewAt
	if st.expiresAt.before(t) {
		t = &st.expiresAt
	}
	switch {
	case draining:
	case st.m == nil:
		if st.rebuildAt.before(t) {
			t = &st.rebuildAt
		}
	default:
		if st.adoptAt.before(t) {
			t = &st.adoptAt
		}
		if !st.wakeAt.t.IsZero() && st.wakeAt.before(t) {
			t = &st.wakeAt
		}
		if !st.idleSince.IsZero() && st.releaseAt.before(t) {
			t = &st.releaseAt
		}
	}
	return t
}

// leased records a grant or renewal whose call started at start. It takes
// the config by pointer: copying it in cost more than the two sums.
func (st *stream) leased(start *stamp, c *Config) {
	st.renewAt.setAdd(start, c.RenewEvery)
	st.expiresAt.setAdd(start, c.LeaseTTL-c.ClockMargin)
	st.changed()
}

// quiet is advanceStream for a stream none of whose timers is due
// (now is before its dueAt): each of advanceStream's checks would pass it
// by, so all that may be left is idle's, which advanceStream comes to with
// a machine, not draining. idle changes nothing unless the idle clock is
// to start (nothing queued, none running) or stop (queued, running): its
// release is not due, releaseAt being one of the timers.
//
// Either way it leaves the stream still: idle ends with no clock to start
// or stop, and its changes clear still before quiet sets it.
func (w *Worker) quiet(ctx context.Context, st *stream, now *stamp) {
	if !w.draining && st.m != nil && (st.m.Queued() > 0) != st.idleSince.IsZero() {
		w.idle(ctx, st, now)
	}
	st.still = true
}

func (w *Worker) advanceStream(ctx context.Context, st *stream, now *stamp) {
	if !now.before(&st.expiresAt) {
		// Renewals failed for a whole lease: another worker may own the
		// stream now. Stop acting on it; the lease runs out in the store.
		w.lose(st, "the lease ran out by the worker's clock before a renewal succeeded", nil)
		return
	}
	if !now.before(&st.renewAt) && !w.renew(ctx, st, now) {
		return
	}
	if w.draining {
		return // renewals only: the attempts out finish under the lease
	}
	if st.m == nil && (now.before(&st.rebuildAt) || !w.rebuild(ctx, st, now)) {
		return
	}
	if !now.before(&st.adoptAt) && !w.adopt(ctx, st, now) {
		return
	}
	if !st.wakeAt.t.IsZero() && !now.before(&st.wakeAt) {
		st.wakeAt = zeroStamp
		st.changed()
		if !w.step(ctx, st, now, machine.Tick{At: now.t}) {
			return
		}
	}
	w.idle(ctx, st, now)
}

// renew extends the lease. It reports false if the stream was lost.
func (w *Worker) renew(ctx context.Context, st *stream, now *stamp) bool {
	l, err := w.cfg.Store.Renew(ctx, st.lease, w.cfg.LeaseTTL)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		w.lose(st, "renewal refused: "+err.Error(), err)
		return false
	case err != nil:
		// The lease may still be valid: go on, and try again soon. Sends
		// stop at expiresAt whatever happens.
		w.observe(&Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Renew", Err: err})
		st.renewAt = now.add(w.cfg.RetryAfterFailure)
		st.changed()
		return true
	}
	st.lease = l
	st.leased(now, &w.cfg)
	w.observe(&Event{Kind: LeaseRenewed, Stream: l.Stream, Token: l.Token})
	return true
}

// idle gives the stream back once nothing has been left to do for
// IdleRelease.
func (w *Worker) idle(ctx context.Context, st *stream, now *stamp) {
	if st.m == nil || st.m.Queued() > 0 {
		if !st.idleSince.IsZero() {
			st.idleSince = time.Time{}
			st.changed()
		}
		return
	}
	if st.idleSince.IsZero() {
		st.idleSince, st.releaseAt = now.t, now.add(w.cfg.IdleRelease)
		st.changed()
	}
	if !now.before(&st.releaseAt) {
		w.release(ctx, st, "nothing left to do")
	}
}

// pending reads the stream's non-terminal records with Seq above after,
// page by page (PageSize records per store call).
func (w *Worker) pending(ctx context.Context, st *stream, after uint64) ([]machine.Record, error) {
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
func (w *Worker) readFailed(st *stream, now *stamp, err error) bool {
	if errors.Is(err, store.ErrStaleLease) {
		w.lose(st, "read refused: "+err.Error(), err)
		return false
	}
	w.observe(&Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Pending", Err: err})
	st.rebuildAt = now.add(w.cfg.RetryAfterFailure)
	st.adoptAt = st.rebuildAt
	st.changed()
	return true
}

// rebuild recovers a machine from the store's records and carries out its
// first batch. It reports whether the stream has a machine afterwards.
func (w *Worker) rebuild(ctx context.Context, st *stream, now *stamp) bool {
	st.m, st.wakeAt, st.idleSince = nil, zeroStamp, time.Time{}
	st.changed()
	recs, err := w.pending(ctx, st, 0)
	if err != nil {
		w.readFailed(st, now, err)
		return false
	}
	m, b, err := machine.Recover(st.cfg, now.t, plantedRecords(recs, now.t))
	if err != nil {
		// The store holds records no machine could have written: a broken
		// store. Leave the stream alone rather than act on them.
		w.observe(&Event{Kind: Faulted, Stream: st.lease.Stream, Err: err})
		w.release(ctx, st, "its records cannot be recovered")
		return false
	}
	w.gen++
	st.m, st.gen = m, w.gen
	st.lastSeq = 0
	for _, r := range recs {
		st.lastSeq = max(st.lastSeq, r.Seq)
	}
	st.adoptAt = *w.nextPoll(now)
	st.changed()
	w.observe(&Event{Kind: Rebuilt, Stream: st.lease.Stream, Token: st.lease.Token, Records: recs, Circuit: m.Circuit()})
	return w.execute(ctx, st, now, b)
}

// adopt hands the machine the records enqueued since it last looked.
func (w *Worker) adopt(ctx context.Context, st *stream, now *stamp) bool {
	st.adoptAt = *w.nextPoll(now)
	st.changed()
	recs, err := w.pending(ctx, st, st.lastSeq)
	if err != nil {
		return w.readFailed(st, now, err) && st.m != nil
	}
	for _, r := range recs {
		if r.State != machine.Pending || r.Attempts != 0 {
			// Someone else acted on it since: another owner in between.
			// What this machine knows is out of date; re-read it all.
			w.observe(&Event{Kind: Faulted, Stream: st.lease.Stream,
				Err: fmt.Errorf("record %q (seq %d) is %s with %d attempts, not new: rebuilding", r.ID, r.Seq, r.State, r.Attempts)})
			return w.rebuild(ctx, st, now)
		}
		st.lastSeq = max(st.lastSeq, r.Seq)
		w.observe(&Event{Kind: Adopted, Stream: st.lease.Stream, Token: st.lease.Token, ID: r.ID, Seq: r.Seq})
		if !w.step(ctx, st, now, machine.Adopt{At: now.t, Record: r}) {
			return false
		}
	}
	return true
}

// answer is the channel's outcome of one attempt, kept with the record the
// batch that answers it persists.
type answer struct {
	id      string
	outcome store.Outcome
}

// step feeds one input to the stream's machine and carries out the batch.
// It reports whether the machine is still there.
func (w *Worker) step(ctx context.Context, st *stream, now *stamp, in machine.Input) bool {
	return w.stepAnswer(ctx, st, now, in, nil)
}

// stepAnswer is step for a Result: ans is kept with the record it answers.
//
// in is at now, the worker's latest clock reading (every caller builds it
// at now.t), and the machine has seen no later one: clock never lets the
// reading go back, and the machine was recovered and stepped only at
// readings it gave. So the machine never refuses in as earlier than its
// clock (TestClockSteppedBackIsHeldAtTheLatestReading).
func (w *Worker) stepAnswer(ctx context.Context, st *stream, now *stamp, in machine.Input, ans *answer) bool {
	b, err := st.m.Step(in)
	if err != nil {
		w.observe(&Event{Kind: Faulted, Stream: st.lease.Stream, Err: err})
		w.dropMachine(st, now)
		return false
	}
	return w.executeAnswer(ctx, st, now, b, ans)
}

// dropMachine forgets what the machine knew; the next Advance rebuilds it
// from the store.
func (w *Worker) dropMachine(st *stream, now *stamp) {
	st.m, st.wakeAt, st.idleSince = nil, zeroStamp, time.Time{}
	st.rebuildAt = now.add(w.cfg.RetryAfterFailure)
	st.changed()
}

// execute carries out a batch in the order machine.Batch requires:
// persist through the lease; then (there are no producer acks: the store
// acknowledged them) hand out the sends and probes; then wait for WakeAt,
// if it is not zero. It reports whether the machine is still there.
func (w *Worker) execute(ctx context.Context, st *stream, now *stamp, b machine.Batch) bool {
	return w.executeAnswer(ctx, st, now, b, nil)
}

// executeAnswer is execute for a batch that answers an attempt: ans is
// saved with the record, so an operator sees why it retries or died.
func (w *Worker) executeAnswer(ctx context.Context, st *stream, now *stamp, b machine.Batch, ans *answer) bool {
	for _, c := range b.Circuit {
		w.observe(&Event{Kind: CircuitChanged, Stream: st.lease.Stream, Token: st.lease.Token, Circuit: c.To})
	}
	persist, sends, probes := plantedPersist(b.Persist), b.Sends, b.Probes
	if w.draining {
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
		w.handOut(st, sends, probes)
		sends, probes = nil, nil
	}
	if len(persist) > 0 {
		if err := w.cfg.Store.Save(ctx, st.lease, w.updates(persist, ans)); err != nil {
			w.saveFailed(st, now, err)
			return false
		}
		w.observe(&Event{Kind: Persisted, Stream: st.lease.Stream, Token: st.lease.Token, Records: persist})
	}
	if len(sends) > 0 || len(probes) > 0 { // most batches hand out nothing
		w.handOut(st, sends, probes)
	}
	if wake := plantedWake(b.WakeAt); wake != st.wakeAt.t {
		st.wakeAt.set(wake) // else it has its stamp already
	}
	st.changed()
	if len(b.Persist) > 0 || len(b.Sends) > 0 || len(b.Probes) > 0 || len(b.Circuit) > 0 || len(b.Acks) > 0 {
		recycle(st.m, &b) // a tick that finds nothing to do holds no list
	}
	return true
}

// recycle hands a carried-out batch's lists back to its machine, which
// reuses them for later batches instead of allocating new ones. Nothing
// holds them any more: Save kept none of the records (it was handed
// updates copied from them), the Persisted event lent them to the
// Observer only until Observe returned (Event.Records), handOut copied
// the sends and probes into the driver's own Effects, the circuit
// changes were observed by value, and a worker's machine acknowledges
// nothing (the store did).
func recycle(m *machine.Machine, b *machine.Batch) {
	m.Recycle(*b)
}

// handOut gives the driver a batch's sends and probes, whose attempt and
// probe numbers are durable by now.
func (w *Worker) handOut(st *stream, sends []machine.Send, probes []machine.Probe) {
	room(&w.out.Sends, len(sends))
	room(&w.out.Probes, len(probes))
	for _, s := range sends {
		w.observe(&Event{Kind: Sent, Stream: st.lease.Stream, Token: st.lease.Token, ID: s.ID, Seq: s.Seq, Attempt: s.Attempt})
		w.out.Sends = append(w.out.Sends, Send{
			Attempt:  channel.Attempt{Stream: st.lease.Stream, ID: s.ID, Seq: s.Seq, Attempt: s.Attempt, Payload: s.Payload},
			Token:    st.lease.Token,
			Gen:      st.gen,
			Deadline: st.expiresAt.t,
			Timeout:  st.cfg.AttemptTimeout,
		})
	}
	for _, p := range probes {
		w.observe(&Event{Kind: Probed, Stream: st.lease.Stream, Token: st.lease.Token, Detail: strconv.FormatUint(p.N, 10)})
		w.out.Probes = append(w.out.Probes, Probe{
			Stream: st.lease.Stream, Token: st.lease.Token, Gen: st.gen, N: p.N,
			Deadline: st.expiresAt.t, Timeout: st.cfg.ProbeTimeout,
		})
	}
}

// updates turns a batch's records into the store's updates, with the
// answered attempt's outcome on its record when it answers the record's
// latest attempt. A late reply to an earlier attempt (one the machine
// timed out and tried again) may still settle the event, but its outcome
// is not kept: the store keeps the latest attempt's outcome, and an older
// one must not replace it (store.CheckUpdate refuses that write).
func (w *Worker) updates(persist []machine.Record, ans *answer) []store.Update {
	if cap(w.ups) < len(persist) {
		// One allocation for a batch larger than any before it (a
		// circuit that parks a backlog), not one per doubling.
		w.ups = make([]store.Update, 0, max(len(persist), 2*cap(w.ups)))
	}
	ups := w.ups[:len(persist)]
	for i := range persist {
		// store.UpdateOf(persist[i]), field by field: a record is 112
		// bytes, which the call copies (TestUpdatesAreUpdateOf).
		r := &persist[i]
		ups[i] = store.Update{ID: r.ID, Delivery: store.Delivery{State: r.State, Attempts: r.Attempts, NextAt: r.NextAt, Reason: r.Reason}}
		// The attempt first: a cheaper comparison than the ID's, and
		// most records of a batch that answers are at another.
		if ans != nil && ups[i].Attempts == ans.outcome.Attempt && ups[i].ID == ans.id {
			w.ans = ans.outcome
			ups[i].Outcome = &w.ans
		}
	}
	w.ups = ups
	return ups
}

// saveFailed: nothing of the batch may be acted on. A stale lease ends
// ownership. After store.ErrUnknown the batch may or may not be written;
// after any other error it is not, but the machine has moved past what
// the store holds. Either way the machine is dropped and rebuilt from
// what the store holds: the worker re-reads before it acts again.
func (w *Worker) saveFailed(st *stream, now *stamp, err error) {
	if errors.Is(err, store.ErrStaleLease) {
		w.lose(st, "write fenced off: "+err.Error(), err)
		return
	}
	detail := "nothing was written; rebuilding from the store"
	if errors.Is(err, store.ErrUnknown) {
		detail = "outcome unknown; re-reading the store before acting"
	}
	w.observe(&Event{Kind: StoreFailed, Stream: st.lease.Stream, Token: st.lease.Token, Op: "Save", Err: err, Detail: detail})
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

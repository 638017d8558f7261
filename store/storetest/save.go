package storetest

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// saveValidWrites: every move the machine makes is accepted and read back
// exactly as saved, with the event untouched: a new attempt, a result with
// its outcome, several records in one batch, an empty batch; delivered
// settles the record at the store's now.
func saveValidWrites(e *env) {
	e.enqueue("s", "e1", "p1")
	e.enqueue("s", "e2", "p2")
	l := e.acquire("s", "w")
	events := map[string]store.Event{"e1": e.get("e1").Event, "e2": e.get("e2").Event}
	now := e.clock.Now()
	fail := &store.Outcome{Attempt: 1, Status: 503, Detail: "service unavailable"}
	steps := []struct {
		name string
		ups  func(e1, e2 store.Record) []store.Update
		want func(e1, e2 *store.Record)
	}{
		{"attempt in flight", func(e1, _ store.Record) []store.Update {
			return []store.Update{up(e1, machine.Pending, 1, now.Add(time.Second), 0, nil)}
		}, func(e1, _ *store.Record) { e1.Attempts, e1.NextAt = 1, now.Add(time.Second) }},
		{"retry with its outcome", func(e1, _ store.Record) []store.Update {
			return []store.Update{up(e1, machine.Retry, 1, now.Add(5*time.Second), 0, fail)}
		}, func(e1, _ *store.Record) {
			e1.State, e1.NextAt, e1.Last, e1.LastAt = machine.Retry, now.Add(5*time.Second), *fail, now
		}},
		{"next attempt from retry keeps the outcome", func(e1, _ store.Record) []store.Update {
			return []store.Update{up(e1, machine.Retry, 2, now.Add(6*time.Second), 0, nil)}
		}, func(e1, _ *store.Record) { e1.Attempts, e1.NextAt = 2, now.Add(6*time.Second) }},
		{"both parked", func(e1, e2 store.Record) []store.Update {
			return []store.Update{up(e1, machine.Parked, 2, e1.NextAt, 0, nil), up(e2, machine.Parked, 0, e2.NextAt, 0, nil)}
		}, func(e1, e2 *store.Record) { e1.State, e2.State = machine.Parked, machine.Parked }},
		{"released to pending", func(e1, e2 store.Record) []store.Update {
			return []store.Update{up(e1, machine.Pending, 2, e1.NextAt, 0, nil), up(e2, machine.Pending, 0, e2.NextAt, 0, nil)}
		}, func(e1, e2 *store.Record) { e1.State, e2.State = machine.Pending, machine.Pending }},
		{"delivered and dead expired unattempted", func(e1, e2 store.Record) []store.Update {
			return []store.Update{
				up(e1, machine.Delivered, 2, e1.NextAt, 0, &store.Outcome{Attempt: 2, Status: 204}),
				up(e2, machine.Dead, 0, e2.NextAt, machine.Expired, nil),
			}
		}, func(e1, e2 *store.Record) {
			e1.State, e1.Last, e1.LastAt, e1.SettledAt = machine.Delivered, store.Outcome{Attempt: 2, Status: 204}, now, now
			e2.State, e2.Reason = machine.Dead, machine.Expired
		}},
		{"empty batch", func(store.Record, store.Record) []store.Update { return nil }, func(_, _ *store.Record) {}},
	}
	for _, s := range steps {
		before := e.snapshot("e1", "e2")
		e.saveUpdates(l, s.ups(before["e1"], before["e2"])...)
		w1, w2 := before["e1"], before["e2"]
		s.want(&w1, &w2)
		want := map[string]store.Record{"e1": w1, "e2": w2}
		if diff := cmp.Diff(want, e.snapshot("e1", "e2"), diffOpts...); diff != "" {
			e.t.Errorf("after Save %s (-want +got):\n%s", s.name, diff)
		}
		for id, ev := range events {
			if diff := cmp.Diff(ev, e.get(id).Event); diff != "" {
				e.t.Errorf("Save %s changed the event %s (-want +got):\n%s", s.name, id, diff)
			}
		}
		e.clock.Advance(time.Second)
		now = e.clock.Now()
	}
}

// saveTerminalAgain: saving a terminal record exactly as it is (with its
// last outcome or none) is accepted and changes nothing at all, not even
// when it settled, however much later it comes.
func saveTerminalAgain(e *env) {
	e.invalidScene()
	e.clock.Advance(time.Hour)
	l := e.acquire("s", "w2")
	before := e.snapshot("e3", "e4")
	e3, e4 := before["e3"], before["e4"]
	last := e3.Last
	e.saveUpdates(l, up(e3, e3.State, e3.Attempts, e3.NextAt, e3.Reason, &last), up(e4, e4.State, e4.Attempts, e4.NextAt, e4.Reason, nil))
	e.unchanged("re-saving terminal records unchanged", before)
}

// up is an update of r to the given delivery state.
func up(r store.Record, st machine.State, attempts int, next time.Time, why machine.DeadReason, o *store.Outcome) store.Update {
	return store.Update{ID: r.ID, Delivery: store.Delivery{State: st, Attempts: attempts, NextAt: next, Reason: why}, Outcome: o}
}

// invalidScene is the store every invalid write is tried against: on
// stream s, e1 pending (0 attempts), e2 in retry (2, the last failed with
// 503), e3 delivered (1, with 204), e4 dead rejected (1, with 400); on
// stream t, f1 pending. It returns the lease on s.
func (e *env) invalidScene() store.Lease {
	e.t.Helper()
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		e.enqueue("s", id, "p-"+id)
	}
	e.enqueue("t", "f1", "p-f1")
	l := e.acquire("s", "w")
	r := e.snapshot("e2", "e3", "e4")
	next := e.clock.Now().Add(time.Second)
	e.saveUpdates(l, up(r["e2"], machine.Pending, 1, next, 0, nil), up(r["e3"], machine.Pending, 1, next, 0, nil), up(r["e4"], machine.Pending, 1, next, 0, nil))
	e.saveUpdates(l,
		up(r["e2"], machine.Retry, 1, next, 0, &store.Outcome{Attempt: 1, Status: 503, Detail: "first"}),
		up(r["e3"], machine.Delivered, 1, next, 0, &store.Outcome{Attempt: 1, Status: 204}),
		up(r["e4"], machine.Dead, 1, next, machine.Rejected, &store.Outcome{Attempt: 1, Status: 400, Detail: "bad request"}))
	e.saveUpdates(l, up(r["e2"], machine.Retry, 2, next, 0, nil))
	e.saveUpdates(l, up(r["e2"], machine.Retry, 2, next.Add(time.Second), 0, &store.Outcome{Attempt: 2, Status: 503, Detail: "second"}))
	return l
}

// invalidWrite is one write no machine could make, tried alone and as part
// of a batch.
type invalidWrite struct {
	name, reason string
	ups          func(r map[string]store.Record) []store.Update
}

// one makes the usual case: one update of record id, changed by change.
func one(id string, change func(u *store.Update)) func(r map[string]store.Record) []store.Update {
	return func(r map[string]store.Record) []store.Update {
		x := r[id]
		u := store.Update{ID: x.ID, Delivery: x.Delivery}
		change(&u)
		return []store.Update{u}
	}
}

var invalidWrites = []invalidWrite{
	{"unknown-id", "a record must exist before it is saved", one("e1", func(u *store.Update) { u.ID = "nope" })},
	{"other-stream", "a lease on s gives no right to t's records", one("f1", func(u *store.Update) { u.Attempts = 1 })},
	{"twice-in-batch", "two versions of one record in a batch are ambiguous", func(r map[string]store.Record) []store.Update {
		a := store.Update{ID: "e1", Delivery: r["e1"].Delivery}
		b := a
		b.Attempts = 1
		return []store.Update{a, b}
	}},
	{"state-zero", "0 is no state", one("e1", func(u *store.Update) { u.State = 0 })},
	{"state-unknown", "9 is no state", one("e1", func(u *store.Update) { u.State = 9 })},
	{"dead-without-reason", "a dead letter keeps why it died", one("e2", func(u *store.Update) { u.State = machine.Dead })},
	{"dead-unknown-reason", "9 is no reason", one("e2", func(u *store.Update) { u.State, u.Reason = machine.Dead, 9 })},
	{"reason-not-dead", "a reason is set only when dead", one("e2", func(u *store.Update) { u.Reason = machine.Expired })},
	{"attempts-negative", "no count is below zero", one("e1", func(u *store.Update) { u.Attempts = -1 })},
	{"attempts-plus-two", "one write persists one attempt at most", one("e1", func(u *store.Update) { u.Attempts = 2 })},
	{"attempts-falling", "a spent attempt is never given back", one("e2", func(u *store.Update) { u.Attempts = 1 })},
	{"delivered-no-attempt", "nothing was sent, so nothing was delivered", one("e1", func(u *store.Update) { u.State = machine.Delivered })},
	{"retry-no-attempt", "a retry has a failed attempt behind it", one("e1", func(u *store.Update) { u.State = machine.Retry })},
	{"exhausted-no-attempt", "exhausted means attempts were spent", one("e1", func(u *store.Update) { u.State, u.Reason = machine.Dead, machine.Exhausted })},
	{"rejected-no-attempt", "only a sent event can be refused", one("e1", func(u *store.Update) { u.State, u.Reason = machine.Dead, machine.Rejected })},
	{"delivered-new-attempt", "an attempt is durable before it is sent, so it cannot deliver in the write that persists it", one("e1", func(u *store.Update) {
		u.State, u.Attempts = machine.Delivered, 1
	})},
	{"rejected-new-attempt", "an attempt is durable before it is sent, so it cannot be refused in the write that persists it", one("e2", func(u *store.Update) {
		u.State, u.Attempts, u.Reason = machine.Dead, 3, machine.Rejected
	})},
	{"delivered-to-retry", "a delivered record is terminal", one("e3", func(u *store.Update) { u.State = machine.Retry })},
	{"delivered-attempts", "a delivered record is terminal, attempts included", one("e3", func(u *store.Update) { u.Attempts = 2 })},
	{"delivered-next-at", "a delivered record is terminal, every field", one("e3", func(u *store.Update) { u.NextAt = u.NextAt.Add(time.Second) })},
	{"delivered-outcome", "a delivered record keeps the outcome that delivered it", one("e3", func(u *store.Update) {
		u.Outcome = &store.Outcome{Attempt: 1, Status: 200}
	})},
	{"dead-revived", "a dead record is terminal", one("e4", func(u *store.Update) { u.State, u.Reason = machine.Pending, machine.NotDead })},
	{"dead-reason-changed", "a dead record keeps the reason it died for", one("e4", func(u *store.Update) { u.Reason = machine.Exhausted })},
	{"dead-attempts", "a dead record is terminal, attempts included", one("e4", func(u *store.Update) { u.Attempts = 2 })},
	{"dead-next-at", "a dead record is terminal, every field", one("e4", func(u *store.Update) { u.NextAt = time.Time{} })},
	{"dead-outcome", "a dead letter keeps the outcome it died of", one("e4", func(u *store.Update) {
		u.Outcome = &store.Outcome{Attempt: 1, Status: 400, Detail: "other"}
	})},
	{"outcome-attempt-zero", "an outcome answers an attempt", one("e2", func(u *store.Update) { u.Outcome = &store.Outcome{Attempt: 0, Status: 503} })},
	{"outcome-unmade-attempt", "no outcome of an attempt never made", one("e2", func(u *store.Update) { u.Outcome = &store.Outcome{Attempt: 3, Status: 503} })},
	{"outcome-older-than-last", "the last outcome never goes back to an older attempt", one("e2", func(u *store.Update) {
		u.Outcome = &store.Outcome{Attempt: 1, Status: 500}
	})},
}

// saveInvalidWrites: each write no machine could make is refused with
// ErrInvalidWrite and changes nothing; the lease stays valid.
func saveInvalidWrites(e *env) {
	l := e.invalidScene()
	ids := []string{"e1", "e2", "e3", "e4", "f1"}
	before := e.snapshot(ids...)
	for _, w := range invalidWrites {
		err := e.s.Save(e.ctx, l, w.ups(before))
		e.wantErr("Save "+w.name+" ("+w.reason+")", err, store.ErrInvalidWrite)
		e.unchanged("Save "+w.name, before)
	}
	// The limits themselves are valid.
	e2 := before["e2"]
	e.saveUpdates(l, up(e2, machine.Retry, 2, e2.NextAt, 0, &store.Outcome{Attempt: 2, Status: 503, Detail: strings.Repeat("é", store.MaxDetailBytes/2)}))
	e.leaseValid("after invalid writes", l)
}

// saveAtomic: a batch with one invalid update changes none of its records,
// wherever the invalid one stands in the batch.
func saveAtomic(e *env) {
	l := e.invalidScene()
	ids := []string{"e1", "e2", "e3", "e4", "f1"}
	before := e.snapshot(ids...)
	// valid moves e1 and e2 on, leaving out any record the bad update
	// names, so that the bad update alone is what makes a batch invalid.
	valid := func(bad []store.Update) []store.Update {
		e1, e2 := before["e1"], before["e2"]
		out := []store.Update{
			up(e1, machine.Pending, 1, e1.NextAt.Add(time.Minute), 0, nil),
			up(e2, machine.Pending, 3, e2.NextAt, 0, nil),
		}
		return slices.DeleteFunc(out, func(u store.Update) bool {
			return slices.ContainsFunc(bad, func(b store.Update) bool { return b.ID == u.ID })
		})
	}
	for _, w := range invalidWrites {
		bad := w.ups(before)
		v := valid(bad)
		for _, batch := range [][]store.Update{
			slices.Concat(bad, v),
			slices.Concat(v, bad),
			slices.Concat(v[:1], bad, v[1:]),
		} {
			err := e.s.Save(e.ctx, l, batch)
			e.wantErr("Save of a batch with "+w.name, err, store.ErrInvalidWrite)
			e.unchanged("Save of a batch with "+w.name, before)
		}
	}
	e.saveUpdates(l, valid(nil)...)
	if got := e.get("e2").Attempts; got != 3 {
		e.t.Errorf("e2 attempts after the valid batch alone = %d, want 3", got)
	}
}

// saveRetrySchedule: a retry's NextAt is durable: the stream is not due
// again until the store's clock reaches it, then it is.
func saveRetrySchedule(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w1")
	rec := e.pending(l, 0)[0]
	rec.State, rec.Attempts, rec.NextAt = machine.Retry, 1, e.clock.Now().Add(5*time.Second)
	e.save(l, rec)
	e.release(l)

	if got := e.claim("w2", 10); len(got) != 0 {
		e.t.Errorf("ClaimDue before the retry is due = %v, want none", streamsOf(got))
	}
	e.clock.Advance(5 * time.Second)
	got := e.claim("w2", 10)
	if diff := cmp.Diff([]string{"s"}, streamsOf(got), diffOpts...); diff != "" {
		e.t.Fatalf("ClaimDue when the retry is due (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]machine.Record{rec}, e.pending(got[0], 0)); diff != "" {
		e.t.Errorf("the next owner's Pending (-want +got):\n%s", diff)
	}
}

// terminalRecords: delivered, dead rejected and dead exhausted are final:
// Pending no longer returns them, ClaimDue never claims for them, Get
// still returns them with their reason, DeadLetters lists the dead in Seq
// order, and a new event on the stream is claimed and pending alone.
func terminalRecords(e *env) {
	for _, id := range []string{"e1", "e2", "e3"} {
		e.enqueue("s", id, "p-"+id)
	}
	l := e.acquire("s", "w1")
	recs := e.pending(l, 0)
	d, rj, ex := recs[0], recs[1], recs[2]
	d.Attempts, rj.Attempts = 1, 1
	e.save(l, d, rj) // the attempts are durable before they are sent
	d.State = machine.Delivered
	rj.State, rj.Reason = machine.Dead, machine.Rejected
	e.save(l, d, rj)
	for range 3 {
		ex.Attempts++
		ex.State, ex.NextAt = machine.Retry, e.clock.Now().Add(time.Second)
		e.save(l, ex)
	}
	ex.State, ex.Reason = machine.Dead, machine.Exhausted
	e.save(l, ex)

	if got := e.pending(l, 0); len(got) != 0 {
		e.t.Errorf("Pending with only terminal records = %d records, want none", len(got))
	}
	e.release(l)
	e.clock.Advance(24 * time.Hour)
	if got := e.claim("w2", 10); len(got) != 0 {
		e.t.Errorf("ClaimDue on a stream of terminal records = %v, want none", streamsOf(got))
	}
	got := map[string]machine.Record{}
	for id, r := range e.snapshot("e1", "e2", "e3") {
		got[id] = r.Machine()
	}
	if diff := cmp.Diff(map[string]machine.Record{"e1": d, "e2": rj, "e3": ex}, got); diff != "" {
		e.t.Errorf("Get of terminal records (-want +got):\n%s", diff)
	}
	var dead []machine.Record
	for _, r := range e.deadLetters("s") {
		dead = append(dead, r.Machine())
	}
	if diff := cmp.Diff([]machine.Record{rj, ex}, dead); diff != "" {
		e.t.Errorf("DeadLetters (-want +got):\n%s", diff)
	}

	e4 := e.enqueue("s", "e4", "p-e4").Machine()
	claimed := e.claim("w2", 10)
	if diff := cmp.Diff([]string{"s"}, streamsOf(claimed), diffOpts...); diff != "" {
		e.t.Fatalf("ClaimDue after a new event (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]machine.Record{e4}, e.pending(claimed[0], 0)); diff != "" {
		e.t.Errorf("Pending after a new event (-want +got):\n%s", diff)
	}
}

// cancelledContext: every method given a cancelled context returns
// ctx.Err() and changes nothing: no record, no enqueue, no lease granted,
// renewed, released or revoked, nothing replayed, discarded or deleted.
func cancelledContext(e *env) {
	e.enqueue("a", "e1", "p1")
	e.enqueue("a", "e2", "p2")
	e.update("a", "e2", func(r *machine.Record) {
		r.State, r.Attempts, r.Reason = machine.Dead, 1, machine.Rejected
	})
	e.enqueue("b", "f1", "p3")
	e.enqueue("c", "d1", "p4")
	e.update("c", "d1", func(r *machine.Record) { r.State, r.Attempts = machine.Delivered, 1 })
	e.clock.Advance(2 * time.Hour)
	l := e.acquire("a", "w1")
	before := e.snapshot("e1", "e2", "f1", "d1")
	next := up(before["e1"], machine.Pending, 1, before["e1"].NextAt, 0, nil)

	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"Enqueue new", func() error { _, _, err := e.s.Enqueue(ctx, "a", "new", []byte("p")); return err }},
		{"Enqueue known", func() error { _, _, err := e.s.Enqueue(ctx, "a", "e1", []byte("p")); return err }},
		{"ClaimDue", func() error { _, err := e.s.ClaimDue(ctx, "w2", ttl, 10); return err }},
		{"Acquire", func() error { _, err := e.s.Acquire(ctx, "b", "w2", ttl); return err }},
		{"Renew", func() error { _, err := e.s.Renew(ctx, l, time.Hour); return err }},
		{"Release", func() error { return e.s.Release(ctx, l) }},
		{"Save", func() error { return e.s.Save(ctx, l, []store.Update{next}) }},
		{"Pending", func() error { _, err := e.s.Pending(ctx, l, 0, 10); return err }},
		{"Get", func() error { _, err := e.s.Get(ctx, "e1"); return err }},
		{"DeadLetters", func() error { _, err := e.s.DeadLetters(ctx, "a", 0, 10); return err }},
		{"Replay", func() error { _, err := e.s.Replay(ctx, "e2", "op"); return err }},
		{"Discard", func() error { _, err := e.s.Discard(ctx, "e2", "op"); return err }},
		{"DeleteSettled", func() error { _, err := e.s.DeleteSettled(ctx, time.Hour, 10); return err }},
	}
	for _, c := range calls {
		e.wantErr(c.name+" with a cancelled context", c.call(), context.Canceled)
	}

	e.unchanged("calls with a cancelled context", before)
	_, err := e.s.Get(e.ctx, "new")
	e.wantErr(`Get("new") after a cancelled Enqueue`, err, store.ErrNotFound)
	e.leaseValid("w1's lease after a cancelled Renew and Release", l)
	e.acquire("b", "w3") // neither the cancelled ClaimDue nor Acquire took b
	if got := e.enqueue("a", "e3", "p").Seq; got != 3 {
		e.t.Errorf("Seq after a cancelled Enqueue = %d, want 3", got)
	}
}

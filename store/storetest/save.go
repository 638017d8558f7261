package storetest

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// saveValidWrites: every move the machine makes is accepted and read back
// exactly as saved: a state change with the same or one more attempt, a
// new NextAt, several records in one batch, an empty batch.
func saveValidWrites(e *env) {
	e.enqueue("s", "e1", "p1")
	e.enqueue("s", "e2", "p2")
	l := e.acquire("s", "w")
	now := e.clock.Now()
	steps := []struct {
		name  string
		batch func(e1, e2 machine.Record) []machine.Record
	}{
		{"attempt in flight", func(e1, _ machine.Record) []machine.Record {
			e1.Attempts, e1.NextAt = 1, now.Add(time.Second)
			return []machine.Record{e1}
		}},
		{"retry, same attempts", func(e1, _ machine.Record) []machine.Record {
			e1.State, e1.NextAt = machine.Retry, now.Add(5*time.Second)
			return []machine.Record{e1}
		}},
		{"both parked", func(e1, e2 machine.Record) []machine.Record {
			e1.State, e2.State = machine.Parked, machine.Parked
			return []machine.Record{e1, e2}
		}},
		{"released to pending", func(e1, e2 machine.Record) []machine.Record {
			e1.State, e2.State = machine.Pending, machine.Pending
			return []machine.Record{e1, e2}
		}},
		{"delivered and dead", func(e1, e2 machine.Record) []machine.Record {
			e1.State, e1.Attempts = machine.Delivered, 2
			e2.State, e2.Attempts, e2.Reason = machine.Dead, 1, machine.Expired
			return []machine.Record{e1, e2}
		}},
		{"empty batch", func(machine.Record, machine.Record) []machine.Record { return nil }},
	}
	for _, s := range steps {
		before := e.snapshot("e1", "e2")
		batch := s.batch(before["e1"], before["e2"])
		e.save(l, batch...)
		want := before
		for _, r := range batch {
			want[r.ID] = r
		}
		if diff := cmp.Diff(want, e.snapshot("e1", "e2"), diffOpts...); diff != "" {
			e.t.Errorf("after Save %s (-want +got):\n%s", s.name, diff)
		}
	}
}

// invalidScene is the store every invalid write is tried against: on
// stream s, e1 pending (0 attempts), e2 in retry (1), e3 delivered (1),
// e4 dead rejected (1); on stream t, f1 pending. It returns the lease on s.
func (e *env) invalidScene() store.Lease {
	e.t.Helper()
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		e.enqueue("s", id, "p-"+id)
	}
	e.enqueue("t", "f1", "p-f1")
	l := e.acquire("s", "w")
	recs := e.pending(l, 0)
	recs[1].State, recs[1].Attempts, recs[1].NextAt = machine.Retry, 1, e.clock.Now().Add(time.Second)
	recs[2].State, recs[2].Attempts = machine.Delivered, 1
	recs[3].State, recs[3].Attempts, recs[3].Reason = machine.Dead, 1, machine.Rejected
	e.save(l, recs[1:]...)
	return l
}

// invalidWrites are writes that would rewrite history, each tried alone
// and as part of a batch.
var invalidWrites = []struct {
	name, reason string
	rec          func(r map[string]machine.Record) machine.Record
}{
	{"unknown-id", "a record must exist before it is saved", func(r map[string]machine.Record) machine.Record {
		x := r["e1"]
		x.ID = "nope"
		return x
	}},
	{"other-stream", "a lease on s gives no right to t's records", func(r map[string]machine.Record) machine.Record {
		x := r["f1"]
		x.Attempts = 1
		return x
	}},
	{"changed-seq", "the acceptance order never changes", func(r map[string]machine.Record) machine.Record {
		x := r["e1"]
		x.Seq = 7
		return x
	}},
	{"changed-payload", "the payload is fixed at acceptance", func(r map[string]machine.Record) machine.Record {
		x := r["e1"]
		x.Payload = []byte("other")
		return x
	}},
	{"changed-accepted-at", "the acceptance time decides MaxAge", func(r map[string]machine.Record) machine.Record {
		x := r["e1"]
		x.AcceptedAt = x.AcceptedAt.Add(time.Nanosecond)
		return x
	}},
	{"attempts-plus-two", "one write persists one attempt at most", func(r map[string]machine.Record) machine.Record {
		x := r["e1"]
		x.Attempts = 2
		return x
	}},
	{"attempts-falling", "a spent attempt is never given back", func(r map[string]machine.Record) machine.Record {
		x := r["e2"]
		x.Attempts = 0
		return x
	}},
	{"delivered-to-retry", "a delivered record is terminal", func(r map[string]machine.Record) machine.Record {
		x := r["e3"]
		x.State = machine.Retry
		return x
	}},
	{"delivered-attempts", "a delivered record is terminal, attempts included", func(r map[string]machine.Record) machine.Record {
		x := r["e3"]
		x.Attempts = 2
		return x
	}},
	{"dead-revived", "a dead record is terminal", func(r map[string]machine.Record) machine.Record {
		x := r["e4"]
		x.State, x.Reason = machine.Pending, machine.NotDead
		return x
	}},
	{"dead-reason-changed", "a dead record keeps the reason it died for", func(r map[string]machine.Record) machine.Record {
		x := r["e4"]
		x.Reason = machine.Exhausted
		return x
	}},
}

// saveInvalidWrites: each write that would rewrite history is refused
// with ErrInvalidWrite and changes nothing.
func saveInvalidWrites(e *env) {
	l := e.invalidScene()
	ids := []string{"e1", "e2", "e3", "e4", "f1"}
	before := e.snapshot(ids...)
	for _, w := range invalidWrites {
		err := e.s.Save(e.ctx, l, []machine.Record{w.rec(before)})
		e.wantErr("Save "+w.name+" ("+w.reason+")", err, store.ErrInvalidWrite)
		e.unchanged("Save "+w.name, before)
	}
	e.leaseValid("after invalid writes", l)
}

// saveAtomic: a batch with one invalid record changes none of its records,
// wherever the invalid one stands in the batch.
func saveAtomic(e *env) {
	l := e.invalidScene()
	ids := []string{"e1", "e2", "e3", "e4", "f1"}
	before := e.snapshot(ids...)
	valid := func() []machine.Record {
		e1, e2 := before["e1"], before["e2"]
		e1.Attempts, e1.NextAt = 1, e1.NextAt.Add(time.Minute)
		e2.State, e2.Attempts = machine.Pending, 2
		return []machine.Record{e1, e2}
	}
	for _, w := range invalidWrites {
		bad := w.rec(before)
		for _, batch := range [][]machine.Record{
			append([]machine.Record{bad}, valid()...),
			append(valid(), bad),
			{valid()[0], bad, valid()[1]},
		} {
			err := e.s.Save(e.ctx, l, batch)
			e.wantErr("Save of a batch with "+w.name, err, store.ErrInvalidWrite)
			e.unchanged("Save of a batch with "+w.name, before)
		}
	}
	e.save(l, valid()...)
	if got := e.get("e2").Attempts; got != 2 {
		e.t.Errorf("e2 attempts after the valid batch alone = %d, want 2", got)
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
	d.State, d.Attempts = machine.Delivered, 1
	rj.State, rj.Attempts, rj.Reason = machine.Dead, 1, machine.Rejected
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
	if diff := cmp.Diff(map[string]machine.Record{"e1": d, "e2": rj, "e3": ex}, e.snapshot("e1", "e2", "e3")); diff != "" {
		e.t.Errorf("Get of terminal records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]machine.Record{rj, ex}, e.deadLetters("s")); diff != "" {
		e.t.Errorf("DeadLetters (-want +got):\n%s", diff)
	}

	e4 := e.enqueue("s", "e4", "p-e4")
	got := e.claim("w2", 10)
	if diff := cmp.Diff([]string{"s"}, streamsOf(got), diffOpts...); diff != "" {
		e.t.Fatalf("ClaimDue after a new event (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]machine.Record{e4}, e.pending(got[0], 0)); diff != "" {
		e.t.Errorf("Pending after a new event (-want +got):\n%s", diff)
	}
}

// cancelledContext: every method given a cancelled context returns
// ctx.Err() and changes nothing: no record, no enqueue, no lease granted,
// renewed or released.
func cancelledContext(e *env) {
	e.enqueue("a", "e1", "p1")
	e.enqueue("a", "e2", "p2")
	e.update("a", "e2", func(r *machine.Record) {
		r.State, r.Attempts, r.Reason = machine.Dead, 1, machine.Rejected
	})
	e.enqueue("b", "f1", "p3")
	l := e.acquire("a", "w1")
	before := e.snapshot("e1", "e2", "f1")
	next := before["e1"]
	next.Attempts = 1

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
		{"Save", func() error { return e.s.Save(ctx, l, []machine.Record{next}) }},
		{"Pending", func() error { _, err := e.s.Pending(ctx, l, 0); return err }},
		{"Get", func() error { _, err := e.s.Get(ctx, "e1"); return err }},
		{"DeadLetters", func() error { _, err := e.s.DeadLetters(ctx, "a"); return err }},
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

package storetest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// The checks of a batch of saves (store.BatchSaver, store.SaveEach): each
// save's outcome is its own, exactly as if it were saved alone, in batch
// order. Each check runs once per batchWay, on a fresh store: so the
// same scene is judged through a store's SaveBatch and through one Save
// each, the reference a batch must equal.

// batchWay is one way to make a batch of saves. It returns each save's
// error, or the call's own.
type batchWay struct {
	name string
	// batch says the way needs a store.BatchSaver: the check is skipped
	// on a store that has none.
	batch bool
	save  func(ctx context.Context, s store.Store, saves []store.LeaseSave) ([]error, error)
}

// saveOnly hides a store's SaveBatch: through it, store.SaveEach makes
// one Save each.
type saveOnly struct{ store.Store }

var batchWays = []batchWay{
	{"save-each", false, func(ctx context.Context, s store.Store, saves []store.LeaseSave) ([]error, error) {
		return store.SaveEach(ctx, s, saves), nil
	}},
	{"one-save-each", false, func(ctx context.Context, s store.Store, saves []store.LeaseSave) ([]error, error) {
		return store.SaveEach(ctx, saveOnly{s}, saves), nil
	}},
	{"save-batch", true, func(ctx context.Context, s store.Store, saves []store.LeaseSave) ([]error, error) {
		return s.(store.BatchSaver).SaveBatch(ctx, saves)
	}},
}

// saveBatchChecks are the checks of this file, each once per batchWay,
// named check/way.
func saveBatchChecks() []check {
	var out []check
	for _, c := range []struct {
		name string
		run  func(e *env, w batchWay)
	}{
		{"save-batch-made", saveBatchMade},
		{"save-batch-stale-lease", saveBatchStaleLease},
		{"save-batch-refused-alone", saveBatchRefusedAlone},
		{"save-batch-one-lease-in-order", saveBatchOneLeaseInOrder},
		{"save-batch-cancelled", saveBatchCancelled},
		{"save-batch-empty", saveBatchEmpty},
	} {
		for _, w := range batchWays {
			out = append(out, check{c.name + "/" + w.name, func(e *env) {
				if _, ok := e.s.(store.BatchSaver); w.batch && !ok {
					e.t.Skip("the store is not a store.BatchSaver")
				}
				c.run(e, w)
			}})
		}
	}
	return out
}

// saveBatch makes saves through w and returns each save's error; an
// error of the call itself fails the check.
func (e *env) saveBatch(w batchWay, saves ...store.LeaseSave) []error {
	e.t.Helper()
	out, err := w.save(e.ctx, e.s, saves)
	if err != nil {
		e.t.Fatalf("%s of %d saves: %v", w.name, len(saves), err)
	}
	if len(out) != len(saves) {
		e.t.Fatalf("%s of %d saves: %d outcomes", w.name, len(saves), len(out))
	}
	return out
}

// wantErrs fails the check unless each save's error is the one wanted:
// nil for nil, else errors.Is the target.
func (e *env) wantErrs(what string, got, want []error) {
	e.t.Helper()
	for i := range want {
		switch {
		case want[i] == nil && got[i] != nil:
			e.t.Errorf("%s: save %d: %v, want it made", what, i, got[i])
		case want[i] != nil && !errors.Is(got[i], want[i]):
			e.t.Errorf("%s: save %d: %v, want %v", what, i, got[i], want[i])
		}
	}
}

// ls is one save of a batch.
func ls(l store.Lease, ups ...store.Update) store.LeaseSave {
	return store.LeaseSave{Lease: l, Updates: ups}
}

// saveBatchMade: a batch over several streams, given out of name order
// and with two saves through one lease, makes every save: each record
// reads back as saved (its outcome stamped at the store's now, a
// delivered one settled), and each stream's due instant moved: a, b
// retry a minute and two minutes on, c settled and never due again,
// where all three were due before the batch.
func saveBatchMade(e *env, w batchWay) {
	for _, id := range []string{"a1", "a2", "b1", "c1"} {
		e.enqueue(id[:1], id, "p-"+id)
		e.update(id[:1], id, func(r *machine.Record) { r.Attempts = 1 })
	}
	la, lb, lc := e.acquire("a", "w"), e.acquire("b", "w"), e.acquire("c", "w")
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	before := e.snapshot("a1", "a2", "b1", "c1")
	busy, ok := &store.Outcome{Attempt: 1, Status: 503, Detail: "busy"}, &store.Outcome{Attempt: 1, Status: 204}
	errs := e.saveBatch(w,
		ls(lc, up(before["c1"], machine.Delivered, 1, before["c1"].NextAt, 0, ok)),
		ls(la, up(before["a1"], machine.Retry, 1, now.Add(time.Minute), 0, busy)),
		ls(lb, up(before["b1"], machine.Retry, 1, now.Add(2*time.Minute), 0, busy)),
		ls(la, up(before["a2"], machine.Delivered, 1, before["a2"].NextAt, 0, ok)),
	)
	e.wantErrs("a batch of valid saves", errs, []error{nil, nil, nil, nil})
	want := make(map[string]store.Record, len(before))
	for id, r := range before {
		switch id {
		case "a1", "b1":
			r.State, r.Last, r.LastAt = machine.Retry, *busy, now
			r.NextAt = now.Add(time.Minute)
			if id == "b1" {
				r.NextAt = now.Add(2 * time.Minute)
			}
		default:
			r.State, r.Last, r.LastAt, r.SettledAt = machine.Delivered, *ok, now, now
		}
		want[id] = r
	}
	if diff := cmp.Diff(want, e.snapshot("a1", "a2", "b1", "c1"), diffOpts...); diff != "" {
		e.t.Errorf("records after the batch (-want +got):\n%s", diff)
	}
	// The leases run out unreleased: a release would move the due
	// instants itself.
	e.clock.Advance(time.Minute - tick)
	if got := streamsOf(e.claim("x", 10)); len(got) != 0 {
		e.t.Errorf("ClaimDue before a's retry = %v, want none: the batch moved every stream's due instant", got)
	}
	e.clock.Advance(tick)
	if diff := cmp.Diff([]string{"a"}, streamsOf(e.claim("x", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue at a's retry (-want +got):\n%s", diff)
	}
	e.clock.Advance(time.Minute)
	if diff := cmp.Diff([]string{"a", "b"}, streamsOf(e.claim("x", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue at b's retry, a's lease run out (-want +got):\n%s", diff)
	}
}

// saveBatchStaleLease: a save through a stale lease in the middle of a
// batch fails alone with ErrStaleLease and writes nothing; the saves
// before and after it are made, the one through its stream's current
// lease included, and that lease stays valid.
func saveBatchStaleLease(e *env, w batchWay) {
	for _, id := range []string{"a1", "b1", "c1"} {
		e.enqueue(id[:1], id, "p-"+id)
	}
	la, lc := e.acquire("a", "w"), e.acquire("c", "w")
	old := e.acquire("b", "w-old")
	e.release(old)
	lb := e.acquire("b", "w-new")
	before := e.snapshot("a1", "b1", "c1")
	next := e.clock.Now().Add(time.Minute)
	errs := e.saveBatch(w,
		ls(la, up(before["a1"], machine.Pending, 1, next, 0, nil)),
		ls(lb, up(before["b1"], machine.Pending, 1, next, 0, nil)),
		ls(old, up(before["b1"], machine.Pending, 2, next.Add(time.Hour), 0, nil)), // valid after the one before, but stale
		ls(lc, up(before["c1"], machine.Pending, 1, next, 0, nil)),
	)
	e.wantErrs("a batch with a stale lease in the middle", errs, []error{nil, nil, store.ErrStaleLease, nil})
	for id, r := range before {
		r.Attempts, r.NextAt = 1, next
		if diff := cmp.Diff(r, e.get(id), diffOpts...); diff != "" {
			e.t.Errorf("%s after the batch (-want +got):\n%s", id, diff)
		}
	}
	e.leaseValid("b's current lease after the batch", lb)
}

// saveBatchRefusedAlone: each write no machine could make (the
// invalidWrites of save.go), in a save of its own among valid updates,
// fails that save alone with ErrInvalidWrite and writes nothing of it,
// not even its valid updates; the saves of other streams before and
// after it are made. So does a save refused with ErrBadArgument, for an
// update's ID or the lease's stream that is not text.
func saveBatchRefusedAlone(e *env, w batchWay) {
	l := e.invalidScene()
	e.enqueue("u", "g1", "p-g1")
	lt, lu := e.acquire("t", "w"), e.acquire("u", "w")
	ids := []string{"e1", "e2", "e3", "e4"}
	before := e.snapshot(ids...)
	all := e.snapshot(append(ids, "f1")...) // what invalidWrites read
	e1, e2 := before["e1"], before["e2"]
	valid := []store.Update{up(e1, machine.Pending, 1, e1.NextAt, 0, nil), up(e2, machine.Pending, 3, e2.NextAt, 0, nil)}
	f1, g1 := e.get("f1"), e.get("g1")
	// neighbours are saves of t and u that each batch moves on: their
	// records' NextAt is the batch's number of minutes on.
	neighbours := func(n int) (store.LeaseSave, store.LeaseSave) {
		at := epoch.Add(time.Duration(n) * time.Minute)
		return ls(lt, up(f1, machine.Pending, 0, at, 0, nil)), ls(lu, up(g1, machine.Pending, 0, at, 0, nil))
	}
	madeAt := func(what string, n int) {
		e.t.Helper()
		at := epoch.Add(time.Duration(n) * time.Minute)
		if a, b := e.get("f1").NextAt, e.get("g1").NextAt; !a.Equal(at) || !b.Equal(at) {
			e.t.Errorf("%s: the neighbours' NextAt = %v and %v, want both %v: made", what, a, b, at)
		}
	}
	n := 0
	for _, iw := range invalidWrites {
		// The bad updates before and after the valid ones of the records
		// they do not name: the bad ones alone make the save invalid.
		bad := iw.ups(all)
		rest := slices.DeleteFunc(slices.Clone(valid), func(u store.Update) bool {
			return slices.ContainsFunc(bad, func(b store.Update) bool { return b.ID == u.ID })
		})
		for _, ups := range [][]store.Update{slices.Concat(bad, rest), slices.Concat(rest, bad)} {
			n++
			first, last := neighbours(n)
			errs := e.saveBatch(w, first, ls(l, ups...), last)
			what := "a batch with " + iw.name + " (" + iw.reason + ")"
			e.wantErrs(what, errs, []error{nil, store.ErrInvalidWrite, nil})
			e.unchanged(what, before)
			madeAt(what, n)
		}
	}
	n++
	first, last := neighbours(n)
	errs := e.saveBatch(w,
		first,
		ls(l, valid[0], store.Update{ID: "e\xff", Delivery: e1.Delivery}),
		ls(store.Lease{Stream: "s\x00", Owner: l.Owner, Token: l.Token, Expires: l.Expires}, valid...),
		last,
	)
	e.wantErrs("a batch with names that are not text", errs, []error{nil, store.ErrBadArgument, store.ErrBadArgument, nil})
	madeAt("a batch with names that are not text", n)
	e.leaseValid("the refused saves' lease", l)
	e.saveUpdates(l, valid...) // the valid updates alone are made
	if got := e.get("e2").Attempts; got != 3 {
		e.t.Errorf("e2 attempts after the valid updates alone = %d, want 3", got)
	}
}

// saveBatchOneLeaseInOrder: saves through one lease are made in batch
// order, each checked against what the one before left: an attempt,
// then its failure into retry, then the next attempt are all made
// (checked against the record as it was before the batch, the second
// and third would be refused), and a fourth that gives the last attempt
// back is refused, checked against the third.
func saveBatchOneLeaseInOrder(e *env, w batchWay) {
	e.enqueue("s", "e1", "p")
	e.enqueue("t", "f1", "p")
	l, lt := e.acquire("s", "w"), e.acquire("t", "w")
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	r := e.get("e1")
	fail := &store.Outcome{Attempt: 1, Status: 503, Detail: "busy"}
	errs := e.saveBatch(w,
		ls(l, up(r, machine.Pending, 1, r.NextAt, 0, nil)),
		ls(lt, up(e.get("f1"), machine.Pending, 1, now, 0, nil)),
		ls(l, up(r, machine.Retry, 1, now.Add(time.Minute), 0, fail)),
		ls(l, up(r, machine.Retry, 2, now.Add(time.Minute), 0, nil)),
		ls(l, up(r, machine.Retry, 1, now.Add(time.Minute), 0, nil)),
	)
	e.wantErrs("saves through one lease", errs, []error{nil, nil, nil, nil, store.ErrInvalidWrite})
	want := r
	want.State, want.Attempts, want.NextAt, want.Last, want.LastAt = machine.Retry, 2, now.Add(time.Minute), *fail, now
	if diff := cmp.Diff(want, e.get("e1"), diffOpts...); diff != "" {
		e.t.Errorf("e1 after the batch (-want +got):\n%s", diff)
	}
}

// saveBatchCancelled: a batch under a context already cancelled makes
// no save, and says so with ctx's error: the call's, or every save's.
func saveBatchCancelled(e *env, w batchWay) {
	e.enqueue("a", "a1", "p")
	e.enqueue("b", "b1", "p")
	la, lb := e.acquire("a", "w"), e.acquire("b", "w")
	before := e.snapshot("a1", "b1")
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	next := e.clock.Now().Add(time.Minute)
	errs, err := w.save(ctx, e.s, []store.LeaseSave{
		ls(la, up(before["a1"], machine.Pending, 1, next, 0, nil)),
		ls(lb, up(before["b1"], machine.Pending, 1, next, 0, nil)),
	})
	switch {
	case err != nil:
		e.wantErr("the call under a cancelled context", err, context.Canceled)
	case len(errs) != 2:
		e.t.Errorf("%d outcomes for 2 saves", len(errs))
	default:
		e.wantErrs("saves under a cancelled context", errs, []error{context.Canceled, context.Canceled})
	}
	e.unchanged("a batch under a cancelled context", before)
	e.leaseValid("a's lease after a cancelled batch", la)
}

// saveBatchEmpty: an empty batch is made, with no outcome; a batch of
// empty saves writes nothing, but each is checked against its lease.
func saveBatchEmpty(e *env, w batchWay) {
	if errs := e.saveBatch(w); len(errs) != 0 {
		e.t.Errorf("an empty batch: %d outcomes", len(errs))
	}
	e.enqueue("a", "a1", "p")
	e.enqueue("b", "b1", "p")
	la, lb := e.acquire("a", "w"), e.acquire("b", "w")
	e.release(lb)
	before := e.snapshot("a1", "b1")
	errs := e.saveBatch(w, ls(la), ls(lb), ls(la))
	e.wantErrs("a batch of empty saves", errs, []error{nil, store.ErrStaleLease, nil})
	e.unchanged("a batch of empty saves", before)
}

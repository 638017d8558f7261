package storetest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// saveNeighbourStream: a lease gives rights to its own stream's records
// only. A valid lease on s cannot write a record of t, whether t is free
// or held by another owner, alone or beside s's own records
// (ErrInvalidWrite, nothing changes); s's lease relabelled as a lease on t
// is stale; t's owner is untouched and still writes.
func saveNeighbourStream(e *env) {
	e.enqueue("s", "e1", "p")
	e.enqueue("t", "f1", "p")
	ls := e.acquire("s", "w1")
	before := e.snapshot("e1", "f1")
	e1, f1 := before["e1"], before["f1"]
	mine := up(e1, machine.Pending, 1, e1.NextAt, 0, nil)
	theirs := up(f1, machine.Pending, 1, f1.NextAt, 0, nil)
	try := func(what string) {
		e.t.Helper()
		for _, batch := range [][]store.Update{{theirs}, {mine, theirs}, {theirs, mine}} {
			err := e.s.Save(e.ctx, ls, batch)
			e.wantErr(fmt.Sprintf("Save through s's lease of %d records with t's f1 (%s)", len(batch), what), err, store.ErrInvalidWrite)
			e.unchanged("a Save with a neighbour's record ("+what+")", before)
		}
	}
	try("t free")
	lt := e.acquire("t", "w2")
	try("t held by w2")

	relabelled := ls
	relabelled.Stream = "t"
	e.wantErr("Save through s's lease relabelled as t's", e.s.Save(e.ctx, relabelled, []store.Update{theirs}), store.ErrStaleLease)
	e.wantErr("empty Save through s's lease relabelled as t's", e.s.Save(e.ctx, relabelled, nil), store.ErrStaleLease)
	e.unchanged("a Save through a relabelled lease", before)

	e.leaseValid("s's lease after its refused Saves", ls)
	e.leaseValid("t's lease after s's Saves", lt)
	e.saveUpdates(lt, theirs)
	e.saveUpdates(ls, mine)
	if got := [2]int{e.get("e1").Attempts, e.get("f1").Attempts}; got != [2]int{1, 1} {
		e.t.Errorf("attempts of e1, f1 after each owner's own Save = %v, want [1 1]", got)
	}
}

// saveConcurrentOneLease: Saves through one lease may run at once (the
// worker's goroutines share a lease); the store runs them one at a time,
// each checked against what the Saves before it left. Saves of distinct
// records all succeed. Saves racing to set one record's Attempts to 1, 2,
// ... n (each valid only after the one below it) succeed for exactly 1 to
// k, in some order, and the record ends at k: no Save is judged against
// a state another has already changed, and none is lost.
func saveConcurrentOneLease(e *env) {
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%d", i+1)
		e.enqueue("s", ids[i], "p")
	}
	l := e.acquire("s", "w1")
	before := e.snapshot(ids...)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			r := before[id]
			errs[i] = e.s.Save(e.ctx, l, []store.Update{up(r, machine.Pending, 1, r.NextAt.Add(time.Second), 0, nil)})
		})
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil {
			e.t.Errorf("concurrent Save of %s alone: %v", id, errs[i])
		}
		if got := e.get(id); got.Attempts != 1 || !got.NextAt.Equal(before[id].NextAt.Add(time.Second)) {
			e.t.Errorf("%s after the concurrent Saves: attempts %d, next at %v; want 1, %v", id, got.Attempts, got.NextAt, before[id].NextAt.Add(time.Second))
		}
	}

	r := e.get("e1")
	for i := range n {
		wg.Go(func() {
			errs[i] = e.s.Save(e.ctx, l, []store.Update{up(r, machine.Pending, r.Attempts+1+i, r.NextAt, 0, nil)})
		})
	}
	wg.Wait()
	var won []int
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, r.Attempts+1+i)
		case !errors.Is(err, store.ErrInvalidWrite):
			e.t.Errorf("concurrent Save of e1 to %d attempts: error = %v, want nil or %v", r.Attempts+1+i, err, store.ErrInvalidWrite)
		}
	}
	got := e.get("e1").Attempts
	want := make([]int, 0, n)
	for a := r.Attempts + 1; a <= got; a++ {
		want = append(want, a)
	}
	if diff := cmp.Diff(want, won, diffOpts...); diff != "" {
		e.t.Errorf("racing Saves of e1 from %d attempts that succeeded (-want: every count up to the final %d +got):\n%s", r.Attempts, got, diff)
	}
	if got <= r.Attempts {
		e.t.Errorf("e1 after racing Saves: attempts %d, want above %d (the Save to %d always fits)", got, r.Attempts, r.Attempts+1)
	}
	e.leaseValid("the shared lease after concurrent Saves", l)
}

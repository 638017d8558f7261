package storetest

import (
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// fencingForgedOwner: the owner is part of a lease's identity: the
// current token under another owner's name is refused by Save, Renew,
// Pending and Release, and the real lease is untouched.
func fencingForgedOwner(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w1")
	before := e.snapshot("e1")
	forged := l
	forged.Owner = "w2"
	e.refusedStale("the current token under another owner", forged, before["e1"])
	e.unchanged("calls with a forged owner", before)
	e.leaseValid("the real lease after forged calls", l)
}

// releaseStaleAtOnce: a released lease is stale the moment Release
// returns, before anyone else takes the stream; its owner acquiring again
// gets a new, larger token, and the old lease stays stale.
func releaseStaleAtOnce(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w1")
	e.release(l)
	before := e.snapshot("e1")
	e.refusedStale("released lease, stream still free", l, before["e1"])
	e.unchanged("a released owner's calls", before)
	again := e.acquire("s", "w1")
	if again.Token <= l.Token {
		e.t.Errorf("token of the same owner's next lease = %d, want above %d", again.Token, l.Token)
	}
	e.refusedStale("released lease, same owner back", l, before["e1"])
	e.leaseValid("the owner's new lease", again)
}

// outcomeKept: a Save's outcome becomes the record's Last, stamped with
// the store's now; a Save without one keeps Last; a newer attempt's
// outcome replaces it; a dead letter shows the outcome it died of.
func outcomeKept(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w")
	r := e.get("e1")
	o1 := store.Outcome{Attempt: 1, Status: 503, Detail: "upstream unavailable"}
	o2 := store.Outcome{Attempt: 2, Status: 0, Detail: "dial tcp: connection refused"}
	e.saveUpdates(l, up(r, machine.Pending, 1, epoch.Add(time.Second), 0, nil))
	e.clock.Advance(time.Second)
	t1 := e.clock.Now()
	e.saveUpdates(l, up(r, machine.Retry, 1, t1.Add(time.Second), 0, &o1))
	e.wantLast("after the first failure", "e1", o1, t1)
	e.clock.Advance(time.Second)
	e.saveUpdates(l, up(r, machine.Retry, 2, t1.Add(3*time.Second), 0, nil))
	e.wantLast("after persisting the next attempt", "e1", o1, t1)
	e.clock.Advance(time.Second)
	t2 := e.clock.Now()
	e.saveUpdates(l, up(r, machine.Dead, 2, t1.Add(3*time.Second), machine.Exhausted, &o2))
	e.wantLast("after dying", "e1", o2, t2)
	dead := e.deadLetters("s")
	if len(dead) != 1 || dead[0].Last != o2 || !dead[0].LastAt.Equal(t2) {
		e.t.Errorf("DeadLetters = %+v, want e1 with Last %+v at %v", dead, o2, t2)
	}
}

func (e *env) wantLast(what, id string, o store.Outcome, at time.Time) {
	e.t.Helper()
	r := e.get(id)
	if r.Last != o || !r.LastAt.Equal(at) {
		e.t.Errorf("%s: Last = %+v at %v, want %+v at %v", what, r.Last, r.LastAt, o, at)
	}
}

// pendingPages: Pending returns at most limit waiting records, skipping
// terminal ones without counting them, so that paging by the last Seq
// reads every waiting record once; a limit below 1 is ErrBadArgument.
func pendingPages(e *env) {
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5", "e6"} {
		e.enqueue("s", id, "p-"+id)
	}
	e.update("s", "e2", func(r *machine.Record) { r.State, r.Attempts = machine.Delivered, 1 })
	e.update("s", "e3", func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	l := e.acquire("s", "w")
	var pages [][]string
	for after := uint64(0); ; {
		page := e.pendingPage(l, after, 2)
		var ids []string
		for _, r := range page {
			ids = append(ids, r.ID)
			after = r.Seq
		}
		pages = append(pages, ids)
		if len(page) < 2 {
			break
		}
	}
	want := [][]string{{"e1", "e4"}, {"e5", "e6"}, nil}
	if diff := cmp.Diff(want, pages, diffOpts...); diff != "" {
		e.t.Errorf("pages of 2 (-want +got):\n%s", diff)
	}
	if got := e.pendingPage(l, 0, 1); len(got) != 1 || got[0].ID != "e1" {
		e.t.Errorf("Pending limit 1 = %v, want e1 alone", got)
	}
	for _, limit := range []int{0, -1} {
		_, err := e.s.Pending(e.ctx, l, 0, limit)
		e.wantErr("Pending with limit below 1", err, store.ErrBadArgument)
	}
}

// deadLettersPages: DeadLetters returns at most limit dead records above
// after, in Seq order, skipping the living; bad arguments are refused.
func deadLettersPages(e *env) {
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		e.enqueue("s", id, "p-"+id)
		if id != "e2" {
			e.update("s", id, func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
		}
	}
	ids := func(recs []store.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, c := range []struct {
		after uint64
		limit int
		want  []string
	}{
		{0, 2, []string{"e1", "e3"}},
		{3, 2, []string{"e4"}},
		{1, 1, []string{"e3"}},
		{4, 10, nil},
	} {
		got, err := e.s.DeadLetters(e.ctx, "s", c.after, c.limit)
		if err != nil {
			e.t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, ids(got), diffOpts...); diff != "" {
			e.t.Errorf("DeadLetters after %d limit %d (-want +got):\n%s", c.after, c.limit, diff)
		}
	}
	_, err := e.s.DeadLetters(e.ctx, "s", 0, 0)
	e.wantErr("DeadLetters limit 0", err, store.ErrBadArgument)
	_, err = e.s.DeadLetters(e.ctx, "", 0, 10)
	e.wantErr("DeadLetters of an empty stream name", err, store.ErrBadArgument)
}

// replayFreshBudget: replaying a dead letter makes it pending with no
// attempts, no reason and no last outcome, due now, MaxAge counting from
// now; it records who, when, under which token and what ended; it fences
// off the owner who held the stream; the stream is claimable at once and
// the next owner rebuilds with the replayed record; a second replay is
// counted too.
func replayFreshBudget(e *env) {
	e.enqueue("s", "e1", "p1")
	e.enqueue("s", "e2", "p2")
	died := store.Outcome{Attempt: 1, Status: 410, Detail: "gone"}
	e.update("s", "e1", func(r *machine.Record) { r.Attempts = 1 })
	l := e.acquire("s", "w1")
	e.saveUpdates(l, up(e.get("e1"), machine.Dead, 1, e.get("e1").NextAt, machine.Rejected, &died))
	dead := e.get("e1")
	e.clock.Advance(time.Second) // w1's lease is still valid
	at := e.clock.Now()

	got, err := e.s.Replay(e.ctx, "e1", "alice")
	if err != nil {
		e.t.Fatalf("Replay: %v", err)
	}
	if len(got.History) != 1 {
		e.t.Fatalf("History after a replay = %+v, want one action", got.History)
	}
	tok := got.History[0].Token
	if tok <= l.Token {
		e.t.Errorf("replay token = %d, want above the owner's %d", tok, l.Token)
	}
	want := store.Record{
		Event:    dead.Event,
		Delivery: store.Delivery{State: machine.Pending, NextAt: at},
		History:  []store.Action{{Kind: store.Replayed, By: "alice", At: at, Token: tok, Attempts: 1, Reason: machine.Rejected, Last: died}},
	}
	if diff := cmp.Diff(want, got, diffOpts...); diff != "" {
		e.t.Errorf("Replay returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.get("e1"), diffOpts...); diff != "" {
		e.t.Errorf("Get after Replay (-want +got):\n%s", diff)
	}
	if got.Replays() != 1 || !got.BudgetFrom().Equal(at) {
		e.t.Errorf("Replays, BudgetFrom = %d, %v; want 1, %v", got.Replays(), got.BudgetFrom(), at)
	}
	e.refusedStale("the owner's lease after a replay", l, e.get("e2"))
	// The refusal names the replay, so that the owner reports an
	// operator's action, not a fault.
	if _, err := e.s.Renew(e.ctx, l, time.Hour); !errors.Is(err, store.ErrReplayed) {
		e.t.Errorf("Renew of the owner's lease after a replay: %v, want one wrapping store.ErrReplayed", err)
	}

	claimed := e.claim("w2", 10)
	if len(claimed) != 1 || claimed[0].Token <= tok {
		e.t.Fatalf("ClaimDue after a replay = %+v, want s with a token above %d", claimed, tok)
	}
	m := e.pending(claimed[0], 0)
	wantM := []machine.Record{got.Machine(), e.mrec("e2")}
	if diff := cmp.Diff(wantM, m); diff != "" {
		e.t.Errorf("the next owner's Pending after a replay (-want +got):\n%s", diff)
	}
	if !m[0].AcceptedAt.Equal(at) {
		e.t.Errorf("the machine's AcceptedAt of the replayed record = %v, want the replay's %v", m[0].AcceptedAt, at)
	}

	// Spend the new budget, die again, replay again.
	r := e.get("e1")
	e.saveUpdates(claimed[0], up(r, machine.Pending, 1, at, 0, nil))
	e.saveUpdates(claimed[0], up(r, machine.Dead, 1, at, machine.Exhausted, nil))
	e.clock.Advance(time.Minute)
	again, err := e.s.Replay(e.ctx, "e1", "bob")
	if err != nil {
		e.t.Fatalf("second Replay: %v", err)
	}
	if again.Replays() != 2 || len(again.History) != 2 || again.History[1].By != "bob" ||
		again.History[1].Reason != machine.Exhausted || again.History[1].Token <= claimed[0].Token {
		e.t.Errorf("History after a second replay = %+v, want alice's then bob's (exhausted, a newer token)", again.History)
	}
	if !again.BudgetFrom().Equal(e.clock.Now()) {
		e.t.Errorf("BudgetFrom after the second replay = %v, want %v", again.BudgetFrom(), e.clock.Now())
	}
}

// operatorRefused: Replay and Discard act on undiscarded dead letters
// only; anything else is refused and changes nothing: no record, no
// lease revoked.
func operatorRefused(e *env) {
	for _, id := range []string{"p1", "d1", "x1", "x2"} {
		e.enqueue("s", id, "p")
	}
	e.update("s", "d1", func(r *machine.Record) { r.State, r.Attempts = machine.Delivered, 1 })
	e.update("s", "x1", func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	e.update("s", "x2", func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	if _, err := e.s.Discard(e.ctx, "x2", "op"); err != nil {
		e.t.Fatal(err)
	}
	l := e.acquire("s", "w")
	before := e.snapshot("p1", "d1", "x1", "x2")
	for _, op := range []struct {
		name string
		call func(id, by string) (store.Record, error)
	}{
		{"Replay", func(id, by string) (store.Record, error) { return e.s.Replay(e.ctx, id, by) }},
		{"Discard", func(id, by string) (store.Record, error) { return e.s.Discard(e.ctx, id, by) }},
	} {
		for _, c := range []struct {
			id, by string
			want   error
		}{
			{"p1", "op", store.ErrInvalidWrite},
			{"d1", "op", store.ErrInvalidWrite},
			{"x2", "op", store.ErrInvalidWrite},
			{"nope", "op", store.ErrNotFound},
			{"x1", "", store.ErrBadArgument},
			{"", "op", store.ErrBadArgument},
		} {
			_, err := op.call(c.id, c.by)
			e.wantErr(op.name+"("+c.id+", "+c.by+")", err, c.want)
		}
	}
	e.unchanged("refused operator actions", before)
	e.leaseValid("the owner's lease after refused operator actions", l)
}

// discardSettles: a discarded dead letter stays dead and listed, is
// settled at the store's now with the action in its history, and takes
// no lease from the stream's owner.
func discardSettles(e *env) {
	e.enqueue("s", "x1", "p")
	e.update("s", "x1", func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	l := e.acquire("s", "w")
	dead := e.get("x1")
	e.clock.Advance(time.Second)
	at := e.clock.Now()
	got, err := e.s.Discard(e.ctx, "x1", "carol")
	if err != nil {
		e.t.Fatal(err)
	}
	want := dead
	want.SettledAt = at
	want.History = []store.Action{{Kind: store.Discarded, By: "carol", At: at, Reason: machine.Expired}}
	if diff := cmp.Diff(want, got, diffOpts...); diff != "" {
		e.t.Errorf("Discard returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]store.Record{want}, e.deadLetters("s"), diffOpts...); diff != "" {
		e.t.Errorf("DeadLetters after Discard (-want +got):\n%s", diff)
	}
	e.leaseValid("the owner's lease after a discard", l)
}

// retention: DeleteSettled deletes delivered records and discarded dead
// letters once their SettledAt is retention old (not a tick before),
// oldest first, at most limit; it never deletes an undiscarded dead letter
// or a waiting record; a deleted ID is unknown, and enqueued again it is
// a new event with a Seq never used before.
func retention(e *env) {
	for _, id := range []string{"d1", "d2", "x1", "x2", "p1"} {
		e.enqueue("s", id, "p")
	}
	const keep = time.Hour
	e.update("s", "d1", func(r *machine.Record) { r.State, r.Attempts = machine.Delivered, 1 })
	t0 := e.clock.Now()
	e.clock.Advance(time.Minute)
	e.update("s", "d2", func(r *machine.Record) { r.State, r.Attempts = machine.Delivered, 1 })
	e.update("s", "x1", func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	e.update("s", "x2", func(r *machine.Record) { r.State, r.Reason = machine.Dead, machine.Expired })
	e.clock.Advance(time.Minute)
	if _, err := e.s.Discard(e.ctx, "x2", "op"); err != nil {
		e.t.Fatal(err)
	}

	e.clock.Advance(t0.Add(keep - tick).Sub(e.clock.Now()))
	e.wantDeleted("a tick before d1 is retention old", keep, 10, 0)
	e.clock.Advance(tick)
	e.wantDeleted("when d1 is exactly retention old", keep, 10, 1)
	e.wantGone("d1")
	e.clock.Advance(10 * time.Minute)
	e.wantDeleted("limit 1, oldest first", keep, 1, 1)
	e.wantGone("d2")
	e.wantDeleted("every settled record", keep, 10, 1)
	e.wantGone("x2")
	e.clock.Advance(365 * 24 * time.Hour)
	e.wantDeleted("a year on", keep, 10, 0)
	e.snapshot("x1", "p1") // still there

	if got := e.enqueue("s", "d1", "again"); got.Seq != 6 {
		e.t.Errorf("Seq of a deleted ID enqueued again = %d, want 6 (a new event; no Seq reused)", got.Seq)
	}
	for _, c := range []struct {
		ret   time.Duration
		limit int
	}{{0, 1}, {-time.Hour, 1}, {time.Hour, 0}} {
		_, err := e.s.DeleteSettled(e.ctx, c.ret, c.limit)
		e.wantErr("DeleteSettled with a bad argument", err, store.ErrBadArgument)
	}
}

func (e *env) wantDeleted(what string, keep time.Duration, limit, want int) {
	e.t.Helper()
	n, err := e.s.DeleteSettled(e.ctx, keep, limit)
	if err != nil || n != want {
		e.t.Errorf("DeleteSettled %s = %d, %v; want %d", what, n, err, want)
	}
}

func (e *env) wantGone(ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		_, err := e.s.Get(e.ctx, id)
		e.wantErr("Get("+id+") after retention", err, store.ErrNotFound)
	}
}

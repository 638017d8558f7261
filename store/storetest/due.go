package storetest

import (
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// The due instant (store.Store.ClaimDue, ReleaseUntil): ClaimDue grants
// the earliest due stream first, whatever the names, and a stream released
// until an instant is not due before it.

// claimEarliestDueFirst: streams enqueued one after another are granted
// oldest first, though their names run the other way; a retry counts
// from its NextAt, and streams due at the same instant go by name.
func claimEarliestDueFirst(e *env) {
	e.enqueue("z", "z1", "p")
	e.clock.Advance(time.Second)
	e.enqueue("y", "y1", "p")
	e.enqueue("x", "x1", "p") // due at the same instant as y
	e.clock.Advance(time.Second)
	e.enqueue("w", "w1", "p")
	// v is older than every other, but in retry until 1.5 s after z.
	e.enqueue("v", "v1", "p")
	e.update("v", "v1", func(r *machine.Record) {
		r.State, r.Attempts, r.NextAt = machine.Retry, 1, epoch.Add(1500*time.Millisecond)
	})
	e.clock.Advance(time.Second)
	want := [][]string{{"z", "x"}, {"y", "v"}, {"w"}, nil}
	for i, w := range want {
		if diff := cmp.Diff(w, streamsOf(e.claim("c", 2)), diffOpts...); diff != "" {
			e.t.Errorf("ClaimDue max 2, call %d (-want +got):\n%s", i+1, diff)
		}
	}
}

// claimDueKeptBySave: a Save that puts a stream's only record in retry
// moves the stream's due instant to the retry's NextAt, and a Save that
// settles it leaves the stream never due.
func claimDueKeptBySave(e *env) {
	e.enqueue("a", "a1", "p")
	e.enqueue("b", "b1", "p")
	l := e.acquire("a", "w")
	r := e.mrec("a1")
	r.Attempts = 1
	e.save(l, r)
	r.State, r.NextAt = machine.Retry, epoch.Add(time.Minute)
	e.save(l, r)
	e.release(l)
	e.clock.Advance(time.Minute - tick)
	if diff := cmp.Diff([]string{"b"}, streamsOf(e.claim("c", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue before a's retry is due (-want +got):\n%s", diff)
	}
	e.clock.Advance(tick)
	got := e.claim("c", 10)
	if diff := cmp.Diff([]string{"a"}, streamsOf(got), diffOpts...); diff != "" {
		e.t.Fatalf("ClaimDue when a's retry is due (-want +got):\n%s", diff)
	}
	r.Attempts++
	e.save(got[0], r)
	r.State = machine.Delivered
	e.save(got[0], r)
	e.release(got[0])
	e.clock.Advance(time.Hour)
	if got := streamsOf(e.claim("c", 10)); len(got) != 1 || got[0] != "b" {
		e.t.Errorf("ClaimDue after a settled = %v, want only b, whose lease ran out", got)
	}
}

// claimDueKeptByUnreleasedSave: a Save moves the due instant itself,
// not the Release after it: a stream whose lease runs out with its only
// record in retry an hour away is not granted before the retry is due,
// and is granted at it.
func claimDueKeptByUnreleasedSave(e *env) {
	e.enqueue("a", "a1", "p")
	l := e.acquire("a", "w")
	r := e.mrec("a1")
	r.Attempts = 1
	e.save(l, r)
	r.State, r.NextAt = machine.Retry, e.clock.Now().Add(time.Hour)
	e.save(l, r)
	e.clock.Advance(ttl + tick) // the lease ran out, never released
	if got := streamsOf(e.claim("c", 10)); len(got) != 0 {
		e.t.Errorf("ClaimDue with a's retry an hour away and its lease run out = %v, want none", got)
	}
	e.clock.Advance(time.Hour)
	if diff := cmp.Diff([]string{"a"}, streamsOf(e.claim("c", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue when a's retry is due (-want +got):\n%s", diff)
	}
}

// releaseUntilHolds: a stream released until an instant is not granted
// before it, not even when an event is enqueued meanwhile, and is granted
// at it; Acquire takes it at once all the same; an until already past is
// a plain release; a stale lease is refused and holds nothing.
func releaseUntilHolds(e *env) {
	e.enqueue("s", "s1", "p")
	e.enqueue("t", "t1", "p")
	l := e.acquire("s", "w")
	until := epoch.Add(time.Minute)
	if err := e.s.ReleaseUntil(e.ctx, l, until); err != nil {
		e.t.Fatalf("ReleaseUntil: %v", err)
	}
	e.wantErr("ReleaseUntil again", e.s.ReleaseUntil(e.ctx, l, until), store.ErrStaleLease)
	e.wantErr("Renew after ReleaseUntil", func() error { _, err := e.s.Renew(e.ctx, l, ttl); return err }(), store.ErrStaleLease)
	e.enqueue("s", "s2", "p")
	e.clock.Advance(time.Minute - tick)
	if diff := cmp.Diff([]string{"t"}, streamsOf(e.claim("c", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue a tick before until (-want +got):\n%s", diff)
	}
	e.clock.Advance(tick)
	if diff := cmp.Diff([]string{"s"}, streamsOf(e.claim("c", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue at until (-want +got):\n%s", diff)
	}

	e.enqueue("u", "u1", "p")
	l = e.acquire("u", "w")
	if err := e.s.ReleaseUntil(e.ctx, l, epoch.Add(time.Hour)); err != nil {
		e.t.Fatalf("ReleaseUntil: %v", err)
	}
	if a, err := e.s.Acquire(e.ctx, "u", "w2", ttl); err != nil {
		e.t.Errorf("Acquire of a held-off stream: %v, want a grant", err)
	} else if err := e.s.ReleaseUntil(e.ctx, a, e.clock.Now().Add(-time.Hour)); err != nil {
		e.t.Errorf("ReleaseUntil in the past: %v", err)
	}
	if diff := cmp.Diff([]string{"u"}, streamsOf(e.claim("c", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue after a release until the past (-want +got):\n%s", diff)
	}
}

// releaseUntilLiftedByReplay: a replay makes its record due at once,
// whatever hold the stream's last release set.
func releaseUntilLiftedByReplay(e *env) {
	e.enqueue("s", "s1", "p")
	e.update("s", "s1", func(r *machine.Record) {
		r.State, r.Attempts, r.Reason = machine.Dead, 1, machine.Rejected
	})
	l := e.acquire("s", "w")
	if err := e.s.ReleaseUntil(e.ctx, l, epoch.Add(time.Hour)); err != nil {
		e.t.Fatalf("ReleaseUntil: %v", err)
	}
	if got := e.claim("c", 10); len(got) != 0 {
		e.t.Errorf("ClaimDue of a stream with only a dead letter = %v, want none", streamsOf(got))
	}
	if _, err := e.s.Replay(e.ctx, "s1", "op"); err != nil {
		e.t.Fatalf("Replay: %v", err)
	}
	if diff := cmp.Diff([]string{"s"}, streamsOf(e.claim("c", 10)), diffOpts...); diff != "" {
		e.t.Errorf("ClaimDue after the replay (-want +got):\n%s", diff)
	}
}

package storetest

import (
	"fmt"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// refusedStale fails the check unless every lease-checked method refuses
// l with ErrStaleLease, an empty Save included: the lease is checked
// whether or not there is a record to write. The Save it tries would be a
// valid next attempt of rec under a valid lease.
func (e *env) refusedStale(what string, l store.Lease, rec store.Record) {
	e.t.Helper()
	next := up(rec, rec.State, rec.Attempts+1, rec.NextAt, rec.Reason, nil)
	e.wantErr(what+": Save", e.s.Save(e.ctx, l, []store.Update{next}), store.ErrStaleLease)
	e.wantErr(what+": empty Save", e.s.Save(e.ctx, l, nil), store.ErrStaleLease)
	_, err := e.s.Renew(e.ctx, l, time.Hour)
	e.wantErr(what+": Renew", err, store.ErrStaleLease)
	_, err = e.s.Pending(e.ctx, l, 0, 10)
	e.wantErr(what+": Pending", err, store.ErrStaleLease)
	e.wantErr(what+": Release", e.s.Release(e.ctx, l), store.ErrStaleLease)
}

// fencingForgedToken: a lease whose token is not the stream's current one
// (the previous token, or one above it) is refused by Save, Renew, Pending
// and Release, and none of them changes a record or the real lease.
func fencingForgedToken(e *env) {
	e.enqueue("s", "e1", "p")
	e.release(e.acquire("s", "w0"))
	l := e.acquire("s", "w1")
	before := e.snapshot("e1")
	for _, token := range []uint64{l.Token - 1, l.Token + 1} {
		forged := l
		forged.Token = token
		e.refusedStale(fmt.Sprintf("token %d (current %d)", token, l.Token), forged, before["e1"])
	}
	e.unchanged("calls with a forged token", before)
	e.leaseValid("the real lease after forged calls", l)
}

// fencingExpiredLease: once a lease expires its owner can neither write,
// renew, read nor release, before or after another owner takes the stream
// with a larger token; the new owner's writes go through.
func fencingExpiredLease(e *env) {
	e.enqueue("s", "e1", "p")
	old := e.acquire("s", "w1")
	rec := e.pending(old, 0)[0]
	rec.Attempts = 1
	e.save(old, rec)
	before := e.snapshot("e1")

	e.clock.Advance(ttl)
	e.refusedStale("expired lease, stream free", old, before["e1"])
	e.unchanged("an expired owner's calls", before)

	l := e.acquire("s", "w2")
	if l.Token <= old.Token {
		e.t.Errorf("token of the next owner = %d, want above %d", l.Token, old.Token)
	}
	e.refusedStale("expired lease, stream taken", old, before["e1"])
	e.unchanged("an expired owner's calls", before)
	e.leaseValid("the new owner's lease after the old owner's calls", l)

	next := e.pending(l, 0)[0]
	next.Attempts = 2
	e.save(l, next)
	if got := e.get("e1").Attempts; got != 2 {
		e.t.Errorf("attempts after the new owner's save = %d, want 2", got)
	}
}

// renewExtendsKeepsToken: Renew keeps the token, extends to now+ttl, never
// shortens, touches no record, and fails once the lease has expired.
func renewExtendsKeepsToken(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w1")
	rec := e.pending(l, 0)[0]
	rec.Attempts = 1
	e.save(l, rec)
	before := e.snapshot("e1")

	e.clock.Advance(4 * time.Second)
	steps := []struct {
		name string
		ttl  time.Duration
		want time.Time
	}{
		{"extend", ttl, epoch.Add(4*time.Second + ttl)},
		{"tiny ttl leaves Expires", time.Millisecond, epoch.Add(4*time.Second + ttl)},
		{"shorter ttl leaves Expires", ttl / 2, epoch.Add(4*time.Second + ttl)},
		{"extend again", 2 * ttl, epoch.Add(4*time.Second + 2*ttl)},
	}
	for _, s := range steps {
		got := e.renew(l, s.ttl)
		want := store.Lease{Stream: "s", Owner: "w1", Token: l.Token, Expires: s.want}
		if diff := cmp.Diff(want, got); diff != "" {
			e.t.Errorf("Renew %s (-want +got):\n%s", s.name, diff)
		}
	}
	e.unchanged("Renew", before)

	e.clock.Advance(2*ttl - tick)
	e.leaseValid("a tick before the renewed expiry", store.Lease{Stream: "s", Owner: "w1", Token: l.Token, Expires: epoch.Add(4*time.Second + 2*ttl)})
	e.clock.Advance(tick)
	_, err := e.s.Renew(e.ctx, l, ttl)
	e.wantErr("Renew at the renewed expiry", err, store.ErrStaleLease)
}

// releaseFreesStream: after Release another owner takes the stream at
// once, by Acquire or by ClaimDue, and the released lease is stale.
func releaseFreesStream(e *env) {
	e.enqueue("a", "a1", "p")
	e.enqueue("b", "b1", "p")
	la := e.acquire("a", "w1")
	lb := e.acquire("b", "w1")
	e.release(la)
	e.release(lb)

	next := e.acquire("a", "w2")
	if next.Token <= lb.Token {
		e.t.Errorf("token after release = %d, want above %d", next.Token, lb.Token)
	}
	if diff := cmp.Diff([]string{"b"}, streamsOf(e.claim("w3", 10)), diffOpts...); diff != "" {
		e.t.Errorf("claimed after release (-want +got):\n%s", diff)
	}
	before := e.snapshot("a1")
	e.refusedStale("released lease", la, before["a1"])
	e.unchanged("a released owner's calls", before)
	e.leaseValid("the next owner's lease", next)
}

// pendingOrderAndAfter: Pending returns the non-terminal records of the
// stream with Seq above after, in Seq order, and nothing of other streams.
func pendingOrderAndAfter(e *env) {
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		e.enqueue("s", id, "p-"+id)
	}
	e.enqueue("t", "f1", "p")
	e.update("s", "e2", func(r *machine.Record) { r.State, r.Attempts = machine.Delivered, 1 })
	e.update("s", "e3", func(r *machine.Record) { r.State, r.Attempts = machine.Parked, 1 })
	l := e.acquire("s", "w")
	e1, e3, e4 := e.mrec("e1"), e.mrec("e3"), e.mrec("e4")
	for _, c := range []struct {
		after uint64
		want  []machine.Record
	}{
		{0, []machine.Record{e1, e3, e4}},
		{1, []machine.Record{e3, e4}},
		{2, []machine.Record{e3, e4}},
		{3, []machine.Record{e4}},
		{4, nil},
		{100, nil},
	} {
		if diff := cmp.Diff(c.want, e.pending(l, c.after), diffOpts...); diff != "" {
			e.t.Errorf("Pending after %d (-want +got):\n%s", c.after, diff)
		}
	}
}

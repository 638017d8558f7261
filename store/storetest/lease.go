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

// leaseAcquireGrants: Acquire grants the named owner a lease of ttl by the
// store's clock, with or without due work on the stream.
func leaseAcquireGrants(e *env) {
	e.clock.Advance(time.Minute)
	l := e.acquire("empty", "w1")
	if l.Token == 0 {
		e.t.Errorf("Acquire token = 0, want a positive token")
	}
	want := store.Lease{Stream: "empty", Owner: "w1", Token: l.Token, Expires: epoch.Add(time.Minute + ttl)}
	if diff := cmp.Diff(want, l); diff != "" {
		e.t.Errorf("Acquire (-want +got):\n%s", diff)
	}
}

// leaseHeldRefusesAcquire: while a lease is valid, Acquire fails with
// ErrLeaseHeld for anyone, its holder included; at its expiry (now ==
// Expires) it is no longer valid and a new owner gets a larger token.
func leaseHeldRefusesAcquire(e *env) {
	e.enqueue("s", "e1", "p")
	l := e.acquire("s", "w1")
	for _, owner := range []string{"w2", "w1"} {
		_, err := e.s.Acquire(e.ctx, "s", owner, ttl)
		e.wantErr(fmt.Sprintf("Acquire by %s while w1 holds the stream", owner), err, store.ErrLeaseHeld)
	}
	e.clock.Advance(ttl - tick)
	_, err := e.s.Acquire(e.ctx, "s", "w2", ttl)
	e.wantErr("Acquire by w2 a tick before w1's lease expires", err, store.ErrLeaseHeld)
	e.clock.Advance(tick)
	l2 := e.acquire("s", "w2")
	if l2.Token <= l.Token {
		e.t.Errorf("token after expiry = %d, want above %d", l2.Token, l.Token)
	}
}

// leaseTokensIncrease: every grant, by Acquire or ClaimDue, on any stream,
// carries a token above every earlier one.
func leaseTokensIncrease(e *env) {
	e.enqueue("a", "e1", "p")
	e.enqueue("b", "e2", "p")
	var tokens []uint64
	l := e.acquire("a", "w1")
	tokens = append(tokens, l.Token)
	tokens = append(tokens, e.acquire("c", "w1").Token)
	for _, cl := range e.claim("w2", 10) {
		tokens = append(tokens, cl.Token)
	}
	e.release(l)
	tokens = append(tokens, e.acquire("a", "w3").Token)
	if len(tokens) != 4 {
		e.t.Fatalf("granted %d leases, want 4 (a, c, b by ClaimDue, a again)", len(tokens))
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			e.t.Errorf("tokens in grant order = %v, want strictly increasing", tokens)
			break
		}
	}
}

// leaseBadArguments: a non-positive ttl or max, or an empty stream, is
// ErrBadArgument and grants nothing.
func leaseBadArguments(e *env) {
	e.enqueue("s", "e1", "p")
	calls := []struct {
		name string
		call func() error
	}{
		{"Acquire ttl 0", func() error { _, err := e.s.Acquire(e.ctx, "s", "w", 0); return err }},
		{"Acquire ttl -1s", func() error { _, err := e.s.Acquire(e.ctx, "s", "w", -time.Second); return err }},
		{"Acquire empty stream", func() error { _, err := e.s.Acquire(e.ctx, "", "w", ttl); return err }},
		{"ClaimDue ttl 0", func() error { _, err := e.s.ClaimDue(e.ctx, "w", 0, 1); return err }},
		{"ClaimDue max 0", func() error { _, err := e.s.ClaimDue(e.ctx, "w", ttl, 0); return err }},
		{"ClaimDue max -1", func() error { _, err := e.s.ClaimDue(e.ctx, "w", ttl, -1); return err }},
	}
	for _, c := range calls {
		e.wantErr(c.name, c.call(), store.ErrBadArgument)
	}
	l := e.acquire("s", "w2")
	_, err := e.s.Renew(e.ctx, l, 0)
	e.wantErr("Renew ttl 0", err, store.ErrBadArgument)
	e.leaseValid("after Renew ttl 0", l)
}

// leaseAcquireConcurrent: of many owners calling Acquire on one stream at
// once, exactly one wins; every other gets ErrLeaseHeld.
func leaseAcquireConcurrent(e *env) {
	const n = 32
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = e.s.Acquire(e.ctx, "s", fmt.Sprintf("w%d", i), ttl)
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrLeaseHeld):
			e.t.Errorf("Acquire by w%d: error = %v, want nil or %v", i, err, store.ErrLeaseHeld)
		}
	}
	if won != 1 {
		e.t.Errorf("%d of %d concurrent Acquire calls won the stream, want exactly 1", won, n)
	}
}

// claimConcurrent: of many owners calling ClaimDue at once, each due stream
// goes to exactly one, and every grant has its own token.
func claimConcurrent(e *env) {
	const n, streams = 32, 8
	var want []string
	for i := range streams {
		name := fmt.Sprintf("s%d", i)
		e.enqueue(name, "e-"+name, "p")
		want = append(want, name)
	}
	got := make([][]store.Lease, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = e.s.ClaimDue(e.ctx, fmt.Sprintf("w%d", i), ttl, 3)
		})
	}
	close(start)
	wg.Wait()
	claims := map[string]int{}
	tokens := map[uint64]bool{}
	for i := range n {
		if errs[i] != nil {
			e.t.Errorf("ClaimDue by w%d: %v", i, errs[i])
		}
		for _, l := range got[i] {
			claims[l.Stream]++
			if tokens[l.Token] {
				e.t.Errorf("token %d granted twice", l.Token)
			}
			tokens[l.Token] = true
			if want := fmt.Sprintf("w%d", i); l.Owner != want {
				e.t.Errorf("lease on %s returned to %s names owner %q", l.Stream, want, l.Owner)
			}
		}
	}
	wantClaims := map[string]int{}
	for _, s := range want {
		wantClaims[s] = 1
	}
	if diff := cmp.Diff(wantClaims, claims); diff != "" {
		e.t.Errorf("claims per stream (-want +got):\n%s", diff)
	}
}

// claimOnlyDueWork: ClaimDue takes a stream only when it has due work and
// no valid lease: pending and parked records are due, a retry only once
// its NextAt has come, a stream of terminal records never.
func claimOnlyDueWork(e *env) {
	e.enqueue("a-pending", "a1", "p")
	e.enqueue("b-retry", "b1", "p")
	e.update("b-retry", "b1", func(r *machine.Record) {
		r.State, r.Attempts, r.NextAt = machine.Retry, 1, e.clock.Now().Add(5*time.Second)
	})
	e.enqueue("c-parked", "c1", "p")
	e.update("c-parked", "c1", func(r *machine.Record) {
		r.State, r.NextAt = machine.Parked, e.clock.Now().Add(time.Hour)
	})
	e.enqueue("d-terminal", "d1", "p")
	e.update("d-terminal", "d1", func(r *machine.Record) {
		r.State, r.Attempts = machine.Delivered, 1
	})
	e.enqueue("e-held", "e1", "p")
	held, err := e.s.Acquire(e.ctx, "e-held", "holder", time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}

	claimed := e.claim("w", 10)
	if diff := cmp.Diff([]string{"a-pending", "c-parked"}, streamsOf(claimed), diffOpts...); diff != "" {
		e.t.Errorf("claimed at once (-want +got):\n%s", diff)
	}
	for _, l := range claimed {
		e.release(l)
	}
	e.clock.Advance(5*time.Second - tick)
	if diff := cmp.Diff([]string{"a-pending", "c-parked"}, streamsOf(e.claim("w", 10)), diffOpts...); diff != "" {
		e.t.Errorf("claimed a tick before the retry is due (-want +got):\n%s", diff)
	}
	e.clock.Advance(tick)
	if diff := cmp.Diff([]string{"b-retry"}, streamsOf(e.claim("w", 10)), diffOpts...); diff != "" {
		e.t.Errorf("claimed when the retry is due (-want +got):\n%s", diff)
	}
	e.clock.Advance(held.Expires.Sub(e.clock.Now()))
	got := streamsOf(e.claim("w", 10))
	// In due order: a, c and e due since the start (c parked, held by
	// nothing since its release), b since its retry 5 s later.
	if diff := cmp.Diff([]string{"a-pending", "c-parked", "e-held", "b-retry"}, got, diffOpts...); diff != "" {
		e.t.Errorf("claimed once every lease expired (-want +got):\n%s", diff)
	}
}

// claimMaxAndNameOrder: ClaimDue takes at most max streams, in
// stream-name order whatever the order of enqueueing, and a lease it
// grants is like one from Acquire.
func claimMaxAndNameOrder(e *env) {
	for _, s := range []string{"s3", "s1", "s5", "s2", "s4"} {
		e.enqueue(s, "e-"+s, "p")
	}
	e.clock.Advance(time.Second)
	first := e.claim("w", 2)
	wantFirst := []store.Lease{
		{Stream: "s1", Owner: "w", Expires: epoch.Add(time.Second + ttl)},
		{Stream: "s2", Owner: "w", Expires: epoch.Add(time.Second + ttl)},
	}
	if diff := cmp.Diff(wantFirst, first, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".Token"
	}, cmp.Ignore())); diff != "" {
		e.t.Errorf("first ClaimDue max 2 (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		max  int
		want []string
	}{
		{2, []string{"s3", "s4"}},
		{2, []string{"s5"}},
		{2, nil},
	} {
		if diff := cmp.Diff(c.want, streamsOf(e.claim("w", c.max)), diffOpts...); diff != "" {
			e.t.Errorf("next ClaimDue max %d (-want +got):\n%s", c.max, diff)
		}
	}
}

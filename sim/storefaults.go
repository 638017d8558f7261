package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Store calls that fail one by one (World.Store): a call refused before
// it changed anything (store.ErrUnavailable), and a write whose reply was
// lost (store.ErrUnknown) after it was made or before. The simulator's
// store calls are synchronous: a slow call holds the world (slow.go), and
// a lost reply is what a call that outlives its caller's patience comes to.
//
// What a failed call did is logged as the store did it, not as the caller
// believes: a lost reply to a write that was made logs the grant, the
// renewal or the records persisted, so the checker judges the store's
// true content.

// callFault is what one store call meets.
type callFault uint8

const (
	callOK         callFault = iota
	callRefused              // ErrUnavailable: nothing was done
	callLostDone             // ErrUnknown: the write was made
	callLostUndone           // ErrUnknown: the write was not made
)

var callFaultNames = [...]string{callRefused: "refused", callLostDone: "reply lost after it was made", callLostUndone: "reply lost before it was made"}

// drawCall draws the fault the next store call meets; write says
// whether it writes (only a write loses its reply). Nothing is drawn
// without store faults, after FaultsEnd, or once Max were injected.
func (s *sim) drawCall(write bool) callFault {
	f := &s.w.Store
	if f.Max == 0 || s.storeFaults >= f.Max || !s.faulty() {
		return callOK
	}
	switch {
	case chance(s.rStore, f.RefuseRate):
		s.storeFaults++
		return callRefused
	case write && chance(s.rStore, f.LostReplyRate):
		s.storeFaults++
		if s.rStore.IntN(2) == 0 {
			return callLostDone
		}
		return callLostUndone
	}
	return callOK
}

// callErr is the error a caller gets for fault f on call op, noted in the
// trace: nil for callOK.
func (s *sim) callErr(n *node, f callFault, op string) error {
	switch f {
	case callRefused:
		s.note(n, opStoreCallFault, str(op), str(callFaultNames[f]))
		return fmt.Errorf("%w: %s refused by the simulator", store.ErrUnavailable, op)
	case callLostDone, callLostUndone:
		s.note(n, opStoreCallFault, str(op), str(callFaultNames[f]))
		return fmt.Errorf("%w: %s reply lost by the simulator", store.ErrUnknown, op)
	}
	return nil
}

// undone reports whether f fails the call before it reaches the store.
func (f callFault) undone() bool { return f == callRefused || f == callLostUndone }

func (ns *nodeStore) ClaimDue(ctx context.Context, owner string, ttl time.Duration, limit int) ([]store.Lease, error) {
	defer ns.s.hold(ns.s.slowCall(ns.n, "ClaimDue"))
	s := ns.s
	f := s.drawCall(true)
	if f.undone() {
		return nil, s.callErr(ns.n, f, "ClaimDue")
	}
	ls, err := ns.Store.ClaimDue(ctx, owner, ttl, limit)
	for _, l := range ls {
		s.newestToken = max(s.newestToken, l.Token)
		s.note(ns.n, opLease, str(l.Stream), unum(l.Token), instant(l.Expires))
		i := s.streamIndex(l.Stream)
		s.granted[i] = max(s.granted[i], l.Token)
		s.stats.LeaseGrants++
		s.observeIn(i, invariants.Entry{Kind: invariants.LeaseGranted, Worker: ns.n.name, Token: l.Token, Until: l.Expires, Detail: owner})
	}
	if err == nil && f == callLostDone {
		// Granted, and nobody knows: the leases run out unused.
		return nil, s.callErr(ns.n, f, "ClaimDue")
	}
	return ls, err
}

// Renew logs the renewal. Under Cluster.RenewTTLMin the lease is renewed
// a second time at once with a shorter ttl drawn in [RenewTTLMin,
// LeaseTTL], as a retried renewal might be: a store must not let it
// shorten the lease. Inside Store.RenewFailures every renewal is refused.
func (ns *nodeStore) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	defer ns.s.hold(ns.s.slowCall(ns.n, "Renew"))
	s := ns.s
	if s.inWindows(s.w.Store.RenewFailures) {
		s.coverAll(FaultRenewFailure)
		return store.Lease{}, s.callErr(ns.n, callRefused, "Renew")
	}
	f := s.drawCall(true)
	if f.undone() {
		return store.Lease{}, s.callErr(ns.n, f, "Renew")
	}
	nl, err := ns.Store.Renew(ctx, l, ttl)
	if err != nil {
		return nl, ns.fenced(err)
	}
	i, lost := s.streamIndex(l.Stream), f == callLostDone
	ns.renewed(i, nl, lost)
	if min := s.cfg.RenewTTLMin; min > 0 {
		again, err := ns.Store.Renew(ctx, nl, between(s.rLease, min, ttl))
		if err == nil {
			ns.renewed(i, again, lost)
		}
	}
	if f == callLostDone {
		return store.Lease{}, s.callErr(ns.n, f, "Renew")
	}
	return nl, nil
}

// renewed logs the renewal of lease l in stream i's log.
// renewed logs a renewal the store made; lost says its reply never
// reaches the worker.
func (ns *nodeStore) renewed(i int, l store.Lease, lost bool) {
	detail := ns.owner
	if lost {
		detail = invariants.ReplyLost
	}
	ns.s.observeIn(i, invariants.Entry{Kind: invariants.LeaseRenewed, Worker: ns.n.name, Token: l.Token, Until: l.Expires, Detail: detail})
}

// Save saves the batch. A save whose reply is lost after it was made
// logs the records it persisted, as the store holds them: the worker,
// told nothing, reports none.
func (ns *nodeStore) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	defer ns.s.hold(ns.s.slowCall(ns.n, "Save"))
	s := ns.s
	f := s.drawCall(true)
	if f.undone() {
		return s.callErr(ns.n, f, "Save")
	}
	err := ns.fenced(ns.Store.Save(ctx, l, ups))
	i := s.streamIndex(l.Stream)
	s.savedAt[i] = s.now // before a slow reply's hold: when the store wrote
	if err != nil || f == callOK {
		return err
	}
	for _, u := range ups {
		stored, err := ns.Store.Get(ctx, u.ID)
		if err != nil {
			panic(fmt.Sprintf("sim: seed %d: %s saved, then not found: %v", s.seed, u.ID, err))
		}
		rec := stored.Machine()
		s.persisted(ns.n, &rec)
		s.observeIn(i, invariants.Entry{Kind: invariants.Persisted, ID: rec.ID, Seq: rec.Seq, Worker: ns.n.name, Token: l.Token, Record: rec})
	}
	return s.callErr(ns.n, f, "Save")
}

func (ns *nodeStore) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	defer ns.s.hold(ns.s.slowCall(ns.n, "Pending"))
	if f := ns.s.drawCall(false); f != callOK {
		return nil, ns.s.callErr(ns.n, f, "Pending")
	}
	recs, err := ns.Store.Pending(ctx, l, after, limit)
	return recs, ns.fenced(err)
}

func (ns *nodeStore) Release(ctx context.Context, l store.Lease) error {
	defer ns.s.hold(ns.s.slowCall(ns.n, "Release"))
	s := ns.s
	f := s.drawCall(true)
	if f.undone() {
		return s.callErr(ns.n, f, "Release")
	}
	if err := ns.Store.Release(ctx, l); err != nil || f == callOK {
		return err
	}
	return s.callErr(ns.n, f, "Release")
}

package sim

import (
	"context"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
)

// ReleaseUntil meets the store faults a Release meets (issue 26): it may
// be refused, or its reply lost with the release made or not, and be
// slow (slow.go).
func (ns *nodeStore) ReleaseUntil(ctx context.Context, l store.Lease, until time.Time) error {
	defer ns.s.hold(ns.s.slowCall(ns.n, "ReleaseUntil"))
	s := ns.s
	f := s.drawCall(true)
	if f.undone() {
		return s.callErr(ns.n, f, "ReleaseUntil")
	}
	if err := ns.Store.ReleaseUntil(ctx, l, until); err != nil || f == callOK {
		return err
	}
	return s.callErr(ns.n, f, "ReleaseUntil")
}

// released logs a lease the store took back (Release, ReleaseUntil): the
// stream has no owner from then on, and a parked one is due at the
// instant it was released until (owner-wait).
func (s *sim) released(n *node, ev *worker.Event) {
	s.observeIn(s.streamIndex(ev.Stream), invariants.Entry{Kind: invariants.LeaseReleased, Worker: n.name, Token: ev.Token, Until: ev.Until})
}

// yieldAfter is the workers' YieldAfter: the worker's default, two
// leases, set explicitly so that the checker's bound knows it.
func yieldAfter(c Cluster) time.Duration { return 2 * c.LeaseTTL }

// ownerWait is the longest a stream with due work may wait for an owner
// beyond Slack (worker.WaitBound): the streams share the room of every
// node's MaxStreams.
func (s *sim) ownerWait() time.Duration {
	c := s.cfg
	wc := worker.Config{YieldAfter: yieldAfter(c), Poll: c.Poll}
	return worker.WaitBound(wc, s.w.Policy.AttemptTimeout, len(s.streams), s.maxStreams()*len(s.nodes))
}

// rotation is what the streams' turns for an owner add to every
// deadline: the wait bound, when the streams outnumber the workers' room
// (they rotate); nothing otherwise (a stream waits a claim poll at most,
// which Slack counts already).
func (s *sim) rotation(wait time.Duration) time.Duration {
	if len(s.streams) > s.maxStreams()*len(s.nodes) {
		return wait
	}
	return 0
}

// rotationSlack is the streams' turns for an owner (Run.Rotation) once
// the nodes are set up, zero before: a run with more busy streams than
// room must last long enough for every stream to get its turn, or its
// last events are judged unsettled (swarm seed 628000005069).
func (s *sim) rotationSlack() time.Duration {
	if len(s.runs) == 0 {
		return 0
	}
	return s.runs[0].Rotation
}

package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
	"github.com/courierlab/courier/worker/observe"
)

// The senders of a run are nodes: each runs worker.Worker, the production
// worker, on the virtual clock. The simulator decides when a node's worker
// is called (at its Next, when a reply or probe answer comes, when a
// producer notifies it), performs the sends and probes it hands out on the
// fake channel, and injects the faults around it: crashes, stalls, clock
// skew, store outages. It has no claim, renewal, adoption, save or release
// logic of its own: all of that is the worker's.

// The single sender's lease and poll: it is a cluster of one worker. A
// restart leaves its lease to expire, so the lease is short.
const (
	soloLeaseTTL = 2 * time.Second
	soloPoll     = 200 * time.Millisecond
)

// The simulator's calls never time out or get cancelled: the store's own
// failures are injected with SetUnavailable.
var bg = context.Background()

// node is one worker process.
type node struct {
	name string // w1, w2, ...
	idx  int    // its index in sim.nodes
	inc  int    // incarnation, from 1; a crash starts a new one
	skew time.Duration
	w    *worker.Worker // nil while down
	down bool

	// waking is set while the node's wake (its next call of Advance) is
	// in the queue, at wakeIdx in the heap (queue.wake).
	waking  bool
	wakeIdx int

	frozenUntil time.Duration // a stalled node does nothing before this (since Epoch)
	stalled     bool

	// inbox holds the replies that came since the last flush, in the
	// order they came (deliver).
	inbox []worker.Reply
}

// owner is the lease owner of n's current incarnation.
func (n *node) owner() string {
	name := n.name
	if name == "" {
		name = "sender"
	}
	return fmt.Sprintf("%s#%d", name, n.inc)
}

// clock is node n's reading of the virtual clock, skew included.
func (s *sim) clock(n *node) time.Time { return s.now.Add(n.skew) }

// workers is the cluster a world runs: World.Cluster, or the single
// sender as a cluster of one.
func workers(w World) Cluster {
	if w.Cluster.Workers > 0 {
		return w.Cluster
	}
	return Cluster{Workers: 1, LeaseTTL: soloLeaseTTL, Poll: soloPoll}
}

// initNodes makes the nodes and the allowances their faults need.
func (s *sim) initNodes() {
	c := s.cfg
	s.nodes = make([]*node, c.Workers)
	for i := range c.Workers {
		n := &node{idx: i, inc: 1}
		if s.w.Cluster.Workers > 0 {
			n.name = fmt.Sprintf("w%d", i+1)
		} // else "": the single sender, as the checker knows it
		if i < len(c.Skews) {
			n.skew = c.Skews[i]
		}
		s.nodes[i] = n
	}
	byAt := func(a, b Pause) int { return cmp.Compare(a.At, b.At) }
	s.pauses = slices.SortedStableFunc(slices.Values(c.Pauses), byAt)
	s.stalls = slices.SortedStableFunc(slices.Values(c.Stalls), byAt)
	// A handover costs up to a lease and two polls; a skewed worker judges
	// MaxAge and backoff by its own clock; and while crashes and stalls
	// leave no worker able to act, or the store refuses writes, nobody can
	// give an expired event up. A restart leaves its lease to expire. A
	// stalled worker acts on the clock reading it took before the stall.
	var skew, stall, ahead, down time.Duration
	// A slow store call makes a call's reading that much older, as a
	// stall does, and holds the world: each may cost a lease it outlived.
	if sc := s.w.Store.Slow; sc.on() {
		stall += sc.Max
		down += time.Duration(sc.Limit) * (sc.Max + c.LeaseTTL + 2*c.Poll + s.w.Policy.AttemptTimeout)
	}
	for i := range c.Workers {
		// A worker's offset: its skew, then every step its clock takes.
		var k, stepped, forward time.Duration
		if i < len(c.Skews) {
			k = max(c.Skews[i], -c.Skews[i])
		}
		for _, st := range c.ClockSteps {
			if st.Worker == i {
				stepped += max(st.By, -st.By)
				forward += max(st.By, 0)
			}
		}
		skew = max(skew, k+stepped)
		ahead = max(ahead, forward)
	}
	for _, f := range c.Crashes {
		down += f.For + c.LeaseTTL
	}
	for _, p := range c.Pauses {
		down += p.For
	}
	longest := time.Duration(0)
	for _, p := range c.Stalls {
		down += p.For
		longest = max(longest, p.For)
	}
	stall += longest // a stalled call may meet a slow store call too
	for _, win := range c.StoreOutages {
		down += win.To - win.From + c.Poll // nothing can be written, then a poll to notice
	}
	// A paused stream waits for its resume, then for a poll to claim it.
	for _, p := range s.w.Operator.Pauses {
		down += p.To - p.From + c.Poll
	}
	r := s.w.Restarts
	down += time.Duration(len(r.At)+r.Random+r.MaxCrashes) * (c.LeaseTTL + c.Poll)
	// A store call that fails costs at most a lease nobody uses (a claim
	// granted unknown, a release refused), a rebuild, and the attempt a
	// lost save persisted unsent; a burst of refused renewals costs the
	// stream for the burst and the lease it ran out.
	down += time.Duration(s.w.Store.Max) * (c.LeaseTTL + 2*c.Poll + s.w.Policy.AttemptTimeout)
	for _, win := range s.w.Store.RenewFailures {
		down += win.To - win.From + c.LeaseTTL + c.Poll
	}
	// A store that keeps instants coarser than the virtual clock hands a
	// rebuilt worker a NextAt up to its resolution early, as a clock that
	// much behind would.
	if st, ok := s.store.(interface{ Resolution() time.Duration }); ok {
		skew += st.Resolution()
	}
	for i := range s.runs {
		r := &s.runs[i]
		r.Slack = c.LeaseTTL + 2*c.Poll + skew + stall + down
		r.Skew = skew + stall
		// A clock stepped forward by d times an attempt out d early, as
		// a stale reading d old stamps its start d early; a worker that
		// stalls and is stepped forward too is early by both (swarm seed
		// 828450210630: 873ms stale, then 335ms ahead).
		r.Stall = stall + ahead
		r.ClockMargin = clockMargin(c)
		r.Recheck = renewEvery(c)
		r.OwnerWait = s.ownerWait()
		r.Rotation = s.rotation(r.OwnerWait)
		r.Slack += r.Rotation
		r.LivenessBound += r.Slack
	}
}

// clockMargin is the workers' ClockMargin: the worker's default, a tenth
// of the lease, set explicitly so that the checker knows it.
func clockMargin(c Cluster) time.Duration { return c.LeaseTTL / 10 }

// renewEvery is the workers' RenewEvery: the worker's default, a third of
// the lease, set explicitly so that the checker knows how soon an owner
// sees a pause (it asks Policy again at each renewal).
func renewEvery(c Cluster) time.Duration { return c.LeaseTTL / 3 }

// startNodes boots every node, its first call staggered so that the
// workers do not move in lockstep, and schedules the crashes.
func (s *sim) startNodes() {
	c := s.cfg
	for i, n := range s.nodes {
		first := c.Poll * time.Duration(i) / time.Duration(len(s.nodes))
		s.q.scheduleChore(first, func() { s.boot(n) })
	}
	for _, f := range c.Crashes {
		s.q.schedule(f.At, func() { s.crash(s.target(f.Worker), f.For, "crashed") })
	}
}

// boot starts a node's current incarnation: a new worker, owning nothing.
func (s *sim) boot(n *node) {
	c := s.cfg
	owner := n.owner()
	w, err := worker.New(worker.Config{
		Owner:       owner,
		Store:       &nodeStore{Store: s.store, s: s, n: n, owner: owner},
		Policy:      func(stream string) (machine.Config, error) { return s.policy(n, stream) },
		MaxStreams:  s.maxStreams(),
		LeaseTTL:    c.LeaseTTL,
		Poll:        c.Poll,
		IdleRelease: c.LeaseTTL,
		ClockMargin: clockMargin(c),
		RenewEvery:  renewEvery(c),
		YieldAfter:  yieldAfter(c),
		Observer:    worker.ObserverFunc(func(ev worker.Event) { s.observed(n, &ev) }),
	})
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: %s: %v", s.seed, n.name, err))
	}
	n.w = w
	s.advanceAt(n, s.clock(n))
}

// maxStreams is how many streams one worker owns at once.
func (s *sim) maxStreams() int {
	if s.cfg.MaxStreams > 0 {
		return s.cfg.MaxStreams
	}
	return len(s.streams)
}

// holds reports whether n's worker owns a stream: the first one when
// first is set, any one otherwise.
func (s *sim) holds(n *node, first bool) bool {
	if n.down || n.w == nil {
		return false
	}
	if first || len(s.streams) == 1 {
		return n.w.Owns(s.streams[0])
	}
	return n.w.Owned() > 0
}

// target resolves a WorkerFault's worker: Owner is whoever holds the first
// stream's lease.
func (s *sim) target(i int) *node {
	if i != Owner {
		return s.nodes[i]
	}
	for _, n := range s.nodes {
		if s.holds(n, true) {
			return n
		}
	}
	return s.nodes[0]
}

// reschedule sets n's next Advance at its worker's Next, unless one is set
// as early already. Advances are chores: a run whose store is settled
// does not wait for them. A node has one wake: an earlier one moves it.
func (s *sim) reschedule(n *node) {
	if n.w == nil || n.down {
		return
	}
	next := n.w.Next()
	if next.IsZero() {
		return
	}
	at := next.Sub(Epoch) - n.skew
	if at < s.elapsed {
		at = s.elapsed
	}
	if pending, ok := s.q.pendingWake(n); ok && at >= pending {
		return
	}
	s.q.wake(n, at)
}

// happen makes h happen: a node's happening only if the node is still the
// incarnation it was scheduled for.
func (s *sim) happen(h happening) {
	if h.wake {
		s.woken(h.n)
		return
	}
	if h.n != nil {
		s.forNode(h)
		return
	}
	h.do()
}

// woken is n's wake coming: a crash removes a node's wake, so n is up
// and the incarnation that scheduled it.
func (s *sim) woken(n *node) {
	if n.stalled {
		s.later(n, n.frozenUntil, func() { s.reschedule(n) })
		return
	}
	s.advance(n)
}

// advance calls n's worker's Advance. If a pause is due, the node stalls
// first: it took its clock reading, then froze, and acts on that stale
// reading when it wakes, as a process paused by a long GC or a frozen VM
// does. Its lease may have run out meanwhile: the store's fencing is all
// that stands between it and a stale write.
func (s *sim) advance(n *node) {
	at := s.clock(n)
	if p, ok := s.due(&s.stalls, n); ok {
		s.note(n, opStall, dur(p.For))
		s.coverAll(FaultStall)
		// A wake the world held late adds its lateness to the stale
		// reading: the node froze for p.For, no longer.
		s.freeze(n, p.For, func(late time.Duration) { s.advanceAt(n, at.Add(late)) })
		return
	}
	s.advanceAt(n, at)
}

// advanceAt calls n's worker's Advance at its clock reading at.
func (s *sim) advanceAt(n *node, at time.Time) {
	inc, start := n.inc, s.elapsed
	s.slowed, s.saved = false, s.saved[:0]
	fx := n.w.Advance(bg, at)
	s.called(n, inc, at.Add(s.elapsed-start), fx)
}

// deliver puts the outcome of one of n's sends or probes in n's inbox,
// as courier's loop gathers the replies that come while its worker is
// busy. The first reply into an empty inbox schedules the flush, a
// World.Driver.Gather later, for n's incarnation: a stall defers it, a
// crash drops it with the inbox (crash). At Gather 0 the flush still
// comes after what was scheduled for the same instant, so replies of one
// instant go together.
func (s *sim) deliver(n *node, r worker.Reply) {
	n.inbox = append(n.inbox, r)
	if len(n.inbox) == 1 {
		s.later(n, s.elapsed+s.w.Driver.Gather, func() { s.flush(n) })
	}
}

// flush hands n's worker every reply in its inbox, in the order they
// came, in one call.
func (s *sim) flush(n *node) {
	rs := n.inbox
	n.inbox = nil
	s.countBatch(rs)
	at, inc, start := s.clock(n), n.inc, s.elapsed
	s.slowed, s.saved = false, s.saved[:0]
	fx := n.w.DeliverAll(bg, at, rs)
	s.called(n, inc, at.Add(s.elapsed-start), fx)
}

// countBatch counts a flush of several replies, and of them those that
// answer more than one stream, in the run's Stats.
func (s *sim) countBatch(rs []worker.Reply) {
	if len(rs) < 2 {
		return
	}
	s.stats.Batches++
	s.stats.BatchedReplies += len(rs)
	s.stats.MaxBatch = max(s.stats.MaxBatch, len(rs))
	for _, r := range rs[1:] {
		if r.Stream != rs[0].Stream {
			s.stats.MixedBatches++
			return
		}
	}
}

// called follows a call of incarnation inc of n's worker that handed out
// fx: it performs them and sets the next Advance, unless the node crashed
// meanwhile. at is the node's clock reading when the call returned: the
// reading the call was made at plus what the call took (slow store calls
// hold the world), against which a send's deadline is checked, as
// courier.Service.send checks it against the clock when it sends. Under
// Restarts.CrashAfterPersistRate the single sender may crash right after
// the call, its sends persisted but never made. The calls are made by
// its callers, not through a closure passed in: a closure's call and its
// copy of the effects cost at every call of a worker.
func (s *sim) called(n *node, inc int, at time.Time, fx worker.Effects) {
	switch {
	case inc != n.inc || n.down:
		return
	case len(fx.Sends) == 0 && len(fx.Probes) == 0:
		s.reschedule(n) // all the rest would do: most calls hand nothing out
		return
	}
	r := &s.w.Restarts
	if len(fx.Sends) > 0 && s.faulty() && s.stats.Crashes < r.MaxCrashes && chance(s.rRestart, r.CrashAfterPersistRate) {
		s.stats.Crashes++
		s.coverAll(FaultCrash)
		s.crash(n, 0, "crash after persist, before sends")
		return
	}
	sends := fx.Sends[:0]
	for _, x := range fx.Sends {
		if at.Before(x.Deadline) {
			sends = append(sends, x)
		} else {
			// The worker's clock says the lease may have run out: a
			// driver must not start the send.
			s.note(n, opPastDeadline, str(x.ID), num(x.Attempt.Attempt))
		}
	}
	if len(sends) == 0 {
		s.perform(n, nil, fx.Probes)
		return
	}
	if p, ok := s.due(&s.pauses, n); ok {
		// A stall between the deadline check and the sends: the worker
		// wakes as the owner it was and sends, a zombie if its lease
		// ran out meanwhile.
		s.note(n, opPause, dur(p.For), num(len(sends)))
		for _, x := range sends {
			s.cover(FaultPause, x.ID)
		}
		sends, probes := sends, fx.Probes // only a pause's closure holds them
		s.freeze(n, p.For, func(time.Duration) { s.perform(n, sends, probes) })
		return
	}
	s.perform(n, sends, fx.Probes)
}

// perform makes the sends and probes a call of n's worker handed out, then
// sets its next Advance.
func (s *sim) perform(n *node, sends []worker.Send, probes []worker.Probe) {
	for _, x := range sends {
		s.stats.Sends++
		i := s.streamOf(x.ID)
		s.observeIn(i, invariants.Entry{Kind: invariants.Sent, ID: x.ID, Worker: n.name, Token: x.Token, Seq: x.Seq, Attempt: x.Attempt.Attempt})
		// A send under a token older than one granted before it in its
		// stream's log is a zombie's: counted here, as the log is made,
		// not by a pass over the logs (TestStatsAreTheLogs).
		if x.Token < s.granted[i] {
			s.stats.ZombieSends++
		}
		s.send(n, x)
	}
	for _, p := range probes {
		s.probe(n, p)
	}
	s.reschedule(n)
}

// later schedules fn for node n at the instant at. When it comes, a node
// that crashed since does nothing, and a stalled one does it when it wakes.
func (s *sim) later(n *node, at time.Duration, fn func()) {
	s.q.push(happening{at: at, do: fn, n: n, inc: n.inc})
}

// forNode makes h, scheduled for incarnation h.inc of node h.n (by later),
// happen.
func (s *sim) forNode(h happening) {
	n := h.n
	switch {
	case h.inc != n.inc || n.down:
		return
	case n.stalled:
		// Queued behind the stall: the interrupted call, scheduled at
		// frozenUntil first, must finish before anything else.
		h.at = n.frozenUntil
		s.q.push(h)
		return
	}
	h.do()
}

// observed turns a worker's event into trace lines and the checker's
// observations (internal/record, the mapping every recorder shares), at
// the virtual instant. Sends are observed when they leave (called), which a
// pause may delay past the worker's handing them out.
func (s *sim) observed(n *node, ev *worker.Event) {
	switch ev.Kind {
	case worker.Persisted:
		for i := range ev.Records {
			s.persisted(n, &ev.Records[i])
		}
	case worker.Sent:
		s.note(n, opSend, str(ev.ID), num(ev.Attempt), unum(ev.Seq))
		return
	case worker.Probed:
		probe, _ := strconv.ParseUint(ev.Detail, 10, 64)
		s.note(n, opProbe, unum(probe))
		s.stats.Probes++
	case worker.CircuitChanged:
		s.note(n, opCircuitTo, str(ev.Circuit.String()))
		if ev.Circuit == machine.Open {
			s.stats.CircuitOpenings++
		}
	case worker.Rebuilt:
		s.note(n, opRecovers, num(len(ev.Records)), str(ev.Circuit.String()))
	case worker.LeaseLost:
		s.note(n, opLoses, str(ev.Detail))
		s.stats.LeasesLost++
		// Given up by the worker's own clock, not refused by the store,
		// it is logged as LeaseDropped by the shared mapping below.
		s.dropped(n, ev.Stream, "lost the stream")
	case worker.LeaseReleased:
		s.note(n, opReleases)
		s.released(n, ev)
	case worker.ReplyDropped:
		s.note(n, opReplyNoOwner, str(ev.ID), num(ev.Attempt), str(ev.Outcome.Result.String()))
	case worker.StoreFailed:
		s.storeFailed(n, ev)
		if ev.Op == "Save" {
			// A failed save drops the machine (worker.saveFailed): it is
			// rebuilt from the store.
			s.dropped(n, ev.Stream, "dropped its machine after a failed save")
		}
	case worker.Faulted:
		s.note(n, opFaulted, str(ev.Err.Error()))
	}
	if ev.Stream == "" {
		// A failed ClaimDue is of no stream, and makes no entry.
		if len(observe.Worker(nil, n.name, *ev)) > 0 {
			panic(fmt.Sprintf("sim: seed %d: a worker event of no stream to log: %v", s.seed, ev.Kind))
		}
		return
	}
	i, at := s.streamIndex(ev.Stream), s.now
	if ev.Kind == worker.Persisted {
		at = s.savedFor(ev.Token) // the store wrote them then (slow.go)
	}
	s.observing = observe.Worker(s.observing[:0], n.name, *ev)
	for _, e := range s.observing {
		s.observeAt(i, e, at)
	}
}

// dropped logs that n's worker dropped stream's machine, as a restart
// does: a retry the machine scheduled, an attempt it had in flight or a
// circuit it held are no longer its. The next machine is rebuilt from the
// store (worker.Rebuilt) and judged by the recovery rules.
func (s *sim) dropped(n *node, stream, why string) {
	s.observeIn(s.streamIndex(stream), invariants.Entry{Kind: invariants.Restarted, Worker: n.name, Detail: why})
}

// storeFailed notes a store call the worker saw fail. The simulator's
// store fails only as injected (unavailable) or as the contract says
// (a stale lease, an invalid write); anything else is a bug.
func (s *sim) storeFailed(n *node, ev *worker.Event) {
	switch {
	case errors.Is(ev.Err, store.ErrInvalidWrite):
		s.note(n, opWriteRejected, str(ev.Err.Error()))
		s.observeIn(s.streamIndex(ev.Stream), invariants.Entry{Kind: invariants.WriteRejected, Worker: n.name, Token: ev.Token, Detail: ev.Err.Error()})
	case errors.Is(ev.Err, store.ErrUnavailable):
		s.note(n, opStoreRefusal, str(ev.Op))
		s.coverAll(FaultStoreRefusal)
	case errors.Is(ev.Err, store.ErrUnknown):
		s.note(n, opStoreUnknown, str(ev.Op))
		s.coverAll(FaultLostStoreReply)
	default:
		panic(fmt.Sprintf("sim: seed %d: %s %s: unexpected store error: %v", s.seed, n.name, ev.Op, ev.Err))
	}
}

// persisted notes a record the store has made durable (a worker's, or
// the store's own on an enqueue when n is nil) and keeps the run's
// bookkeeping: when the last event settled, how long the run may last.
func (s *sim) persisted(n *node, r *machine.Record) {
	s.writes++
	o := opPersist
	if n == nil {
		o = opStorePersist
	}
	s.note(n, o, record(r))
	if r.State == machine.Parked {
		s.stats.ParkedWrites++
	}
	if r.State.Terminal() {
		s.lastSettle = s.now
	}
	if s.w.MaxDuration == 0 {
		s.end = max(s.end, r.AcceptedAt.Sub(Epoch)+s.settleWithin())
	}
}

// nodeStore is the store as one node's worker sees it: the shared store,
// with its grants and renewals logged for the checker, and its refusals
// of stale leases counted. Each incarnation has its own, which holds its
// owner name, formatted once.
type nodeStore struct {
	Store
	s     *sim
	n     *node
	owner string // n.owner() of the incarnation
}

var _ store.Store = (*nodeStore)(nil)

func (ns *nodeStore) fenced(err error) error {
	// errors.Is is a call, even for the nil of nearly every store call.
	if err != nil && errors.Is(err, store.ErrStaleLease) {
		ns.s.stats.FencedWrites++
	}
	return err
}

package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// clusterStream is the one stream a cluster run delivers.
const clusterStream = "s"

// sharedStore is the store contract plus what the simulator needs to
// inject faults and read the end state.
type sharedStore interface {
	store.Store
	SetUnavailable(func() bool)
	Records(stream string) []machine.Record
}

// wholeStream is the Pending limit of the simulator's reads: it reads a
// stream's waiting records in one page.
const wholeStream = 1 << 30

// The simulator's calls never time out or get cancelled: the store's own
// failures are injected with SetUnavailable.
var bg = context.Background()

func (s *sim) initCluster() {
	c := s.w.Cluster
	s.cluster = true
	s.shared = memstore.New(func() time.Time { return s.now })
	s.shared.SetUnavailable(func() bool { return s.inWindows(c.StoreOutages) })
	for i := range c.Workers {
		w := &worker{name: fmt.Sprintf("w%d", i+1), inc: 1}
		if i < len(c.Skews) {
			w.skew = c.Skews[i]
		}
		s.workers = append(s.workers, w)
	}
	s.pauses = slices.Clone(c.Pauses)
	slices.SortStableFunc(s.pauses, func(a, b Pause) int { return cmp.Compare(a.At, b.At) })
	// A handover costs up to a lease and two polls; a skewed worker judges
	// MaxAge and backoff by its own clock; and while crashes and stalls
	// leave no worker able to act, or the store refuses writes, nobody can
	// give an expired event up.
	var skew, down time.Duration
	for _, k := range c.Skews {
		skew = max(skew, k, -k)
	}
	for _, f := range append(slices.Clone(c.Crashes), c.Pauses...) {
		down += f.For
	}
	for _, win := range c.StoreOutages {
		down += win.To - win.From + c.Poll // nothing can be written, then a poll to notice
	}
	s.run.Slack = c.LeaseTTL + 2*c.Poll + skew + down
	s.run.Skew = skew
	s.run.LivenessBound += s.run.Slack
}

// startCluster schedules every worker's first poll and the crashes.
func (s *sim) startCluster() {
	c := s.w.Cluster
	for i, w := range s.workers {
		// Stagger the first polls so the workers do not move in lockstep.
		first := c.Poll * time.Duration(i) / time.Duration(len(s.workers))
		s.schedulePoll(w, Epoch.Add(first))
	}
	for _, f := range c.Crashes {
		s.q.schedule(Epoch.Add(f.At), func() { s.crash(s.target(f.Worker), f.For) })
	}
}

// target resolves a WorkerFault's worker: Owner is whoever holds the lease.
func (s *sim) target(i int) *worker {
	if i != Owner {
		return s.workers[i]
	}
	for _, w := range s.workers {
		if w.leased && !w.down {
			return w
		}
	}
	return s.workers[0]
}

// pauseFor returns the first pause due for w now, removing it.
func (s *sim) pauseFor(w *worker) (Pause, bool) {
	for i, p := range s.pauses {
		if s.now.Before(Epoch.Add(p.At)) {
			break
		}
		if p.Worker == Owner || s.workers[p.Worker] == w {
			s.pauses = slices.Delete(s.pauses, i, i+1)
			return p, true
		}
	}
	return Pause{}, false
}

// schedulePoll schedules w's next poll, a background chore: a run whose
// store is settled does not wait for it.
func (s *sim) schedulePoll(w *worker, at time.Time) {
	inc := w.inc
	s.q.scheduleChore(at, func() {
		switch {
		case inc != w.inc || w.down:
			return // a poll of an incarnation that crashed
		case w.stalled:
			s.schedulePoll(w, w.frozenUntil)
			return
		}
		s.poll(w)
		s.schedulePoll(w, s.now.Add(s.w.Cluster.Poll))
	})
}

// poll is a worker's periodic round: claim the stream or renew its lease,
// rebuild its machine if it has none, adopt what producers enqueued, and
// hand the stream back once nothing is left to do.
func (s *sim) poll(w *worker) {
	c := s.w.Cluster
	if !w.leased {
		ls, err := s.shared.ClaimDue(bg, w.owner(), c.LeaseTTL, 1)
		if err != nil {
			s.storeRefused(w, "claim", err)
			return
		}
		if len(ls) == 0 {
			return
		}
		w.lease, w.leased = ls[0], true
		s.newestToken = max(s.newestToken, w.lease.Token)
		s.note(w, opLease, str(ls[0].Stream), unum(ls[0].Token), instant(ls[0].Expires))
		s.observe(invariants.Entry{Kind: invariants.LeaseGranted, Worker: w.name, Token: w.lease.Token, Until: w.lease.Expires, Detail: w.owner()})
	} else {
		ttl := c.LeaseTTL
		if c.RenewTTLMin > 0 {
			ttl = between(s.rLease, c.RenewTTLMin, c.LeaseTTL)
		}
		l, err := s.shared.Renew(bg, w.lease, ttl)
		switch {
		case errors.Is(err, store.ErrStaleLease):
			s.loseLease(w, "renew refused: the lease is stale")
			return
		case err != nil:
			s.storeRefused(w, "renew", err) // the lease may still be valid; go on
		default:
			w.lease = l
			s.observe(invariants.Entry{Kind: invariants.LeaseRenewed, Worker: w.name, Token: l.Token, Until: l.Expires, Detail: w.owner()})
		}
	}
	if w.m == nil {
		recs, err := s.shared.Pending(bg, w.lease, 0, wholeStream)
		if err != nil {
			s.pendingFailed(w, err)
			return
		}
		m, b, err := machine.Recover(s.machineConfig(), w.clock(s.now), plantedRecords(recs, w.clock(s.now)))
		if err != nil {
			panic(fmt.Sprintf("sim: seed %d: %s recover: %v", s.seed, w.name, err))
		}
		w.m, w.gen = m, w.gen+1
		w.tickToken++
		w.tickAt = time.Time{}
		w.lastSeq = 0
		for _, r := range recs {
			w.lastSeq = max(w.lastSeq, r.Seq)
		}
		s.note(w, opRecovers, num(len(recs)), str(m.Circuit().String()))
		s.observe(invariants.Entry{Kind: invariants.Restarted, Worker: w.name, Detail: "took over the stream"})
		s.observe(invariants.Entry{Kind: invariants.CircuitChanged, Worker: w.name, Circuit: m.Circuit()})
		s.execute(w, b)
		if w.m == nil {
			return
		}
	}
	recs, err := s.shared.Pending(bg, w.lease, w.lastSeq, wholeStream)
	if err != nil {
		s.pendingFailed(w, err)
		return
	}
	for _, r := range recs {
		if w.m == nil || w.stalled {
			return // lost the stream, or stalled, while adopting
		}
		w.lastSeq = max(w.lastSeq, r.Seq)
		s.observe(invariants.Entry{Kind: invariants.Adopted, Worker: w.name, ID: r.ID, Seq: r.Seq})
		s.step(w, machine.Adopt{At: w.clock(s.now), Record: r})
	}
	if w.m == nil || w.m.Queued() > 0 || len(w.m.InFlight()) > 0 {
		w.idleSince = time.Time{}
		return
	}
	// Idle: keep the stream for one lease, in case more comes, then hand
	// it back so any worker can claim it when it has work again.
	if w.idleSince.IsZero() {
		w.idleSince = s.now
	}
	if s.now.Sub(w.idleSince) >= c.LeaseTTL {
		if err := s.shared.Release(bg, w.lease); err != nil {
			s.storeRefused(w, "release", err)
			return
		}
		s.note(w, opReleases)
		s.dropMachine(w)
		w.leased = false
	}
}

func (s *sim) pendingFailed(w *worker, err error) {
	if errors.Is(err, store.ErrStaleLease) {
		s.loseLease(w, "read refused: the lease is stale")
		return
	}
	s.storeRefused(w, "read", err)
}

func (s *sim) storeRefused(w *worker, what string, err error) {
	if !errors.Is(err, store.ErrUnavailable) {
		panic(fmt.Sprintf("sim: seed %d: %s %s: unexpected store error: %v", s.seed, w.name, what, err))
	}
	s.note(w, opStoreRefusal, str(what))
	s.coverAll(FaultStoreRefusal)
}

// loseLease: the worker is no longer the owner. It drops its machine and
// sends nothing more; what it already sent may still land.
func (s *sim) loseLease(w *worker, why string) {
	s.note(w, opLoses, str(why))
	s.stats.FencedWrites++
	w.leased = false
	s.dropMachine(w)
}

func (s *sim) dropMachine(w *worker) {
	w.m = nil
	w.gen++
	w.tickToken++
	w.tickAt = time.Time{}
}

// executeShared carries out a batch through the shared store: the write
// is checked against the lease, and nothing else happens if it fails.
func (s *sim) executeShared(w *worker, b machine.Batch) {
	if len(b.Persist) > 0 {
		b.Persist = plantedPersist(b.Persist)
		err := s.shared.Save(bg, w.lease, store.UpdatesOf(b.Persist))
		switch {
		case errors.Is(err, store.ErrStaleLease):
			s.loseLease(w, fmt.Sprintf("write fenced off: token %d is stale", w.lease.Token))
			return
		case errors.Is(err, store.ErrInvalidWrite):
			s.note(w, opWriteRejected, str(err.Error()))
			s.observe(invariants.Entry{Kind: invariants.WriteRejected, Worker: w.name, Token: w.lease.Token, Detail: err.Error()})
			s.dropMachine(w)
			return
		case err != nil:
			// The batch is not durable, so nothing in it may be acted on:
			// drop the machine and rebuild it from the store (Batch's
			// contract) at the next poll.
			s.storeRefused(w, "write", err)
			s.dropMachine(w)
			return
		}
		s.persisted(w, b.Persist)
	}
	if len(b.Sends) == 0 {
		s.act(w, b)
		return
	}
	if p, ok := s.pauseFor(w); ok {
		if s.now.Add(p.For).Sub(Epoch) <= s.w.FaultsEnd {
			// A stall (a long GC, a frozen VM) between the write and the
			// sends: the worker wakes as the owner it was and sends.
			w.frozenUntil = s.now.Add(p.For)
			w.stalled = true
			s.note(w, opPause, dur(p.For), num(len(b.Sends)))
			for _, x := range b.Sends {
				s.cover(FaultPause, x.ID)
			}
			inc := w.inc
			s.q.schedule(w.frozenUntil, func() {
				if inc != w.inc || w.down {
					return // it crashed in its stall: the sends died with it
				}
				w.stalled = false
				s.note(w, opWakes)
				s.sendAll(w, b.Sends)
				s.act(w, b)
			})
			return
		}
	}
	s.sendAll(w, b.Sends)
	s.act(w, b)
}

// crash kills worker w: memory gone, lease abandoned to expire. It comes
// back after down as a new incarnation.
func (s *sim) crash(w *worker, down time.Duration) {
	if w.down {
		s.note(w, opAlreadyDown)
		return
	}
	s.stats.Restarts++
	s.coverAll(FaultWorkerCrash)
	s.note(w, opCrash, dur(down))
	s.observe(invariants.Entry{Kind: invariants.Restarted, Worker: w.name, Detail: "crashed"})
	w.down = true
	w.leased = false
	w.frozenUntil, w.stalled = time.Time{}, false
	s.dropMachine(w)
	s.q.schedule(s.now.Add(down), func() {
		w.down = false
		w.inc++
		s.note(w, opComesBack, str(w.name), num(w.inc))
		s.schedulePoll(w, s.now)
	})
}

// enqueue is a producer's offer in cluster mode: straight into the store,
// which acknowledges it once durable.
func (s *sim) enqueue(id string, payload []byte) {
	stored, created, err := s.shared.Enqueue(bg, clusterStream, id, payload)
	rec := stored.Machine()
	if err != nil {
		if !errors.Is(err, store.ErrUnavailable) {
			panic(fmt.Sprintf("sim: seed %d: enqueue %s: %v", s.seed, id, err))
		}
		s.note(nil, opEnqueueRefused, str(id))
		s.observe(invariants.Entry{Kind: invariants.Refused, ID: id, Detail: "store unavailable"})
		s.cover(FaultStoreRefusal, id)
		return
	}
	if created {
		s.note(nil, opStorePersist, record(&rec))
		s.observe(invariants.Entry{Kind: invariants.Persisted, Worker: "store", ID: rec.ID, Seq: rec.Seq, Record: rec})
		if by := rec.AcceptedAt.Add(s.settleWithin()); s.w.MaxDuration == 0 && by.After(s.end) {
			s.end = by
		}
		s.note(nil, opStoreAck, str(rec.ID), unum(rec.Seq))
	} else {
		s.note(nil, opStoreAckDuplicate, str(rec.ID), unum(rec.Seq))
		s.stats.DuplicateAcks++
	}
	s.observe(invariants.Entry{Kind: invariants.Acked, ID: rec.ID, Seq: rec.Seq})
	s.acked[id] = true
}

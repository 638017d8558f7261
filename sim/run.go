package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// Epoch is the virtual instant every run starts at. Traces print times as
// offsets from it.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options choose what a run keeps besides its summary.
type Options struct {
	// Trace keeps every trace line in Result.Trace. The hash is computed
	// either way, from a binary encoding of the same lines (trace.go):
	// text is formatted only when it is kept.
	Trace bool
	// Logs keeps every stream's observation log in Result.Runs (and
	// Result.Run), for a timeline or a scenario's own checks. Without it
	// the checker judges each entry as it is made and no log is kept:
	// what a sweep does, at a fraction of the memory.
	Logs bool
	// Store makes the store the run's workers share; nil means memstore.
	// Another store runs the same world against a real backend (package
	// sim/sqlsim: SQLite); its trace may differ where the backend keeps
	// less than memstore does (SQLite keeps instants to the microsecond).
	Store NewStore
}

// Result is what one run produced.
type Result struct {
	Seed  uint64
	World World
	// Trace is every input, effect and fault as a stable line (only with
	// Options.Trace); Hash is the 64-bit xxHash of their binary encoding,
	// in 16 hex digits: same seed and world, same hash, on any platform.
	Trace []string
	Hash  string
	// Runs are the observation logs the checker judged, one per stream
	// (World.Streams), in stream order; Run is the first. Their Entries
	// are kept only with Options.Logs. Violations are every stream's, in
	// stream order.
	Run        invariants.Run
	Runs       []invariants.Run
	Violations []invariants.Violation
	Stats      Stats
	// OwnerWaits is every wait for an owner that owner-wait judged (one
	// per grant that ended a wait with due work, all streams), shortest
	// first: Run.OwnerWait bounds them, beyond Run.Slack.
	OwnerWaits []time.Duration
}

// Stats summarise a run. Every figure is counted from what happened.
type Stats struct {
	Offers          int // offers the producer made, resends included
	Accepted        int // distinct events acknowledged to the producer
	Applied         int // distinct events the receiver applied
	Duplicates      int // deliveries the receiver discarded as duplicates
	Fenced          int // deliveries the receiver refused as out of order
	Dead            int // events dead in the store at the end
	Lost            int // acknowledged events neither applied nor dead
	AppliedTwice    int // events the receiver applied more than once
	Sends           int // attempts sent, all events, all incarnations
	MaxSends        int // the most attempts of any one event
	Probes          int
	CircuitOpenings int
	ParkedWrites    int // records persisted in state parked, by workers or the store
	Restarts        int
	Crashes         int           // restarts that cut a batch after its persist
	DuplicateAcks   int           // acknowledgements of an offer whose ID was already accepted
	LeaseGrants     int           // leases the shared store granted (cluster)
	FencedWrites    int           // writes (saves, renewals, reads) the store refused from a stale lease (cluster)
	LeasesLost      int           // times a worker gave a stream up as lost: refused by the store, or run out by its own clock
	ZombieSends     int           // sends by a worker whose lease had been superseded (cluster)
	Batches         int           // flushes that handed a worker several replies at once (Driver.Gather)
	BatchedReplies  int           // the replies in those flushes
	MixedBatches    int           // those flushes whose replies answer more than one stream
	MaxBatch        int           // the most replies of one flush
	Drain           time.Duration // from the first offer until every event settled
	End             time.Duration // virtual time when the run stopped
	Coverage        Coverage      // which fault met which event state
}

// Run simulates world under seed. It returns an error only for an invalid
// world; violations of the guarantees are in Result.Violations.
func Run(world World, seed uint64, opt Options) (Result, error) {
	if err := world.Validate(); err != nil {
		return Result{}, err
	}
	s, err := newSim(world, seed, opt)
	if err != nil {
		return Result{}, err
	}
	if c, ok := s.store.(interface{ Close() error }); ok {
		defer c.Close()
	}
	if err := s.simulate(); err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

type sim struct {
	w    World
	seed uint64
	opt  Options
	// now is the virtual clock; elapsed is now.Sub(Epoch), the offset the
	// queue, the trace and the fault windows use.
	now     time.Time
	elapsed time.Duration
	q       queue

	cfg   Cluster // the workers: World.Cluster, or the single sender's
	store Store   // the store the workers share
	recv  *receiver
	http  *httpParts // the real channel and receiver kit (World.HTTP), or nil
	plat  *platParts // the platform's application (World.Platform), or nil

	nodes  []*node
	pauses []Pause // pauses not yet begun, by At
	stalls []Pause // stalls not yet begun, by At
	// newestToken is the newest lease token the store granted.
	newestToken uint64
	// granted is the newest token granted in each stream so far, and
	// sends counts each event's sends, by index: what result reports is
	// counted as the logs are made (perform, nodeStore.ClaimDue).
	granted []uint64
	sends   []int

	// Streams of random draws, one per part of the world.
	rProducer, rChannel, rRestart, rLease *rand.Rand
	// rStore draws the store calls' faults, rOperator the operator's
	// actions: streams of their own, so that worlds without them draw
	// everything else as they did before they existed.
	rStore, rOperator *rand.Rand
	storeFaults       int // store call faults injected so far (World.Store.Max)
	// rSlow draws the slow store calls (World.Store.Slow, slow.go);
	// slowCalls counts them, and slowed says that the worker call under
	// way met one.
	rSlow     *rand.Rand
	slowCalls int
	slowed    bool
	// saved are the Saves the store made in the worker call under way,
	// in order, each with the instant its records were persisted: a
	// slow call may have held the world past it by the time the worker
	// reports them (one worker call may save several streams' batches,
	// worker.Worker.DeliverAll).
	saved []savedAt
	// paused counts, by stream index, the operator's pauses in force
	// (World.Operator.Pauses): the stream's Policy refuses it meanwhile.
	paused []int
	// deleted holds, by event index, the record retention deleted (nil:
	// none), as the store held it.
	deleted []*machine.Record

	ids   []string // the workload's event IDs, EventID(i) at i
	acked []bool   // by event index: the store acknowledged it
	// answered holds every attempt the sender has an outcome for.
	answered   map[attemptKey]bool
	firstOffer time.Time
	lastSettle time.Time
	// writes counts the store's writes; settledAt is the count when
	// settled last looked (-1: never), and wasSettled what it saw.
	writes, settledAt int
	wasSettled        bool
	// end is when the run stops if it has not settled, as an offset from
	// Epoch: with no MaxDuration, one MaxAge, AttemptTimeout and a minute
	// after the latest acceptance (backpressure can delay acceptances),
	// plus the streams' turns for an owner when they outnumber the room
	// (Run.Rotation), by which every event must be terminal.
	end time.Duration

	// streams are the streams' names; runs their observation logs, by
	// index, each judged as it is written by its checker; steps counts
	// each log's entries (kept in runs only with Options.Logs).
	streams   []string
	streamIdx map[string]int // the index of each stream, by name
	runs      []invariants.Run
	checkers  []invariants.Checker
	steps     []int
	observing []invariants.Entry // the entries of the worker event being observed
	trace     []string           // the text of every line, with Options.Trace
	hash      *xxhash.Digest     // of the encoded lines (trace.go)
	stats     Stats
}

// newSim returns the simulator of a run, with its store and its nodes;
// an error only if the store cannot be made.
func newSim(w World, seed uint64, opt Options) (*sim, error) {
	s := &sim{
		w: w, seed: seed, opt: opt, now: Epoch,
		cfg:       workers(w),
		rProducer: stream(seed, "producer"),
		rChannel:  stream(seed, "channel"),
		rRestart:  stream(seed, "restart"),
		rLease:    stream(seed, "lease"),
		rStore:    stream(seed, "store"),
		rOperator: stream(seed, "operator"),
		rSlow:     stream(seed, "slow"),
		settledAt: -1,
		answered:  map[attemptKey]bool{},
		hash:      xxhash.New(),
	}
	mk := opt.Store
	if mk == nil {
		mk = newMemstore
	}
	st, err := mk(func() time.Time { return s.now })
	if err != nil {
		return nil, fmt.Errorf("sim: the run's store: %w", err)
	}
	s.store = st
	s.store.SetUnavailable(func() bool { return s.inWindows(s.cfg.StoreOutages) })
	s.initStreams()
	s.initPlatform()
	s.initNodes()
	s.platformBounds()
	if w.HTTP.On {
		s.http = newHTTP(s)
	}
	// The checkers start once the runs have their bounds: initNodes sets
	// the cluster's slack, skew and stall.
	for i := range s.runs {
		s.checkers[i].Begin(s.runs[i])
	}
	return s, nil
}

// settleWithin is how long after its acceptance an event must be terminal,
// plus a minute of margin for the run to show it.
func (s *sim) settleWithin() time.Duration {
	return s.w.Policy.MaxAge + s.w.Policy.AttemptTimeout + time.Minute + s.w.Store.Slow.held() + s.rotationSlack()
}

func (s *sim) faulty() bool { return s.elapsed < s.w.FaultsEnd }

// initStreams names the streams, spreads the workload over them (event i
// goes to stream i mod Streams) and starts each stream's log.
func (s *sim) initStreams() {
	w := s.w
	n := max(w.Streams, 1)
	s.streams = make([]string, n)
	s.streamIdx = make(map[string]int, n)
	s.runs = make([]invariants.Run, n)
	s.checkers = make([]invariants.Checker, n)
	s.steps = make([]int, n)
	s.ids = make([]string, w.Events)
	for i := range s.ids {
		s.ids[i] = EventID(i)
	}
	s.acked = make([]bool, w.Events)
	s.deleted = make([]*machine.Record, w.Events)
	s.sends = make([]int, w.Events)
	s.granted = make([]uint64, n)
	s.paused = make([]int, n)
	s.recv = newReceiver(w.Receiver, s.ids, n)
	poison := len(w.Receiver.Poison) + len(w.Receiver.Stubborn)
	for i := range s.runs {
		s.streams[i] = StreamName(i, n)
		s.streamIdx[s.streams[i]] = i
		r := &s.runs[i]
		r.Policy = w.Policy
		r.ReceiverFences = w.Receiver.Fence
		r.ReceiverVerdicts = true // arrive logs each delivery's verdict
		if w.FaultsEnd > 0 {
			r.HealedAt = Epoch.Add(w.FaultsEnd)
		}
		// Every stream is held to the bound of the whole workload: with
		// MaxStreams below Streams, a stream may wait while the workers'
		// slots serve the others.
		r.LivenessBound = invariants.LivenessBound(w.Policy, w.Events, poison, w.Channel.LatencyMax)
	}
}

// StreamName is the name of stream i of n: "s" when there is one.
func StreamName(i, n int) string {
	if n <= 1 {
		return "s"
	}
	return fmt.Sprintf("s%02d", i+1)
}

// streamIndex returns the index of the stream named name.
func (s *sim) streamIndex(name string) int {
	i, ok := s.streamIdx[name]
	if !ok {
		panic(fmt.Sprintf("sim: %q is not a stream of the world", name))
	}
	return i
}

// eventIndex is the index in the workload of event id: EventID(i) is
// event i.
func (s *sim) eventIndex(id string) int {
	i, ok := s.eventOf(id)
	if !ok {
		panic(fmt.Sprintf("sim: %q is not an event of the workload", id))
	}
	return i
}

// streamOf is the index of event id's stream: EventID(i) goes to stream
// i mod Streams.
func (s *sim) streamOf(id string) int { return s.eventIndex(id) % len(s.streams) }

// observe logs e in the log of its event's stream (see observeIn).
func (s *sim) observe(e invariants.Entry) { s.observeIn(s.streamOf(e.ID), e) }

// observeIn logs e in the log of stream i, at the virtual instant and
// numbered, and has the stream's checker judge it.
func (s *sim) observeIn(i int, e invariants.Entry) { s.observeAt(i, e, s.now) }

// observeAt is observeIn at the instant at, no later than now: an
// observation of what the store did before a slow reply held the world.
func (s *sim) observeAt(i int, e invariants.Entry, at time.Time) {
	e.At, e.Step = at, s.steps[i]
	s.steps[i]++
	s.checkers[i].Observe(&e)
	if s.opt.Logs {
		s.runs[i].Entries = append(s.runs[i].Entries, e)
	}
}

func (s *sim) simulate() error {
	w := s.w
	s.note(nil, opWorld, unum(s.seed), num(w.Events), str(w.Policy.Ordering.String()), dur(w.FaultsEnd))
	s.startNodes()
	s.startOperator()

	// The workload: offers at drawn instants.
	at := time.Duration(0)
	lastOffer := s.startPublishes() // a platform world publishes instead
	for i := range s.offers() {
		at += between(s.rProducer, 0, 2*w.Interarrival)
		lastOffer = at
		s.q.schedule(at, func() { s.offer(i, 1) })
		if w.Producer.SendTwice {
			again := at + between(s.rProducer, 0, w.Producer.TwiceDelay)
			s.q.schedule(again, func() { s.offer(i, 2) })
		}
	}
	// Restarts: fixed, then drawn.
	restarts := slices.Clone(w.Restarts.At)
	for range w.Restarts.Random {
		restarts = append(restarts, between(s.rRestart, 0, w.FaultsEnd))
	}
	for _, at := range restarts {
		s.q.schedule(at, func() {
			s.coverAll(FaultRestart)
			s.crash(s.nodes[0], 0, "scheduled restart")
		})
	}

	if w.MaxDuration > 0 {
		s.end = w.MaxDuration
	} else {
		s.end = max(lastOffer, w.FaultsEnd) + s.settleWithin()
	}
	for s.q.Len() > 0 {
		if s.q.foreground == 0 && s.settled() {
			break // only chores left, and nothing for them to do
		}
		h := s.pop()
		if h.at > s.end {
			s.now, s.elapsed = Epoch.Add(s.end), s.end
			s.note(nil, opStop, dur(s.end), num(s.q.Len()+1))
			break
		}
		if h.at < s.elapsed {
			panic(fmt.Sprintf("sim: seed %d: a happening was scheduled at %v, before now %v", s.seed, h.at, s.elapsed))
		}
		s.now, s.elapsed = Epoch.Add(h.at), h.at
		s.happen(h)
	}
	s.readFinals()
	s.note(nil, opEnd)
	return nil
}

// pop takes the earliest happening off the queue. A slow store call may
// have held the world past its instant (slow.go): it then happens now,
// late by what the call held.
func (s *sim) pop() happening {
	h := s.q.pop()
	if h.at < s.elapsed && s.w.Store.Slow.on() {
		h.at = s.elapsed
	}
	return h
}

// settled reports whether every record in the store is terminal. The
// answer is kept until the store is written again: with only chores left,
// the loop asks at every one of them.
func (s *sim) settled() bool {
	if s.settledAt != s.writes {
		s.settledAt, s.wasSettled = s.writes, true
		for _, name := range s.streams {
			if !allTerminal(s.store.StateCounts(name)) {
				s.wasSettled = false
				break
			}
		}
	}
	return s.wasSettled
}

// allTerminal reports whether every record counted is delivered or dead.
func allTerminal(counts [machine.Dead + 1]int) bool {
	for st, n := range counts {
		if n > 0 && !machine.State(st).Terminal() {
			return false
		}
	}
	return true
}

func (s *sim) result() Result {
	st := s.stats
	// By the event's index in the workload: every record and every send
	// is of one of its events.
	sends := s.sends                             // counted as they were logged (send), as ZombieSends and LeaseGrants
	final := make([]*machine.Record, len(s.ids)) // in the store at the end
	for _, run := range s.runs {
		for j := range run.Final {
			r := &run.Final[j]
			i := s.eventIndex(r.ID)
			final[i] = r
			st.MaxSends = max(st.MaxSends, sends[i])
			if r.State == machine.Dead {
				st.Dead++
			}
		}
	}
	// Counted per event of the workload, in a fixed order. A record
	// retention deleted counts as it was when it was deleted.
	for i, acked := range s.acked {
		if !acked {
			continue
		}
		st.Accepted++
		r, applied := final[i], s.recv.events[i].applied
		if r == nil {
			r = s.deleted[i]
		}
		if r == nil || (applied == 0 && r.State != machine.Dead) {
			st.Lost++
		}
		if applied > 1 {
			st.AppliedTwice++
		}
	}
	st.Applied = s.recv.distinct
	st.Duplicates = s.recv.dups
	st.Fenced = s.recv.fenced
	if !s.firstOffer.IsZero() {
		st.Drain = s.lastSettle.Sub(s.firstOffer)
	}
	st.End = s.now.Sub(Epoch)
	res := Result{
		Seed:       s.seed,
		World:      s.w,
		Trace:      s.trace,
		Hash:       s.traceHash(),
		Run:        s.runs[0],
		Runs:       s.runs,
		Violations: s.check(),
		Stats:      st,
	}
	res.OwnerWaits = s.ownerWaits()
	return res
}

// ownerWaits is every wait for an owner the checkers judged, once they
// ended, shortest first.
func (s *sim) ownerWaits() []time.Duration {
	var out []time.Duration
	for i := range s.checkers {
		out = append(out, s.checkers[i].OwnerWaits()...)
	}
	slices.Sort(out)
	return out
}

// readFinals reads every stream's records from the store, once the run
// ended: each run's Final (nil if it has none).
func (s *sim) readFinals() {
	for i := range s.runs {
		s.runs[i].Finished = true
		if recs := s.store.Records(s.streams[i]); len(recs) > 0 {
			s.runs[i].Final = recs
		}
	}
}

// check ends every stream's judgement with its final records, in stream
// order,
// whose memory serves each stream in turn.
func (s *sim) check() []invariants.Violation {
	var out []invariants.Violation
	for i, run := range s.runs {
		out = append(out, s.checkers[i].End(run.Final, run.Finished)...)
	}
	return out
}

// Add folds o into s, for totals over many runs: counts add up; MaxSends,
// MaxBatch, Drain and End keep the largest.
func (s *Stats) Add(o Stats) {
	s.Offers += o.Offers
	s.Accepted += o.Accepted
	s.Applied += o.Applied
	s.Duplicates += o.Duplicates
	s.Fenced += o.Fenced
	s.Dead += o.Dead
	s.Lost += o.Lost
	s.AppliedTwice += o.AppliedTwice
	s.Sends += o.Sends
	s.MaxSends = max(s.MaxSends, o.MaxSends)
	s.Probes += o.Probes
	s.CircuitOpenings += o.CircuitOpenings
	s.Restarts += o.Restarts
	s.Crashes += o.Crashes
	s.DuplicateAcks += o.DuplicateAcks
	s.LeaseGrants += o.LeaseGrants
	s.FencedWrites += o.FencedWrites
	s.LeasesLost += o.LeasesLost
	s.ZombieSends += o.ZombieSends
	s.Batches += o.Batches
	s.BatchedReplies += o.BatchedReplies
	s.MixedBatches += o.MixedBatches
	s.MaxBatch = max(s.MaxBatch, o.MaxBatch)
	s.Drain = max(s.Drain, o.Drain)
	s.End = max(s.End, o.End)
	s.Coverage.Add(o.Coverage)
}

// happening is something scheduled to occur at a virtual instant. seq
// breaks ties: two happenings at the same instant occur in the order they
// were scheduled, so the run never depends on heap internals.
//
// A node's happening (n set) occurs only if the node is still the
// incarnation inc, and waits for the node's stall to end (forNode). A
// node's wake (wake set, n its node) is its next call of Advance: a node
// has at most one, which the queue moves when it is rescheduled and
// removes when the node crashes. A chore (a wake, or a boot) does not
// keep the run going on its own: see queue.foreground.
type happening struct {
	at    time.Duration // since Epoch: the heap compares integers
	seq   uint64
	do    func()
	n     *node
	inc   int
	chore bool
	wake  bool
}

// queue holds the pending happenings in a binary min-heap ordered by
// (instant, scheduling order).
type queue struct {
	heap []happening
	seq  uint64
	// foreground counts the pending happenings that are not chores: a run
	// with only chores left has nothing more to happen unless there is
	// still work in the store.
	foreground int
}

func (q *queue) Len() int { return len(q.heap) }

// push schedules h, after every happening already scheduled for its
// instant.
func (q *queue) push(h happening) {
	q.seq++
	h.seq = q.seq
	if !h.chore {
		q.foreground++
	}
	q.heap = append(q.heap, h)
	q.up(len(q.heap)-1, h)
}

// pop removes the earliest happening and returns it.
func (q *queue) pop() happening {
	top := q.heap[0]
	q.removeAt(0)
	return top
}

// wake schedules n's wake at at, after every happening already scheduled
// for that instant: its pending wake, if it has one, moves there.
func (q *queue) wake(n *node, at time.Duration) {
	if !n.waking {
		n.waking = true
		q.push(happening{at: at, n: n, chore: true, wake: true})
		return
	}
	q.seq++
	h := q.heap[n.wakeIdx]
	h.at, h.seq = at, q.seq
	q.fix(n.wakeIdx, h)
}

// pendingWake returns the instant of n's wake, if it has one.
func (q *queue) pendingWake(n *node) (time.Duration, bool) {
	if !n.waking {
		return 0, false
	}
	return q.heap[n.wakeIdx].at, true
}

// cancelWake removes n's wake, if it has one.
func (q *queue) cancelWake(n *node) {
	if n.waking {
		q.removeAt(n.wakeIdx)
	}
}

// removeAt removes the happening at position i of the heap: the last one
// takes its place and moves up or down to where it belongs.
func (q *queue) removeAt(i int) {
	h := q.heap[i]
	if !h.chore {
		q.foreground--
	}
	if h.wake {
		h.n.waking = false
	}
	n := len(q.heap) - 1
	last := q.heap[n]
	q.heap[n] = happening{} // drop what it points to
	q.heap = q.heap[:n]
	if i < n {
		q.fix(i, last)
	}
}

// fix puts h at position i, then moves it up or down to where it belongs.
func (q *queue) fix(i int, h happening) {
	if i > 0 && h.before(&q.heap[(i-1)/2]) {
		q.up(i, h)
	} else {
		q.down(i, h)
	}
}

// up puts h at position i, or above it while it goes before its parent.
func (q *queue) up(i int, h happening) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.before(&q.heap[parent]) {
			break
		}
		q.place(i, q.heap[parent])
		i = parent
	}
	q.place(i, h)
}

// down puts h at position i, or below it while a child goes before it.
func (q *queue) down(i int, h happening) {
	n := len(q.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && q.heap[c+1].before(&q.heap[c]) {
			c++
		}
		if !q.heap[c].before(&h) {
			break
		}
		q.place(i, q.heap[c])
		i = c
	}
	q.place(i, h)
}

// place stores h at position i, and a wake's node learns where it is.
func (q *queue) place(i int, h happening) {
	q.heap[i] = h
	if h.wake {
		h.n.wakeIdx = i
	}
}

// before reports whether h goes before o: earlier, or as early and
// scheduled first.
func (h *happening) before(o *happening) bool {
	if h.at != o.at {
		return h.at < o.at
	}
	return h.seq < o.seq
}

// schedule schedules do at at, an offset from Epoch.
func (q *queue) schedule(at time.Duration, do func()) {
	q.push(happening{at: at, do: do})
}

// scheduleChore schedules a chore; see queue.foreground.
func (q *queue) scheduleChore(at time.Duration, do func()) {
	q.push(happening{at: at, do: do, chore: true})
}

// stream returns an independent generator for one part of the world,
// derived from the root seed and the part's name, so that adding draws in
// one fake does not shift the draws of another.
func stream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// between draws uniformly in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// chance reports true with probability p.
func chance(r *rand.Rand, p float64) bool {
	return p > 0 && r.Float64() < p
}

package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// happening is something scheduled to occur at a virtual instant. seq
// breaks ties: two happenings at the same instant occur in the order they
// were scheduled, so the run never depends on heap internals.
//
// A happening is one of a few kinds (what), each with the fields it needs,
// rather than a closure: the commonest ones (a worker's next Advance, a
// send's arrival and answers, a probe's answer, an offer and its
// acknowledgement timeout)
// then cost no allocation. A node's happenings (n set) occur only if the
// node is still the incarnation inc; the simulator decides (happen).
type happening struct {
	key        int64    // the instant, as nanoseconds since Epoch
	do         func()   // doFunc, doForNode
	n          *node    // doForNode, doWake, doAnswer, doProbeAnswer
	f          *flight  // doArrive, doAnswer
	probe      *probing // doProbeAnswer
	inc        int32    // n's incarnation
	wake       int32    // doWake: n's wake number
	event      int32    // doOffer, doAckTimeout: the event's index in the workload
	copy       int32    // doOffer, doAckTimeout: which offer of it
	what       what
	answer     uint8 // doAnswer: which of the flight's answers
	background bool
}

// what is a happening's kind.
type what uint8

const (
	doFunc        what = iota // do()
	doForNode                 // do(), for node n
	doWake                    // node n's next Advance
	doArrive                  // flight f reaches the receiver
	doAnswer                  // one of flight f's answers reaches node n
	doProbeAnswer             // a probe's answer reaches node n
	doOffer                   // the producer offers an event
	doAckTimeout              // the producer's wait for an offer's acknowledgement ends
	doNothing                 // a superseded wake (queue.supersede)
)

// at is the happening's instant. Every instant of a run is Epoch plus a
// duration, so this is the instant it was scheduled at, exactly.
func (h *happening) at() time.Time { return epochAdd(time.Duration(h.key)) }

// epochUnix and epochNano are Epoch's Unix seconds and nanoseconds,
// read once, not from Epoch at every instant keyed.
var epochUnix, epochNano = Epoch.Unix(), Epoch.Nanosecond()

// epochAdd is Epoch.Add(d), the very same value, built as time.Unix
// builds an instant, which inlines, rather than by Add, which does not and
// checks for an overflow no offset from Epoch can cause: the loop pays it
// at every instant it moves to. It holds as Epoch is a whole second in
// UTC without a monotonic reading (TestEpochAdd holds it to Epoch.Add).
func epochAdd(d time.Duration) time.Time {
	return time.Unix(epochUnix+int64(d/time.Second), int64(d%time.Second)).UTC()
}

// slot is a happening's place in the heap: its instant and scheduling
// order, which the heap compares, and where its payload is. It holds no
// pointer, so moving one costs no write barrier and the collector need not
// scan the heap.
type slot struct {
	key  int64
	seq  uint64
	slot int32 // index in queue.payloads
}

// before orders happenings by instant, then by scheduling order.
func (a *slot) before(b *slot) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

// queue holds the pending happenings: slots compared by two integers, in
// a binary min-heap and sorted runs beside it, payloads held by value in
// a slab apart, their places reused. Scheduling one allocates nothing but
// its closure, if it has one.
//
// A happening scheduled no earlier than its run's last one joins the end
// of the run, which then stays sorted (its scheduling order is later
// too), instead of the heap. The workload's offers, scheduled in order at
// the start, land in the first run (runAny); the producer's
// acknowledgement timeouts, a fixed delay after each offer, in one of
// their own (runTimeouts), where no earlier happening gets in their way:
// the heap is left with fewer slots, and a run costs one comparison to
// join and to leave. The next happening is the earliest of the heap's
// first and the runs' firsts, so the order is the same as with the heap
// alone.
type queue struct {
	heap []slot
	runs [nRuns]run
	// runFirst is 1 + the index of the run whose first slot goes first,
	// 0 if all are empty: a run's first changes only when it is taken or
	// the run was empty, not at every next, which compares only it.
	runFirst int
	payloads []happening
	free     []int32 // places in payloads not in use
	// held is one more than the place of the happening next returned
	// last, given back at the following next; 0 if none, so that the zero
	// queue is ready.
	held int32
	seq  uint64
	// foreground counts the pending happenings that are not background
	// chores (a worker's periodic poll): a run with only chores left has
	// nothing more to happen unless there is still work in the store.
	foreground int

	// wakes are the nodes' pending Advances, at most one a node, by the
	// node's index, kept out of the heap: most of a run's happenings are
	// wakes, and a node's one pending wake is found by a scan of a few
	// nodes instead of a push and a pop of the heap. A wake superseded
	// (by an earlier one, or a crash) still happens, doing nothing, as it
	// did when every wake was in the heap: it moves the clock and counts
	// as pending. It goes into the heap then (supersede), at its instant
	// and with its scheduling order (seq), so the order is unchanged.
	wakes     []wakeTimer
	wakeFirst int // 1 + the index in wakes of the earliest pending; 0 if none
	nwakes    int // pending in wakes
	// woke is the wake, or superseded wake, next returned last.
	woke happening
}

// wakeTimer is one node's wake, pending if pending: its instant and
// scheduling order, and what its happening holds. Its node is set once.
type wakeTimer struct {
	slot      // key and seq; slot is not used
	n         *node
	inc, wake int32
	pending   bool
}

func (q *queue) Len() int {
	a, t := &q.runs[runAny], &q.runs[runTimeouts]
	return len(q.heap) + q.nwakes + len(a.s) - a.at + len(t.s) - t.at
}

// run is a sorted run of slots, s[at:] pending.
type run struct {
	s  []slot
	at int
}

// The runs of a queue: where happenings of a kind join.
const (
	runAny      = iota // any happening
	runTimeouts        // the producer's acknowledgement timeouts
	nRuns
)

// emptied returns q emptied, keeping its room for a later run's.
func (q *queue) emptied() queue {
	e := queue{heap: q.heap[:0], payloads: q.payloads[:0], free: q.free[:0], wakes: q.wakes[:0]}
	for i := range q.runs {
		e.runs[i].s = q.runs[i].s[:0]
	}
	return e
}

func (q *queue) schedule(at time.Time, do func()) {
	q.foreground++
	q.add(key(at)).do = do
}

// scheduleChore schedules a background chore; see queue.foreground.
func (q *queue) scheduleChore(at time.Time, do func()) {
	h := q.add(key(at))
	h.do, h.background = do, true
}

// scheduleFor schedules do for incarnation inc of node n.
func (q *queue) scheduleFor(at time.Time, n *node, inc int, do func()) {
	q.foreground++
	h := q.add(key(at))
	h.what, h.do, h.n, h.inc = doForNode, do, n, int32(inc)
}

// scheduleWake schedules node n's next Advance, a background chore, as
// its wake number wake of incarnation inc. A wake of n still pending is
// superseded.
func (q *queue) scheduleWake(at time.Duration, n *node, inc, wake int) {
	for len(q.wakes) <= n.idx {
		q.wakes = append(q.wakes, wakeTimer{})
	}
	w := &q.wakes[n.idx]
	if w.pending {
		q.supersede(n.idx)
	}
	q.seq++
	w.key, w.seq, w.inc, w.wake, w.pending = int64(at), q.seq, int32(inc), int32(wake), true
	if w.n != n {
		w.n = n // once a run, or after a test's queue took another node
	}
	q.nwakes++
	// The newest wake goes first only if strictly earlier: at the same
	// instant, the one scheduled first does.
	if q.wakeFirst == 0 || w.key < q.wakes[q.wakeFirst-1].key {
		q.wakeFirst = n.idx + 1
	}
}

// supersede moves node i's pending wake, if it has one, into the heap,
// where it happens as every happening does, at its instant and in its
// scheduling order: the node no longer takes it for its own (woken).
func (q *queue) supersede(i int) {
	if i >= len(q.wakes) || !q.wakes[i].pending {
		return
	}
	w := &q.wakes[i]
	w.pending = false
	q.nwakes--
	// It needs no payload: whatever it was, it now does nothing.
	q.up(slot{key: w.key, seq: w.seq, slot: superseded})
	q.findFirstWake()
}

// superseded is the place in payloads of a superseded wake: none.
const superseded = -1

// findFirstWake finds the earliest pending wake. With none pending, as
// after most wakes of a single sender, there is nothing to look for.
func (q *queue) findFirstWake() {
	q.wakeFirst = 0
	if q.nwakes == 0 {
		return
	}
	for i := range q.wakes {
		w := &q.wakes[i]
		if w.pending && (q.wakeFirst == 0 || w.before(&q.wakes[q.wakeFirst-1].slot)) {
			q.wakeFirst = i + 1
		}
	}
}

// takeWake removes the earliest pending wake and returns its happening,
// which stays as it is until the following next.
func (q *queue) takeWake() *happening {
	w := &q.wakes[q.wakeFirst-1]
	w.pending = false
	q.nwakes--
	h := &q.woke
	h.key, h.what, h.background = w.key, doWake, true
	h.inc, h.wake = w.inc, w.wake
	if h.n != w.n {
		h.n = w.n
	}
	q.findFirstWake()
	return h
}

// The schedulers of the channel's and the producer's happenings take
// their instant as its offset from Epoch, as the queue keeps it: their
// callers have it (sim.after) without a Time.Add and a Time.Sub.

// scheduleArrival schedules flight f's arrival at the receiver.
func (q *queue) scheduleArrival(at time.Duration, f *flight) {
	q.foreground++
	h := q.add(int64(at))
	h.what, h.f = doArrive, f
}

// scheduleAnswer schedules one of flight f's answers to its node.
func (q *queue) scheduleAnswer(at time.Duration, f *flight, which uint8) {
	q.foreground++
	h := q.add(int64(at))
	h.what, h.n, h.inc, h.f, h.answer = doAnswer, f.n, int32(f.n.inc), f, which
}

// scheduleProbeAnswer schedules the answer to probe pr.
func (q *queue) scheduleProbeAnswer(at time.Duration, pr *probing) {
	q.foreground++
	h := q.add(int64(at))
	h.what, h.n, h.inc, h.probe = doProbeAnswer, pr.n, int32(pr.n.inc), pr
}

// scheduleOffer schedules what (doOffer or doAckTimeout) for offer copy
// of the workload's event i.
func (q *queue) scheduleOffer(at time.Duration, what what, i, copy int) {
	q.foreground++
	r := runAny
	if what == doAckTimeout {
		r = runTimeouts
	}
	h := q.addTo(int64(at), r)
	h.what, h.event, h.copy = what, int32(i), int32(copy)
}

// postpone schedules node happening h again, at at.
func (q *queue) postpone(at time.Time, h happening) {
	q.foreground++
	h.key = key(at)
	*q.add(h.key) = h
}

func key(at time.Time) int64 { return int64(sinceEpoch(at)) }

// sinceEpoch is t.Sub(Epoch), without Sub's overflow check (a second
// time.Add) for the instants a run has, which are within centuries of
// Epoch: every scheduled happening and every traced instant pays it.
func sinceEpoch(t time.Time) time.Duration {
	const near = 1 << 33 // seconds, about 272 years: the sum cannot overflow
	if s := t.Unix() - epochUnix; s > -near && s < near {
		return time.Duration(s)*time.Second + time.Duration(t.Nanosecond()-epochNano)
	}
	return t.Sub(Epoch) // saturated, as Sub does, for a zero or far instant
}

// add schedules a happening at key and returns it, zero but for its key,
// for the caller to fill in at once: one built apart and passed by value
// was zeroed and copied three times on its way into payloads. The pointer
// is good until the next add, which may move payloads.
func (q *queue) add(key int64) *happening { return q.addTo(key, runAny) }

// addTo is add, joining run i if it can.
func (q *queue) addTo(key int64, i int) *happening {
	var at int32
	if n := len(q.free); n > 0 {
		at = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		at = int32(len(q.payloads))
		q.payloads = append(q.payloads, happening{})
	}
	h := &q.payloads[at]
	*h = happening{key: key}
	q.seq++
	if r := &q.runs[i]; len(r.s) == r.at {
		r.s = append(r.s, slot{key: key, seq: q.seq, slot: at})
		q.findFirstRun()
	} else if key >= r.s[len(r.s)-1].key {
		r.s = append(r.s, slot{key: key, seq: q.seq, slot: at})
	} else {
		q.up(slot{key: key, seq: q.seq, slot: at})
	}
	return h
}

// up adds s to the heap: a hole climbs from the end while s goes before
// its parent, each parent moving down into it once, and s fills it.
func (q *queue) up(s slot) {
	q.heap = append(q.heap, s)
	h := q.heap
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !s.before(&h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = s
}

// next removes the earliest happening and returns it. The pointer is
// into the queue's own slab and stays valid until the following call of
// next, which only then gives its place back for reuse: the caller reads
// the happening where it is, without copying it out. Happenings pushed
// meanwhile may move the slab (append), but not this one's value: its
// place is not free, so nothing writes it, and the pointer keeps the old
// slab it may still point into alive.
func (q *queue) next() *happening {
	if q.held > 0 {
		// Its pointers are not dropped: the place is overwritten when it
		// is reused, and the run's end clears the slab (buffers.release).
		q.free = append(q.free, q.held-1)
		q.held = 0
	}
	// The earliest of the runs' firsts, the heap's and the first wake.
	var first *slot
	from := fromHeap
	if len(q.heap) > 0 {
		first = &q.heap[0]
	}
	if i := q.runFirst - 1; i >= 0 {
		if r := &q.runs[i]; first == nil || r.s[r.at].before(first) {
			first, from = &r.s[r.at], i
		}
	}
	if q.wakeFirst > 0 && (first == nil || q.wakes[q.wakeFirst-1].before(first)) {
		return q.takeWake() // a background chore
	}
	var top int32
	key := first.key
	if from == fromHeap {
		top = q.down()
	} else {
		top = first.slot
		q.runs[from].take()
		q.findFirstRun()
	}
	if top == superseded {
		q.woke = happening{key: key, what: doNothing, background: true}
		return &q.woke
	}
	q.held = top + 1
	x := &q.payloads[top]
	if !x.background {
		q.foreground--
	}
	return x
}

// fromHeap is where next finds its first slot when it is the heap's.
const fromHeap = -1

// findFirstRun finds the run whose first slot goes first (runFirst).
func (q *queue) findFirstRun() {
	q.runFirst = 0
	var first *slot
	for i := range q.runs {
		if s := q.runs[i].first(); s != nil && (first == nil || s.before(first)) {
			first, q.runFirst = s, i+1
		}
	}
}

// first returns the run's first slot, nil if none is pending.
func (r *run) first() *slot {
	if r.at < len(r.s) {
		return &r.s[r.at]
	}
	return nil
}

// take removes the run's first slot. The run is emptied once it is all
// taken, or what is left moves to the front once most of it is, so that
// it does not grow without end.
func (r *run) take() {
	r.at++
	switch n := len(r.s); {
	case r.at == n:
		r.s, r.at = r.s[:0], 0
	case r.at >= 64 && 2*r.at >= n:
		r.s = r.s[:copy(r.s, r.s[r.at:])]
		r.at = 0
	}
}

// down removes the heap's first slot and returns its place in payloads.
// The last slot is taken out and a hole sinks from the root, the earlier
// child moving up into it at each level, until the last slot goes no
// later than both children and fills it.
func (q *queue) down() int32 {
	h := q.heap
	top := h[0].slot
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	q.heap = h
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&last) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = last
	return top
}

// stream returns an independent generator for one part of the world,
// derived from the root seed and the part's name, so that adding draws in
// one fake does not shift the draws of another.
func stream(seed uint64, name string) *rand.Rand {
	return rand.New(rand.NewPCG(seed, streamKey(name)))
}

// streamKey is the part of a stream's seed its name makes.
func streamKey(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// The streams of a run: the parts of the world that draw.
const (
	streamProducer = iota
	streamChannel
	streamRestart
	streamLease
	nStreams
)

var (
	streamNames = [nStreams]string{"producer", "channel", "restart", "lease"}
	streamKeys  [nStreams]uint64 // streamKey of each name, made once
)

func init() {
	for i, name := range streamNames {
		streamKeys[i] = streamKey(name)
	}
}

// streams returns a run's streams, by streamProducer and the others: the
// generators stream(seed, name) returns, reseeded in the buffers' own
// rather than made anew (TestReusedStreamsAreStream).
func (b *buffers) streams(seed uint64) *[nStreams]*rand.Rand {
	for i := range b.rands {
		if b.rands[i] == nil {
			b.rands[i] = rand.New(&b.sources[i])
		}
		b.sources[i].Seed(seed, streamKeys[i])
	}
	return &b.rands
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

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
// a binary min-heap and a sorted run beside it, payloads held by value in
// a slab apart, their places reused. Scheduling one allocates nothing but
// its closure, if it has one.
//
// A happening scheduled no earlier than the run's last one joins the end
// of the run, which then stays sorted (its scheduling order is later
// too), instead of the heap. The workload's offers, scheduled in order at
// the start, and timeouts a fixed delay after them, land there: the heap
// is left with fewer slots, and a run costs one comparison to join and to
// leave. The next happening is the earlier of the heap's first and the
// run's first, so the order is the same as with the heap alone.
type queue struct {
	heap     []slot
	run      []slot // run[runAt:] pending, in order
	runAt    int
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
}

func (q *queue) Len() int { return len(q.heap) + len(q.run) - q.runAt }

func (q *queue) schedule(at time.Time, do func()) {
	q.foreground++
	q.push(happening{key: key(at), do: do})
}

// scheduleChore schedules a background chore; see queue.foreground.
func (q *queue) scheduleChore(at time.Time, do func()) {
	q.push(happening{key: key(at), do: do, background: true})
}

// scheduleFor schedules do for incarnation inc of node n.
func (q *queue) scheduleFor(at time.Time, n *node, inc int, do func()) {
	q.foreground++
	q.push(happening{key: key(at), what: doForNode, do: do, n: n, inc: int32(inc)})
}

// scheduleWake schedules node n's next Advance, a background chore, as
// its wake number wake of incarnation inc.
func (q *queue) scheduleWake(at time.Duration, n *node, inc, wake int) {
	q.push(happening{key: int64(at), what: doWake, n: n, inc: int32(inc), wake: int32(wake), background: true})
}

// The schedulers of the channel's and the producer's happenings take
// their instant as its offset from Epoch, as the queue keeps it: their
// callers have it (sim.after) without a Time.Add and a Time.Sub.

// scheduleArrival schedules flight f's arrival at the receiver.
func (q *queue) scheduleArrival(at time.Duration, f *flight) {
	q.foreground++
	q.push(happening{key: int64(at), what: doArrive, f: f})
}

// scheduleAnswer schedules one of flight f's answers to its node.
func (q *queue) scheduleAnswer(at time.Duration, f *flight, which uint8) {
	q.foreground++
	q.push(happening{key: int64(at), what: doAnswer, n: f.n, inc: int32(f.n.inc), f: f, answer: which})
}

// scheduleProbeAnswer schedules the answer to probe pr.
func (q *queue) scheduleProbeAnswer(at time.Duration, pr *probing) {
	q.foreground++
	q.push(happening{key: int64(at), what: doProbeAnswer, n: pr.n, inc: int32(pr.n.inc), probe: pr})
}

// scheduleOffer schedules what (doOffer or doAckTimeout) for offer copy
// of the workload's event i.
func (q *queue) scheduleOffer(at time.Duration, what what, i, copy int) {
	q.foreground++
	q.push(happening{key: int64(at), what: what, event: int32(i), copy: int32(copy)})
}

// postpone schedules node happening h again, at at.
func (q *queue) postpone(at time.Time, h happening) {
	q.foreground++
	h.key = key(at)
	q.push(h)
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

func (q *queue) push(x happening) {
	var at int32
	if n := len(q.free); n > 0 {
		at = q.free[n-1]
		q.free = q.free[:n-1]
		q.payloads[at] = x
	} else {
		at = int32(len(q.payloads))
		q.payloads = append(q.payloads, x)
	}
	q.seq++
	if n := len(q.run); n == q.runAt || x.key >= q.run[n-1].key {
		q.run = append(q.run, slot{key: x.key, seq: q.seq, slot: at})
		return
	}
	q.up(slot{key: x.key, seq: q.seq, slot: at})
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
	}
	top := q.first()
	q.held = top + 1
	x := &q.payloads[top]
	if !x.background {
		q.foreground--
	}
	return x
}

// first removes the earliest slot, the run's first or the heap's, and
// returns its place in payloads.
func (q *queue) first() int32 {
	if q.runAt < len(q.run) {
		r := q.run[q.runAt]
		if len(q.heap) == 0 || r.before(&q.heap[0]) {
			q.runAt++
			q.trimRun()
			return r.slot
		}
	}
	return q.down()
}

// trimRun empties the run once it is all taken, or moves what is left to
// the front once most of it is, so that it does not grow without end.
func (q *queue) trimRun() {
	switch n := len(q.run); {
	case q.runAt == n:
		q.run, q.runAt = q.run[:0], 0
	case q.runAt >= 64 && 2*q.runAt >= n:
		q.run = q.run[:copy(q.run, q.run[q.runAt:])]
		q.runAt = 0
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

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
// A node's happening (n set) occurs only if the node is still the
// incarnation inc, and waits for the node's stall to end (forNode). A
// chore (a worker's periodic Advance) does not keep the run going on its
// own: see queue.foreground.
type happening struct {
	at    time.Duration // since Epoch: the heap compares integers
	seq   uint64
	do    func()
	n     *node
	inc   int
	chore bool
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
// instant. h climbs from the end of the heap while it goes before its
// parent.
func (q *queue) push(h happening) {
	q.seq++
	h.seq = q.seq
	if !h.chore {
		q.foreground++
	}
	q.heap = append(q.heap, h)
	i := len(q.heap) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.before(&q.heap[parent]) {
			break
		}
		q.heap[i] = q.heap[parent]
		i = parent
	}
	q.heap[i] = h
}

// pop removes the earliest happening and returns it. The last happening
// sinks from the root while a child goes before it.
func (q *queue) pop() happening {
	top := q.heap[0]
	n := len(q.heap) - 1
	last := q.heap[n]
	q.heap[n] = happening{} // drop what it points to
	q.heap = q.heap[:n]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && q.heap[c+1].before(&q.heap[c]) {
			c++
		}
		if !q.heap[c].before(&last) {
			break
		}
		q.heap[i] = q.heap[c]
		i = c
	}
	if n > 0 {
		q.heap[i] = last
	}
	if !top.chore {
		q.foreground--
	}
	return top
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

package sim

import (
	"container/heap"
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
	at    time.Time
	seq   uint64
	do    func()
	n     *node
	inc   int
	chore bool
}

// queue holds the pending happenings in a binary min-heap ordered by
// (instant, scheduling order).
type queue struct {
	h   happenings
	seq uint64
	// foreground counts the pending happenings that are not chores: a run
	// with only chores left has nothing more to happen unless there is
	// still work in the store.
	foreground int
}

func (q *queue) Len() int { return len(q.h) }

// push schedules h, after every happening already scheduled for its
// instant.
func (q *queue) push(h *happening) {
	q.seq++
	h.seq = q.seq
	if !h.chore {
		q.foreground++
	}
	heap.Push(&q.h, h)
}

// pop removes the earliest happening and returns it.
func (q *queue) pop() *happening {
	h := heap.Pop(&q.h).(*happening)
	if !h.chore {
		q.foreground--
	}
	return h
}

// schedule schedules do at at.
func (q *queue) schedule(at time.Time, do func()) {
	q.push(&happening{at: at, do: do})
}

// scheduleChore schedules a chore; see queue.foreground.
func (q *queue) scheduleChore(at time.Time, do func()) {
	q.push(&happening{at: at, do: do, chore: true})
}

// happenings implements heap.Interface.
type happenings []*happening

func (h happenings) Len() int { return len(h) }

func (h happenings) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}

func (h happenings) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *happenings) Push(x any) { *h = append(*h, x.(*happening)) }

func (h *happenings) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return x
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

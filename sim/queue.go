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
type happening struct {
	at         time.Time
	seq        uint64
	do         func()
	background bool
}

type queue struct {
	items []*happening
	seq   uint64
	// foreground counts the pending happenings that are not background
	// chores (a worker's periodic poll): a run with only chores left has
	// nothing more to happen unless there is still work in the store.
	foreground int
}

func (q *queue) Len() int { return len(q.items) }
func (q *queue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.at.Equal(b.at) {
		return a.seq < b.seq
	}
	return a.at.Before(b.at)
}
func (q *queue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *queue) Push(x any)    { q.items = append(q.items, x.(*happening)) }
func (q *queue) Pop() any {
	n := len(q.items) - 1
	h := q.items[n]
	q.items[n] = nil
	q.items = q.items[:n]
	return h
}

func (q *queue) schedule(at time.Time, do func()) {
	q.seq++
	q.foreground++
	heap.Push(q, &happening{at: at, seq: q.seq, do: do})
}

// scheduleChore schedules a background chore; see queue.foreground.
func (q *queue) scheduleChore(at time.Time, do func()) {
	q.seq++
	heap.Push(q, &happening{at: at, seq: q.seq, do: do, background: true})
}

func (q *queue) next() *happening {
	h := heap.Pop(q).(*happening)
	if !h.background {
		q.foreground--
	}
	return h
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

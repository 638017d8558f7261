package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// happening is something scheduled to occur at a virtual instant. seq
// breaks ties: two happenings at the same instant occur in the order they
// were scheduled, so the run never depends on heap internals.
type happening struct {
	key        int64 // at as nanoseconds since Epoch: the heap compares it
	seq        uint64
	at         time.Time
	do         func()
	background bool
}

// before orders happenings by instant, then by scheduling order.
func (a *happening) before(b *happening) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	return a.seq < b.seq
}

// queue is a binary min-heap of happenings held by value: scheduling one
// allocates nothing but its closure, and comparing two is two integer
// comparisons.
type queue struct {
	items []happening
	seq   uint64
	// foreground counts the pending happenings that are not background
	// chores (a worker's periodic poll): a run with only chores left has
	// nothing more to happen unless there is still work in the store.
	foreground int
}

func (q *queue) Len() int { return len(q.items) }

func (q *queue) schedule(at time.Time, do func()) {
	q.foreground++
	q.push(at, do, false)
}

// scheduleChore schedules a background chore; see queue.foreground.
func (q *queue) scheduleChore(at time.Time, do func()) {
	q.push(at, do, true)
}

func (q *queue) push(at time.Time, do func(), background bool) {
	q.seq++
	q.items = append(q.items, happening{key: int64(at.Sub(Epoch)), seq: q.seq, at: at, do: do, background: background})
	h := q.items
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].before(&h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *queue) next() happening {
	h := q.items
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = happening{} // drop the closure
	h = h[:n]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < n && h[l].before(&h[small]) {
			small = l
		}
		if r < n && h[r].before(&h[small]) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	q.items = h
	if !top.background {
		q.foreground--
	}
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

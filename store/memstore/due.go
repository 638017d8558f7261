package memstore

import (
	"container/heap"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Scheduling: each stream is in at most one of two heaps, so that no
// call reads every stream.
//
//   - leased: the streams whose lease was valid when it was last placed,
//     earliest expiry first. ClaimDue moves those whose lease ran out
//     since to ready (or to neither) before it grants.
//   - ready: the streams with no valid lease that have a due instant,
//     earliest due first, ties by name: the order ClaimDue grants in.
//
// A stream with neither a valid lease nor due work is in neither.

// schedule is the pair of heaps.
type schedule struct {
	ready  streamHeap // by (due, name)
	leased streamHeap // by lease expiry
}

func newSchedule() schedule {
	return schedule{
		ready: streamHeap{
			less: func(a, b *stream) bool {
				if c := a.due.Compare(b.due); c != 0 {
					return c < 0
				}
				return a.name < b.name
			},
			at: func(st *stream) *int { return &st.readyAt },
		},
		leased: streamHeap{
			less: func(a, b *stream) bool {
				if c := a.lease.Expires.Compare(b.lease.Expires); c != 0 {
					return c < 0
				}
				return a.name < b.name
			},
			at: func(st *stream) *int { return &st.leasedAt },
		},
	}
}

// place puts st in the heap its lease and due instant call for at now,
// after any change to either.
func (sc *schedule) place(st *stream, now time.Time) {
	sc.ready.remove(st)
	sc.leased.remove(st)
	switch {
	case st.lease.ValidAt(now):
		heap.Push(&sc.leased, st)
	case st.hasDue:
		heap.Push(&sc.ready, st)
	}
}

// expire moves every stream whose lease ran out by now from leased to
// where it belongs.
func (sc *schedule) expire(now time.Time) {
	for len(sc.leased.items) > 0 {
		st := sc.leased.items[0]
		if st.lease.ValidAt(now) {
			return
		}
		heap.Pop(&sc.leased)
		if st.hasDue {
			heap.Push(&sc.ready, st)
		}
	}
}

// nextDue returns the earliest stream due at now with no valid lease, or
// nil. The caller grants it and places it again.
func (sc *schedule) nextDue(now time.Time) *stream {
	sc.expire(now)
	if len(sc.ready.items) == 0 || sc.ready.items[0].due.After(now) {
		return nil
	}
	return sc.ready.items[0]
}

// refreshDue recomputes st's due instant from its waiting records and
// its last release (see store.Store.ClaimDue), in O(log n) amortised:
// the waiting heap's top, once the entries gone stale are popped.
func (st *stream) refreshDue() {
	for len(st.waiting.items) > 0 && st.waiting.items[0].stale() {
		heap.Pop(&st.waiting)
	}
	switch {
	case st.parked > 0:
		st.due, st.hasDue = st.releasedUntil, true
	case len(st.waiting.items) > 0:
		st.due, st.hasDue = later(st.waiting.items[0].at, st.releasedUntil), true
	default:
		st.due, st.hasDue = time.Time{}, false
	}
}

// note counts the change of r, which was in state before (0: new), in
// st's parked count and waiting heap. A record's old heap entry is not
// looked for: it goes stale, and is popped when it comes to the top.
func (st *stream) note(r *store.Record, before machine.State) {
	if before == machine.Parked {
		st.parked--
	}
	if waits(before) {
		st.nwaiting--
	}
	switch {
	case r.State == machine.Parked:
		st.parked++
	case waits(r.State):
		st.nwaiting++
		heap.Push(&st.waiting, dueEntry{at: r.NextAt, r: r})
	}
	if len(st.waiting.items) > 2*st.nwaiting+32 {
		st.compact() // stale entries outnumber the live ones
	}
}

// recount rebuilds st's counts and waiting heap from its records, after
// records were deleted outright.
func (st *stream) recount() {
	st.waiting.items, st.nwaiting, st.parked = st.waiting.items[:0], 0, 0
	for _, r := range st.recs {
		st.note(r, 0)
	}
	st.refreshDue()
}

// compact rebuilds the waiting heap from the live entries alone.
func (st *stream) compact() {
	live := st.waiting.items[:0]
	for _, e := range st.waiting.items {
		if !e.stale() {
			live = append(live, e)
		}
	}
	clear(st.waiting.items[len(live):])
	st.waiting.items = live
	heap.Init(&st.waiting)
}

func waits(s machine.State) bool { return s == machine.Pending || s == machine.Retry }

// dueEntry is a pending or retry record as it was when pushed: stale
// once the record has moved on (another state or another NextAt).
type dueEntry struct {
	at time.Time
	r  *store.Record
}

func (e dueEntry) stale() bool { return !waits(e.r.State) || !e.r.NextAt.Equal(e.at) }

// entryHeap orders a stream's waiting entries by NextAt, then Seq.
type entryHeap struct{ items []dueEntry }

func (h *entryHeap) Len() int { return len(h.items) }
func (h *entryHeap) Less(i, j int) bool {
	if c := h.items[i].at.Compare(h.items[j].at); c != 0 {
		return c < 0
	}
	return h.items[i].r.Seq < h.items[j].r.Seq
}
func (h *entryHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *entryHeap) Push(x any)    { h.items = append(h.items, x.(dueEntry)) }
func (h *entryHeap) Pop() any {
	n := len(h.items) - 1
	e := h.items[n]
	h.items[n] = dueEntry{}
	h.items = h.items[:n]
	return e
}

// enqueued lowers st's due instant for a record enqueued at now, without
// reading its records: a new record is pending and due at now.
func (st *stream) enqueued(now time.Time) {
	if at := later(now, st.releasedUntil); !st.hasDue || at.Before(st.due) {
		st.due, st.hasDue = at, true
	}
}

// released gives st's lease up, holding the stream until until (at
// least now).
func (s *Store) released(st *stream, now, until time.Time) {
	if plant.On(plant.ParkedHeldLong) && until.After(now) {
		until = until.Add(time.Minute)
	}
	st.lease.Released = true
	st.releasedUntil = later(now, until)
	st.refreshDue()
	s.sched.place(st, now)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// streamHeap is a container/heap of streams that records each stream's
// index in it, so that a stream can be removed or fixed in place.
type streamHeap struct {
	items []*stream
	less  func(a, b *stream) bool
	at    func(*stream) *int // the stream's index in this heap; -1: absent
}

func (h *streamHeap) Len() int           { return len(h.items) }
func (h *streamHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *streamHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.at(h.items[i]) = i
	*h.at(h.items[j]) = j
}

func (h *streamHeap) Push(x any) {
	st := x.(*stream)
	*h.at(st) = len(h.items)
	h.items = append(h.items, st)
}

func (h *streamHeap) Pop() any {
	n := len(h.items) - 1
	st := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	*h.at(st) = -1
	return st
}

// remove takes st out of h if it is there.
func (h *streamHeap) remove(st *stream) {
	if i := *h.at(st); i >= 0 {
		heap.Remove(h, i)
	}
}

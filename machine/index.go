package machine

import "time"

// The indexes that keep a step's cost independent of the backlog. Every
// waiting entry (not in flight, not settled) is in the expiry heap and, by
// its NextAt, in the future heap (due later), in the due heap (due now,
// independent order only) or in none (due now, strict order: the head of
// the stream is found from Machine.all, not from an index). Every entry in
// flight is in the flight heap. Ties are broken by Seq, so that the order
// is total and every walk deterministic.

// key names what a heap is ordered by.
type key uint8

const (
	byNextAt   key = iota + 1 // NextAt, then Seq: flight (NextAt is the timeout) and future
	bySeq                     // Seq: due
	byAccepted                // AcceptedAt, then Seq: expiry (MaxAge is the same for all)
)

// queue names the time heap an entry is in (it is in at most one).
type queue uint8

const (
	inNone queue = iota
	inFlight
	inFuture
	inDue
)

// heap is a binary min-heap of entries that records each entry's position
// in the entry itself, so that any entry can be removed or re-placed in
// O(log n). The expiry heap uses entry.xi; the time heaps use entry.ti.
type heap struct {
	items []*entry
	key   key
	q     queue // inNone for the expiry heap
}

func (h *heap) len() int { return len(h.items) }

func (h *heap) pos(e *entry) *int32 {
	if h.q == inNone {
		return &e.xi
	}
	return &e.ti
}

func (h *heap) less(a, b *entry) bool {
	switch h.key {
	case byNextAt:
		if c := a.rec.NextAt.Compare(b.rec.NextAt); c != 0 {
			return c < 0
		}
	case byAccepted:
		if c := a.rec.AcceptedAt.Compare(b.rec.AcceptedAt); c != 0 {
			return c < 0
		}
	}
	return a.rec.Seq < b.rec.Seq
}

func (h *heap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = int32(i)
	*h.pos(h.items[j]) = int32(j)
}

func (h *heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *heap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

func (h *heap) push(e *entry) {
	*h.pos(e) = int32(len(h.items))
	if h.q != inNone {
		e.where = h.q
	}
	h.items = append(h.items, e)
	h.up(len(h.items) - 1)
}

// remove takes e out of the heap; e must be in it.
func (h *heap) remove(e *entry) {
	i := int(*h.pos(e))
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	*h.pos(e) = -1
	if h.q != inNone {
		e.where = inNone
	}
}

// fix restores the order after e's key changed.
func (h *heap) fix(e *entry) {
	i := int(*h.pos(e))
	h.down(i)
	h.up(i)
}

// settledEntry is one record in the idempotency window, with the instant
// it settled.
type settledEntry struct {
	e  *entry
	at time.Time
}

// fifo is the idempotency window: settled entries in the order they
// settled, oldest first.
type fifo struct {
	items []settledEntry
	head  int
}

func (f *fifo) len() int { return len(f.items) - f.head }

func (f *fifo) push(s settledEntry) { f.items = append(f.items, s) }

func (f *fifo) front() settledEntry { return f.items[f.head] }

func (f *fifo) pop() *entry {
	e := f.items[f.head].e
	f.items[f.head] = settledEntry{}
	f.head++
	if f.head >= 64 && f.head*2 >= len(f.items) {
		f.items = f.items[:copy(f.items, f.items[f.head:])]
		f.head = 0
	}
	return e
}

package machine

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

// down sifts the entry at i down: it swaps places with its lesser child
// while that child is less.
func (h *heap) down(i int) {
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(h.items[r], h.items[c]) {
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

// ring is a first-in, first-out queue in a circular buffer: the
// idempotency window keeps its settled entries in one, oldest first. Its
// size is a power of two; it doubles when full, and a pop moves nothing.
type ring[T any] struct {
	items []T
	head  int // the oldest item's index
	n     int // items queued
}

func (r *ring[T]) len() int { return r.n }

func (r *ring[T]) push(v T) {
	if r.n == len(r.items) {
		r.grow()
	}
	r.items[(r.head+r.n)&(len(r.items)-1)] = v
	r.n++
}

// front returns the oldest item; the ring must not be empty.
func (r *ring[T]) front() T { return r.items[r.head] }

// pop removes and returns the oldest item; the ring must not be empty.
func (r *ring[T]) pop() T {
	v := r.items[r.head]
	var zero T
	r.items[r.head] = zero // let the garbage collector have what it held
	r.head = (r.head + 1) & (len(r.items) - 1)
	r.n--
	return v
}

func (r *ring[T]) grow() {
	items := make([]T, max(64, 2*len(r.items)))
	k := copy(items, r.items[r.head:])
	copy(items[k:], r.items[:r.head])
	r.items, r.head = items, 0
}

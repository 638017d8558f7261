package invariants

// minHeap is a binary min-heap of T ordered by T's less method: the
// textbook sift up and sift down. It holds T itself, where container/heap's
// any would put each element in a box of its own. The zero minHeap is
// empty and ready to use.
type minHeap[T interface{ less(T) bool }] struct {
	items []T
}

func (h *minHeap[T]) len() int { return len(h.items) }

// min returns the least element; the heap must not be empty.
func (h *minHeap[T]) min() T { return h.items[0] }

func (h *minHeap[T]) push(x T) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.items[i].less(h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

// pop removes and returns the least element; the heap must not be empty.
func (h *minHeap[T]) pop() T {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < last && h.items[l].less(h.items[least]) {
			least = l
		}
		if r < last && h.items[r].less(h.items[least]) {
			least = r
		}
		if least == i {
			break
		}
		h.items[i], h.items[least] = h.items[least], h.items[i]
		i = least
	}
	return top
}

// reset empties h.
func (h *minHeap[T]) reset() { h.items = h.items[:0] }

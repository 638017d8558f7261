package invariants

// strictOrder answers the order check's question, "which event accepted
// before this one is not yet delivered or dead?", in O(log n) per send and
// per persisted record, where walking the acceptance order from the start
// on every send cost O(n) (O(n²) per run).
//
// It holds events by position in acceptance order (first persistence),
// the running maximum of their sequence numbers, and a min-heap of the
// positions whose latest record is not terminal. A record that becomes
// terminal leaves the heap lazily, when it reaches the top; one that
// becomes non-terminal again (only a broken run does that) goes back in.
type strictOrder struct {
	maxSeq   []uint64 // maxSeq[i]: the largest seq at positions 0..i
	terminal []bool   // the latest record at each position is terminal
	inHeap   []bool
	open     []int // min-heap of positions; a superset of the non-terminal ones
}

// add appends an event with sequence number seq, terminal until set says
// otherwise, and returns its position.
func (o *strictOrder) add(seq uint64) int {
	m := seq
	if n := len(o.maxSeq); n > 0 {
		m = max(m, o.maxSeq[n-1])
	}
	o.maxSeq = append(o.maxSeq, m)
	o.terminal = append(o.terminal, true)
	o.inHeap = append(o.inHeap, false)
	return len(o.maxSeq) - 1
}

// reset empties o, keeping its room.
func (o *strictOrder) reset() {
	o.maxSeq, o.terminal, o.inHeap, o.open = o.maxSeq[:0], o.terminal[:0], o.inHeap[:0], o.open[:0]
}

// set records whether the latest record at position pos is terminal.
func (o *strictOrder) set(pos int, terminal bool) {
	o.terminal[pos] = terminal
	if !terminal && !o.inHeap[pos] {
		o.inHeap[pos] = true
		o.push(pos)
	}
}

// blocker returns the position the old walk stopped at with a violation:
// walking the acceptance order from the start, stop at the first event
// whose seq is at least seq (no violation) or that is not terminal (a
// violation if its seq is below seq).
//
// The walk stops at the first non-terminal position, top, with a violation
// when neither top nor any position before it has a seq at or above seq:
// when the running maximum at top is below seq. (Binary search found the
// first position reaching seq, to compare top with; this reads one.)
func (o *strictOrder) blocker(seq uint64) (pos int, blocked bool) {
	for len(o.open) > 0 && o.terminal[o.open[0]] {
		o.inHeap[o.open[0]] = false
		o.pop()
	}
	if len(o.open) == 0 || o.maxSeq[o.open[0]] >= seq {
		return 0, false
	}
	return o.open[0], true
}

func (o *strictOrder) push(pos int) {
	h := append(o.open, pos)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent] <= h[i] {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	o.open = h
}

func (o *strictOrder) pop() {
	h := o.open
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < n && h[l] < h[small] {
			small = l
		}
		if r < n && h[r] < h[small] {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	o.open = h
}

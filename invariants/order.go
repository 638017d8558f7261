package invariants

// strictOrder answers the order check's question, "which event accepted
// before this one is not yet delivered or dead?", in O(log n) per send and
// per persisted record, where walking the acceptance order from the start
// on every send cost O(n) (O(n²) per run).
//
// It holds events by position in acceptance order (first persistence),
// with the running maximum of their sequence numbers, and open: a min-heap
// of the positions whose record was set non-terminal. A position that has
// turned terminal since leaves the heap when it reaches the top, so the
// top is the first non-terminal position.
type strictOrder struct {
	maxSeq   []uint64          // maxSeq[i]: the largest seq at positions 0..i
	terminal []bool            // the latest record at each position is terminal
	open     minHeap[position] // a superset of the non-terminal positions
	inOpen   []bool            // by position: it is in open
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
	o.inOpen = append(o.inOpen, false)
	return len(o.maxSeq) - 1
}

// reset empties o.
func (o *strictOrder) reset() {
	o.maxSeq, o.terminal, o.inOpen = o.maxSeq[:0], o.terminal[:0], o.inOpen[:0]
	o.open.reset()
}

// set records whether the latest record at position pos is terminal.
func (o *strictOrder) set(pos int, terminal bool) {
	o.terminal[pos] = terminal
	if !terminal && !o.inOpen[pos] {
		o.inOpen[pos] = true
		o.open.push(position(pos))
	}
}

// first returns the first non-terminal position, or -1 if there is none.
func (o *strictOrder) first() int {
	for o.open.len() > 0 && o.terminal[o.open.min()] {
		o.inOpen[o.open.pop()] = false
	}
	if o.open.len() == 0 {
		return -1
	}
	return int(o.open.min())
}

// blocker returns the position the walk from the start of the acceptance
// order stops at with a violation: it stops at the first event whose seq
// is at least seq (no violation) or that is not terminal (a violation if
// its seq is below seq). That is the first non-terminal position, top,
// when neither top nor any position before it has a seq at or above seq:
// when the running maximum at top is below seq.
func (o *strictOrder) blocker(seq uint64) (pos int, blocked bool) {
	top := o.first()
	if top < 0 || o.maxSeq[top] >= seq {
		return 0, false
	}
	return top, true
}

// position is a place in acceptance order, ordered first to last.
type position int

func (p position) less(o position) bool { return p < o }

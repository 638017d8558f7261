package invariants

// strictOrder answers the order check's question, "which event accepted
// before this one is not yet delivered or dead?", in O(log n) per send and
// per persisted record, where walking the acceptance order from the start
// on every send cost O(n) (O(n²) per run).
//
// It holds events by position in acceptance order (first persistence),
// the running maximum of their sequence numbers, and where the first
// non-terminal position is: at or after low, which only moves forward
// (every position before it is terminal), or in reopened, a min-heap of
// positions before low whose record became non-terminal again (only a
// broken run has any). A position that becomes terminal leaves the heap
// lazily, when it reaches the top. A correct run never touches the heap:
// low passes each position once, O(n) per run, where a heap of every
// non-terminal position cost O(log n) per event to push and pop.
type strictOrder struct {
	maxSeq   []uint64 // maxSeq[i]: the largest seq at positions 0..i
	terminal []bool   // the latest record at each position is terminal
	low      int      // every position before low is terminal, or in reopened
	inHeap   []bool   // by position, for those before low
	reopened []int    // min-heap of positions before low; a superset of the non-terminal ones
	back     []int    // positions set non-terminal before low since first last ran
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
	o.maxSeq, o.terminal, o.inHeap, o.reopened, o.back = o.maxSeq[:0], o.terminal[:0], o.inHeap[:0], o.reopened[:0], o.back[:0]
	o.low = 0
}

// set records whether the latest record at position pos is terminal.
// (Small enough to be inlined: it runs on every persisted record. A
// position before low goes to the heap at the next first, not here.)
func (o *strictOrder) set(pos int, terminal bool) {
	o.terminal[pos] = terminal
	if !terminal && pos < o.low {
		o.back = append(o.back, pos) // for first to put in the heap
	}
}

// reopen puts pos, before low and set non-terminal, in the heap (it may
// have turned terminal again since: the heap's lazy removal takes it out).
func (o *strictOrder) reopen(pos int) {
	if !o.inHeap[pos] {
		o.inHeap[pos] = true
		o.push(pos)
	}
}

// first returns the first non-terminal position, or -1 if there is none.
func (o *strictOrder) first() int {
	for _, pos := range o.back {
		o.reopen(pos)
	}
	o.back = o.back[:0]
	for len(o.reopened) > 0 && o.terminal[o.reopened[0]] {
		o.inHeap[o.reopened[0]] = false
		o.pop()
	}
	if len(o.reopened) > 0 {
		return o.reopened[0] // before low
	}
	for o.low < len(o.terminal) && o.terminal[o.low] {
		o.low++
	}
	if o.low < len(o.terminal) {
		return o.low
	}
	return -1
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
	top := o.first()
	if top < 0 || o.maxSeq[top] >= seq {
		return 0, false
	}
	return top, true
}

func (o *strictOrder) push(pos int) {
	h := append(o.reopened, pos)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent] <= h[i] {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
	o.reopened = h
}

func (o *strictOrder) pop() {
	h := o.reopened
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
	o.reopened = h
}

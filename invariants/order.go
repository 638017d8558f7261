package invariants

// strictOrder answers the order check's question, "which event accepted
// before this one is not yet delivered or dead?", in O(1) per send and per
// persisted record (amortised), where walking the acceptance order from
// the start on every send cost O(n) (O(n²) per run).
//
// It holds events by position in acceptance order (first persistence),
// with the running maximum of their sequence numbers, and low: every
// position before low is terminal. low moves forward past terminal
// positions as the order check asks for the first non-terminal one. A
// record turns non-terminal again only in a broken run (monotonic reports
// it); low then moves back to it, and walks forward again from there.
type strictOrder struct {
	maxSeq   []uint64 // maxSeq[i]: the largest seq at positions 0..i
	terminal []bool   // the latest record at each position is terminal
	low      int      // every position before low is terminal
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
	return len(o.maxSeq) - 1
}

// reset empties o.
func (o *strictOrder) reset() {
	o.maxSeq, o.terminal, o.low = o.maxSeq[:0], o.terminal[:0], 0
}

// set records whether the latest record at position pos is terminal.
func (o *strictOrder) set(pos int, terminal bool) {
	o.terminal[pos] = terminal
	if !terminal {
		o.low = min(o.low, pos)
	}
}

// first returns the first non-terminal position, or -1 if there is none.
func (o *strictOrder) first() int {
	for o.low < len(o.terminal) && o.terminal[o.low] {
		o.low++
	}
	if o.low == len(o.terminal) {
		return -1
	}
	return o.low
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

package invariants

// names numbers strings 0, 1, 2, ... in order of first sight. The checker
// numbers a run's event IDs once per entry and keeps every piece of
// per-event state in slices indexed by that number, where it looked each
// up in a map keyed by the ID (several string hashes per entry); worker
// names likewise.
type names struct {
	index map[string]int
	list  []string // list[i] is the string numbered i
	// The string last numbered: consecutive entries are mostly about the
	// same event and by the same worker, and comparing two strings costs
	// less than hashing one.
	last     string
	lastPlus int // its number plus one; 0 when there is none (the zero names)
}

// reset forgets every number, keeping the room.
func (n *names) reset() {
	if n.index == nil {
		n.index = map[string]int{}
	}
	clear(n.index)
	clear(n.list) // let the last run's strings go
	n.list = n.list[:0]
	n.last, n.lastPlus = "", 0
}

// of returns the number of s, giving it the next one if it has none.
func (n *names) of(s string) int {
	if n.lastPlus > 0 && s == n.last {
		return n.lastPlus - 1
	}
	if n.index == nil {
		n.reset()
	}
	i, ok := n.index[s]
	if !ok {
		i = len(n.list)
		n.index[s] = i
		n.list = append(n.list, s)
	}
	n.last, n.lastPlus = s, i+1
	return i
}

// lookup returns the number of s without giving it one.
func (n *names) lookup(s string) (int, bool) {
	i, ok := n.index[s]
	return i, ok
}

// grow returns s with at least n elements, those added zero. It relies on
// s's elements past its length being zero (a slice emptied with clear
// before it is cut to length 0, as every user here does).
func grow[T any](s []T, n int) []T {
	switch {
	case n <= len(s):
		return s
	case n <= cap(s):
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}

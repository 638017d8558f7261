package invariants

// names numbers strings 0, 1, 2, ... in order of first sight. The checker
// numbers a run's event IDs once per entry and keeps every piece of
// per-event state in slices indexed by that number, where it looked each
// up in a map keyed by the ID (several string hashes per entry); worker
// names likewise.
type names struct {
	index map[string]int
	list  []string // list[i] is the string numbered i
	// recent holds strings numbered lately, each in the slot its last
	// two bytes pick: a run names its events again and again, and
	// comparing two strings costs a fraction of hashing one. Which
	// strings it holds changes nothing but the cost.
	recent [recentSlots]recentName
}

// recentSlots is a power of two: an array, not a slice sized per use,
// so that picking a slot needs no bounds check.
const recentSlots = 128

type recentName struct {
	s    string
	plus int // its number plus one; 0 for an empty slot
}

// slot picks s's slot in recent from its length and last two bytes, which
// tell apart up to 100 IDs that count in decimal (e001, e002, ...).
func (n *names) slot(s string) *recentName {
	h := len(s)
	if l := len(s); l >= 2 {
		h += int(s[l-1]) + 10*int(s[l-2])
	}
	return &n.recent[h&(recentSlots-1)]
}

// reset forgets every number, keeping the room.
func (n *names) reset() {
	if n.index == nil {
		n.index = map[string]int{}
	}
	clear(n.index)
	clear(n.list) // let the last run's strings go
	n.list = n.list[:0]
	n.recent = [recentSlots]recentName{}
}

// of returns the number of s, giving it the next one if it has none.
func (n *names) of(s string) int {
	r := n.slot(s)
	if r.plus > 0 && r.s == s {
		return r.plus - 1
	}
	return n.index1(s, r)
}

// index1 numbers s by the map, and notes it in its slot r of recent.
func (n *names) index1(s string, r *recentName) int {
	if n.index == nil {
		n.reset()
	}
	i, ok := n.index[s]
	if !ok {
		i = len(n.list)
		n.index[s] = i
		n.list = append(n.list, s)
	}
	*r = recentName{s: s, plus: i + 1}
	return i
}

// lookup returns the number of s without giving it one.
func (n *names) lookup(s string) (int, bool) {
	if r := n.slot(s); r.plus > 0 && r.s == s {
		return r.plus - 1, true
	}
	i, ok := n.index[s]
	return i, ok
}

// roomFor returns s, or an empty slice in its place if s has no room for
// n elements. The store's final records are nearly every event of a run:
// state sized for them at once does not grow by doubling, leaving garbage.
// s must hold nothing that matters (only zero elements, or be replaceable).
func roomFor[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s
	}
	return make([]T, len(s), n)
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
	// Doubled, not by append's quarter for long slices: state that
	// outgrows its room (a run without Final records) is copied O(log n)
	// times, not O(n/4) times over.
	t := make([]T, n, max(n, 2*cap(s), 8))
	copy(t, s)
	return t
}

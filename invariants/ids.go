package invariants

import "slices"

// names numbers strings 0, 1, 2, ... in order of first sight. The checker
// numbers a run's event IDs and worker names, and keeps what it follows of
// each in a slice indexed by that number.
type names struct {
	list  []string       // list[i] is the string numbered i
	index map[string]int // the number of every string in list
}

// reset forgets every number, with room for about size strings.
func (n *names) reset(size int) {
	n.list = slices.Grow(n.list[:0], size)
	n.index = make(map[string]int, size)
}

// of returns the number of s, giving it the next one if it has none; isNew
// reports that it did.
func (n *names) of(s string) (i int, isNew bool) {
	if i, ok := n.index[s]; ok {
		return i, false
	}
	i = len(n.list)
	n.list = append(n.list, s)
	n.index[s] = i
	return i, true
}

// lookup returns the number of s without giving it one.
func (n *names) lookup(s string) (int, bool) {
	i, ok := n.index[s]
	return i, ok
}

package invariants

import "unsafe"

// names numbers strings 0, 1, 2, ... in order of first sight. The checker
// numbers a run's event IDs once per entry and keeps every piece of
// per-event state in slices indexed by that number, where it looked each
// up in a map keyed by the ID (several string hashes per entry); worker
// names likewise.
//
// The numbers live in recent, a table with one string per slot, the slot
// picked from the string's length and last bytes: a run names its events
// again and again, and comparing two strings costs a fraction of hashing
// one. While no two strings have met in a slot, recent holds every string
// numbered, and a string not in its slot is new: no map is needed at all,
// which is the case of a simulated run's IDs (e001, e002, ...). The first
// time two meet, index is built from list and from then on answers for the
// strings recent lost.
type names struct {
	list   []string // list[i] is the string numbered i
	recent []recentName
	mask   int            // len(recent) - 1
	index  map[string]int // every string numbered, once indexed is set
	// indexed: two strings met in a slot of recent, which no longer holds
	// every string numbered.
	indexed bool
	// last is the string judge numbered last (see numberedLast), emptied
	// by reset: a string's number stays its own until then.
	last recentName
}

type recentName struct {
	s    string
	plus int // its number plus one; 0 for an empty slot
}

// Bounds of recent's length, a power of two. It starts small, so that a
// checker of a short log clears and allocates little, and doubles while it
// holds more than half as many strings as slots, up to recentMax.
const (
	recentMin = 8
	recentMax = 1024
)

// slot returns the index of s's slot in recent, from its length and last
// three bytes, which tell apart up to 1000 IDs that count in decimal (e001,
// e002, ...): consecutive numbers pick consecutive slots.
func (n *names) slot(s string) int {
	h := len(s)
	if l := len(s); l >= 3 {
		h += int(s[l-1]) + 10*int(s[l-2]) + 100*int(s[l-3])
	}
	return h & n.mask
}

// ready gives n its table, which cached needs.
func (n *names) ready() {
	if n.recent == nil {
		n.recent, n.mask = make([]recentName, recentMin), recentMin-1
	}
}

// reset forgets every number, keeping the room.
func (n *names) reset() {
	n.ready()
	// Every string recent holds is in list, in its slot: emptying those
	// slots empties recent, at the cost of the run's strings, not of the
	// largest table an earlier run needed.
	for _, s := range n.list {
		n.recent[n.slot(s)] = recentName{}
	}
	clear(n.list) // let the last run's strings go
	n.last = recentName{}
	n.list = n.list[:0]
	if n.indexed {
		clear(n.index)
		n.indexed = false
	}
}

// cached returns the number of s if its slot holds this very string (the
// same bytes, not merely equal ones), or -1. A log's entries share their
// IDs' bytes with the records and offers they were made from, so this
// settles nearly every lookup without a call, and small enough to be
// inlined: where it returns -1, miss does the rest.
func (n *names) cached(s string) int {
	r := &n.recent[n.slot(s)]
	// same(r.s, s), written out to stay within the inlining budget.
	if len(r.s) == len(s) && unsafe.StringData(r.s) == unsafe.StringData(s) {
		return r.plus - 1 // -1 for an empty slot
	}
	return -1
}

// numberedLast returns the number of s if it is the very string (the same
// bytes) numbered last, or -1: a log names one event, or one worker, in
// several entries in a row, and this settles them with one compare.
func (n *names) numberedLast(s string) int {
	if same(n.last.s, s) {
		return n.last.plus - 1 // -1 while last is empty
	}
	return -1
}

// same reports whether a and b are the same string: the same bytes, not
// merely equal ones. It is inlined, where a == b calls the runtime.
func same(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// of returns the number of s, giving it the next one if it has none.
func (n *names) of(s string) int {
	n.ready()
	if i := n.cached(s); i >= 0 {
		return i
	}
	return n.miss(s)
}

// miss returns the number of s, which cached did not find, giving it the
// next one if it has none, and puts s in its slot.
func (n *names) miss(s string) int {
	r := &n.recent[n.slot(s)]
	if r.plus > 0 && r.s == s {
		return r.plus - 1 // an equal string in other bytes
	}
	if r.plus > 0 && !n.indexed {
		n.buildIndex() // r holds another string, which recent is about to lose
	}
	i, ok := -1, false
	if n.indexed {
		i, ok = n.index[s]
	}
	if !ok {
		i = len(n.list)
		n.list = append(n.list, s)
		if n.indexed {
			n.index[s] = i
		}
	}
	*r = recentName{s: s, plus: i + 1}
	if !n.indexed && len(n.list) > len(n.recent)/2 && len(n.recent) < recentMax {
		n.regrow()
	}
	return i
}

// buildIndex indexes every string numbered so far.
func (n *names) buildIndex() {
	if n.index == nil {
		n.index = make(map[string]int, len(n.list))
	}
	for i, s := range n.list {
		n.index[s] = i
	}
	n.indexed = true
}

// regrow doubles recent and puts every string numbered in its new slot.
// Should two meet there, the index takes over.
func (n *names) regrow() {
	n.recent = make([]recentName, 2*len(n.recent))
	n.mask = len(n.recent) - 1
	for i, s := range n.list {
		r := &n.recent[n.slot(s)]
		if r.plus > 0 && !n.indexed {
			n.buildIndex()
		}
		*r = recentName{s: s, plus: i + 1}
	}
}

// lookup returns the number of s without giving it one.
func (n *names) lookup(s string) (int, bool) {
	if len(n.recent) == 0 {
		return 0, false
	}
	if r := &n.recent[n.slot(s)]; r.plus > 0 && r.s == s {
		return r.plus - 1, true
	}
	if !n.indexed {
		return 0, false // recent holds every string numbered
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

// growAhead is grow, with room for up to n more elements where s has it
// already: a run numbers its events one miss at a time, and growing its
// state by one on each cost more than the misses themselves. Never past
// s's capacity (no allocation grow would not make) nor twice n (a run's
// cost stays its own).
func growAhead[T any](s []T, n int) []T {
	return grow(s, max(n, min(2*n, cap(s))))
}

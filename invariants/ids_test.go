package invariants

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNamesNumberInOrderOfFirstSight: names gives the numbers a plain map
// would, 0, 1, 2, ... in order of first sight, whatever its recent slots
// hold: strings that share a slot (the same last three bytes and length,
// or lengths that differ by the slot count), empty and one-byte strings,
// equal strings in other bytes, repeats near and far, more strings than
// slots, across resets.
func TestNamesNumberInOrderOfFirstSight(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := []string{"", "a", "b", "ab", "ba", "e001", "e101", "x001", "e002", "e0001"}
	for i := range 700 {
		pool = append(pool, fmt.Sprintf("e%03d", i), fmt.Sprintf("id-%d-%d", rng.IntN(5), i%10))
	}
	pool = append(pool, string(make([]byte, recentMax)), string(make([]byte, 2*recentMax)))
	var n names
	for round := range 20 {
		n.reset()
		want := map[string]int{}
		for range 2000 {
			s := pool[rng.IntN(len(pool))]
			if rng.IntN(3) == 0 { // a run of the same string
				s = pool[rng.IntN(4)]
			}
			if rng.IntN(4) == 0 { // equal, but not the same bytes
				s = strings.Clone(s)
			}
			w, ok := want[s]
			if !ok {
				w = len(want)
				want[s] = w
			}
			if got := n.of(s); got != w {
				t.Fatalf("round %d: %q numbered %d, want %d", round, s, got, w)
			}
			if got, ok := n.lookup(s); !ok || got != w || n.list[got] != s {
				t.Fatalf("round %d: lookup(%q) = %d, %v; list has %q", round, s, got, ok, n.list[got])
			}
		}
		for s, w := range want { // most no longer in their slot
			if got, ok := n.lookup(s); !ok || got != w {
				t.Fatalf("round %d: lookup(%q) = %d, %v at the end, want %d", round, s, got, ok, w)
			}
		}
		if _, ok := n.lookup("never"); ok {
			t.Fatal("lookup numbered a string never seen")
		}
	}
}

// TestGrowAddsZeros: grow keeps the elements it has and adds zero ones,
// within the room and beyond it.
func TestGrowAddsZeros(t *testing.T) {
	s := make([]int, 2, 4)
	s[0], s[1] = 7, 8
	s = grow(s, 3)
	if len(s) != 3 || s[0] != 7 || s[1] != 8 || s[2] != 0 {
		t.Fatalf("grow within room: %v", s)
	}
	s = grow(s, 9)
	if len(s) != 9 || s[0] != 7 || s[2] != 0 || s[8] != 0 {
		t.Fatalf("grow beyond room: %v", s)
	}
	if got := grow(s, 1); len(got) != 9 {
		t.Fatalf("grow shrank the slice to %d", len(got))
	}
}

// growAhead gives at least n elements, all zero past the old length, and
// never more than twice n nor a new array where s had the room.
func TestGrowAheadStaysWithinTheRun(t *testing.T) {
	for _, c := range []struct{ len, cap, n int }{{0, 0, 1}, {0, 100000, 10}, {5, 100, 6}, {50, 60, 55}, {8, 8, 9}, {10, 100, 3}} {
		s := make([]int, c.len, c.cap)
		got := growAhead(s, c.n)
		if len(got) < c.n || len(got) > max(2*c.n, c.len) {
			t.Errorf("%+v: length %d", c, len(got))
		}
		if c.n <= c.cap && cap(got) != c.cap {
			t.Errorf("%+v: reallocated (cap %d) though s had the room", c, cap(got))
		}
		for i := c.len; i < len(got); i++ {
			if got[i] != 0 {
				t.Errorf("%+v: element %d not zero", c, i)
			}
		}
	}
}

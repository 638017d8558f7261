// The event queue runs happenings by instant and breaks ties by scheduling order, and the seeded streams are independent per name: checked by scheduling and drawing directly.
package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQueueOrder(t *testing.T) {
	type item struct {
		at   time.Duration
		name string
	}
	same := make([]item, 100)
	sameWant := make([]string, 100)
	for i := range same {
		same[i] = item{time.Second, string(rune('A'+i%26)) + string(rune('a'+i/26))}
		sameWant[i] = same[i].name
	}
	tests := []struct {
		name   string
		reason string
		items  []item
		want   []string
	}{
		{
			name:   "one hundred at one instant",
			reason: "ties run in scheduling order, never in heap order",
			items:  same,
			want:   sameWant,
		},
		{
			name:   "instants first, then scheduling order",
			reason: "an earlier instant runs first whenever it was scheduled",
			items: []item{
				{3 * time.Second, "c1"}, {time.Second, "a1"}, {2 * time.Second, "b1"},
				{time.Second, "a2"}, {3 * time.Second, "c2"}, {2 * time.Second, "b2"}, {time.Second, "a3"},
			},
			want: []string{"a1", "a2", "a3", "b1", "b2", "c1", "c2"},
		},
		{
			name:   "sub-nanosecond apart is not the same",
			reason: "one nanosecond earlier wins even if scheduled last",
			items:  []item{{time.Second, "late"}, {time.Second - 1, "early"}},
			want:   []string{"early", "late"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q queue
			var got []string
			for _, it := range tt.items {
				q.schedule(it.at, func() { got = append(got, it.name) })
			}
			for q.Len() > 0 {
				q.pop().do()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s\nrun order (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

// A happening scheduled while another runs, for the same instant, goes
// after everything already scheduled for that instant: the simulator's
// "at once" never jumps the queue.
func TestQueueScheduleWhileRunning(t *testing.T) {
	var q queue
	var got []string
	at := time.Second
	q.schedule(at, func() {
		got = append(got, "first")
		q.schedule(at, func() { got = append(got, "scheduled by first") })
	})
	q.schedule(at, func() { got = append(got, "second") })
	q.schedule(at+time.Nanosecond, func() { got = append(got, "later") })
	for q.Len() > 0 {
		q.pop().do()
	}
	want := []string{"first", "second", "scheduled by first", "later"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run order (-want +got):\n%s", diff)
	}
}

func draws(seed uint64, name string, n int) []uint64 {
	r := stream(seed, name)
	out := make([]uint64, n)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

func TestStream(t *testing.T) {
	const n = 8
	t.Run("same seed and name repeat", func(t *testing.T) {
		if diff := cmp.Diff(draws(7, "channel", n), draws(7, "channel", n)); diff != "" {
			t.Errorf("a stream must be a function of seed and name (-first +second):\n%s", diff)
		}
	})
	tests := []struct {
		name   string
		reason string
		seedA  uint64
		nameA  string
		seedB  uint64
		nameB  string
	}{
		{"two names, one seed", "adding draws in one fake must not shift another's", 1, "producer", 1, "channel"},
		{"restart and channel", "every part of the world has its own sequence", 1, "restart", 1, "channel"},
		{"two seeds, one name", "the seed decides the run", 1, "channel", 2, "channel"},
		{"name prefix", "names are hashed whole", 1, "chan", 1, "channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := draws(tt.seedA, tt.nameA, n), draws(tt.seedB, tt.nameB, n)
			if cmp.Equal(a, b) {
				t.Errorf("%s: stream(%d, %q) and stream(%d, %q) gave the same %d draws %v", tt.reason, tt.seedA, tt.nameA, tt.seedB, tt.nameB, n, a)
			}
		})
	}
}

func TestBetweenAndChance(t *testing.T) {
	r := stream(1, "test")
	for range 1000 {
		d := between(r, 5*time.Millisecond, 50*time.Millisecond)
		if d < 5*time.Millisecond || d > 50*time.Millisecond {
			t.Fatalf("between(5ms, 50ms) = %v, outside the closed range", d)
		}
	}
	if got := between(r, time.Second, time.Second); got != time.Second {
		t.Errorf("between(1s, 1s) = %v, want 1s", got)
	}
	if got := between(r, time.Second, 0); got != time.Second {
		t.Errorf("between(1s, 0) = %v, want the lower bound 1s", got)
	}

	// chance(0) never fires and draws nothing, so a fault rate of zero
	// leaves the stream where it was.
	a, b := stream(3, "x"), stream(3, "x")
	for range 100 {
		if chance(a, 0) {
			t.Fatal("chance(0) fired")
		}
	}
	if a.Uint64() != b.Uint64() {
		t.Error("chance(0) drew from the stream")
	}
	for range 100 {
		if !chance(a, 1) {
			t.Fatal("chance(1) did not fire")
		}
	}
}

// TestQueueAgainstSort pushes and pops happenings at random, some while
// one is being handled, and holds every pop to the earliest pending one
// by (instant, scheduling order), found by a plain scan.
func TestQueueAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var q queue
	type pend struct {
		at  time.Duration
		seq int
	}
	var want []pend
	seq, popped := 0, 0
	schedule := func(at time.Duration) {
		seq++
		id := seq
		want = append(want, pend{at, id})
		q.schedule(at, func() { popped = id })
	}
	var now time.Duration
	for step := range 100_000 {
		if len(want) == 0 || r.IntN(2) == 0 {
			schedule(now + time.Duration(r.Int64N(50))) // few instants: many ties
			continue
		}
		first := 0
		for i, p := range want {
			if p.at < want[first].at || p.at == want[first].at && p.seq < want[first].seq {
				first = i
			}
		}
		w := want[first]
		want = slices.Delete(want, first, first+1)
		h := q.pop()
		h.do()
		if got := h.at; got != w.at || popped != w.seq {
			t.Fatalf("step %d: popped (%v, %d), want (%v, %d)", step, got, popped, w.at, w.seq)
		}
		now = w.at
	}
}

// TestQueueWakesAgainstSort schedules happenings and nodes' wakes at
// random, moves and removes wakes, and holds every pop to the earliest
// pending one by (instant, scheduling order), found by a plain scan: a
// moved wake goes after everything scheduled before the move, and a node
// never has two.
func TestQueueWakesAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var q queue
	nodes := make([]*node, 4)
	for i := range nodes {
		nodes[i] = &node{idx: i}
	}
	type pend struct {
		at   time.Duration
		seq  int
		node int // -1: not a wake
	}
	var want []pend
	seq, popped := 0, 0
	dropWake := func(k int) {
		want = slices.DeleteFunc(want, func(p pend) bool { return p.node == k })
	}
	var now time.Duration
	for step := range 100_000 {
		at := now + time.Duration(r.Int64N(50)) // few instants: many ties
		switch op := r.IntN(8); {
		case op < 2:
			seq++
			id := seq
			want = append(want, pend{at, id, -1})
			q.schedule(at, func() { popped = id })
			continue
		case op < 4:
			k := r.IntN(len(nodes))
			seq++
			dropWake(k)
			want = append(want, pend{at, seq, k})
			q.wake(nodes[k], at)
			continue
		case op < 5:
			k := r.IntN(len(nodes))
			dropWake(k)
			q.cancelWake(nodes[k])
			continue
		}
		if len(want) == 0 {
			continue
		}
		first := 0
		for i, p := range want {
			if p.at < want[first].at || p.at == want[first].at && p.seq < want[first].seq {
				first = i
			}
		}
		w := want[first]
		want = slices.Delete(want, first, first+1)
		h := q.pop()
		switch {
		case h.wake:
			if h.at != w.at || w.node != h.n.idx || h.n.waking {
				t.Fatalf("step %d: popped the wake of node %d at %v (still waking: %v), want %+v", step, h.n.idx, h.at, h.n.waking, w)
			}
		default:
			h.do()
			if h.at != w.at || popped != w.seq || w.node != -1 {
				t.Fatalf("step %d: popped (%v, %d), want %+v", step, h.at, popped, w)
			}
		}
		if q.Len() != len(want) {
			t.Fatalf("step %d: %d pending, want %d", step, q.Len(), len(want))
		}
		now = w.at
	}
}

// The heap test holds heap.down, which sifts Floyd's way (the hole to a
// leaf, then the entry back up), to the plain sift-down by swaps it
// replaced: under random pushes, removals and key changes, both heaps
// hold the same entries at the same places after every operation. The
// machine walks heap items in places (parking and releasing a backlog),
// so not only the order of the tops must agree, the layout must too.
package machine

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

var heapEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// plainDown is heap.down as it was: swap with the lesser child while that
// child is less.
func plainDown(h *heap, i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// plainRemove and plainFix are remove and fix over plainDown.
func plainRemove(h *heap, e *entry) {
	i := int(*h.pos(e))
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	if i != last {
		plainDown(h, i)
		h.up(i)
	}
	*h.pos(e) = -1
	if h.q != inNone {
		e.where = inNone
	}
}

func plainFix(h *heap, e *entry) {
	i := int(*h.pos(e))
	plainDown(h, i)
	h.up(i)
}

func TestHeapDownMatchesPlainSiftDown(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.SampledFrom([]key{byNextAt, bySeq, byAccepted}).Draw(t, "key")
		q := rapid.SampledFrom([]queue{inNone, inFuture}).Draw(t, "queue")
		fast, plain := &heap{key: k, q: q}, &heap{key: k, q: q}
		// Each entry has a twin in the plain heap: the heaps record
		// positions in their entries.
		var in, twins []*entry
		seq := uint64(0)
		instant := func(t *rapid.T, label string) time.Time {
			return heapEpoch.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, label)) * time.Second) // few instants: ties by Seq
		}
		same := func(t *rapid.T, op string) {
			if len(fast.items) != len(plain.items) {
				t.Fatalf("after %s: %d items, the plain heap %d", op, len(fast.items), len(plain.items))
			}
			for i := range fast.items {
				if fast.items[i].rec.Seq != plain.items[i].rec.Seq || int(*fast.pos(fast.items[i])) != i {
					t.Fatalf("after %s: place %d holds seq %d (at %d), the plain heap seq %d",
						op, i, fast.items[i].rec.Seq, *fast.pos(fast.items[i]), plain.items[i].rec.Seq)
				}
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"push": func(t *rapid.T) {
				seq++
				r := Record{Seq: seq, NextAt: instant(t, "next"), AcceptedAt: instant(t, "accepted")}
				e, twin := newEntry(r), newEntry(r)
				fast.push(e)
				plain.push(twin)
				in, twins = append(in, e), append(twins, twin)
				same(t, "push")
			},
			"remove": func(t *rapid.T) {
				if len(in) == 0 {
					t.Skip("empty")
				}
				j := rapid.IntRange(0, len(in)-1).Draw(t, "which")
				fast.remove(in[j])
				plainRemove(plain, twins[j])
				in, twins = append(in[:j], in[j+1:]...), append(twins[:j], twins[j+1:]...)
				same(t, "remove")
			},
			"fix": func(t *rapid.T) {
				if len(in) == 0 {
					t.Skip("empty")
				}
				j := rapid.IntRange(0, len(in)-1).Draw(t, "which")
				at := instant(t, "moved")
				in[j].rec.NextAt, in[j].rec.AcceptedAt = at, at
				twins[j].rec.NextAt, twins[j].rec.AcceptedAt = at, at
				fast.fix(in[j])
				plainFix(plain, twins[j])
				same(t, "fix")
			},
		})
	})
}

// minHeap pops what it was given in sorted order, whatever the order and
// repeats of the pushes, and pops interleaved with pushes.
package invariants

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMinHeapPopsInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var h minHeap[item]
		var model []int // what h holds, sorted
		for range rng.IntN(100) {
			if h.len() > 0 && rng.IntN(3) == 0 {
				got, want := int(h.pop()), model[0]
				model = model[1:]
				if got != want {
					t.Fatalf("trial %d: pop = %d, want %d", trial, got, want)
				}
				continue
			}
			x := rng.IntN(20)
			h.push(item(x))
			model = append(model, x)
			slices.Sort(model)
			if int(h.min()) != model[0] {
				t.Fatalf("trial %d: min = %d after pushing %d, want %d", trial, h.min(), x, model[0])
			}
		}
		for len(model) > 0 {
			if got := int(h.pop()); got != model[0] {
				t.Fatalf("trial %d: pop = %d, want %d", trial, got, model[0])
			}
			model = model[1:]
		}
		if h.len() != 0 {
			t.Fatalf("trial %d: %d left after popping everything", trial, h.len())
		}
	}
}

// item is an int for minHeap.
type item int

//lint:ignore U1000 used through minHeap's type constraint, which staticcheck does not follow
func (i item) less(o item) bool { return i < o }

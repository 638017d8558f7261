// The ring test proves that the idempotency window's queue gives back what
// it was given, in order, against a slice as the model, under random
// pushes and pops: enough of them to wrap around and to grow while the
// oldest item is not at the start of the buffer.
package machine

import (
	"testing"

	"pgregory.net/rapid"
)

func TestRingAgainstSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r ring[int]
		var model []int
		next := 0
		t.Repeat(map[string]func(*rapid.T){
			"push": func(t *rapid.T) {
				for range rapid.IntRange(1, 40).Draw(t, "n") {
					r.push(next)
					model = append(model, next)
					next++
				}
			},
			"pop": func(t *rapid.T) {
				for range rapid.IntRange(1, 40).Draw(t, "n") {
					if len(model) == 0 {
						return
					}
					if got := r.pop(); got != model[0] {
						t.Fatalf("pop: got %d, want %d", got, model[0])
					}
					model = model[1:]
				}
			},
			"": func(t *rapid.T) {
				if r.len() != len(model) {
					t.Fatalf("len: got %d, want %d", r.len(), len(model))
				}
				if len(model) > 0 && r.front() != model[0] {
					t.Fatalf("front: got %d, want %d", r.front(), model[0])
				}
			},
		})
	})
}

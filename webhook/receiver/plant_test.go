//go:build plant

// This file proves that the planted bug KitNoDedup makes the memory store
// apply an ID again, and that without it the second Begin is a duplicate.
package receiver_test

import (
	"testing"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/webhook/receiver"
)

func TestKitNoDedup(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		bug  plant.Bug
		want receiver.Verdict
	}{{"", receiver.Duplicate}, {plant.KitNoDedup, receiver.Apply}} {
		restore, err := plant.Set(c.bug)
		if err != nil {
			t.Fatal(err)
		}
		m := receiver.NewMemory()
		k := receiver.Key{ID: "evt_1"}
		claim, v, err := m.Begin(t.Context(), k, now, time.Hour)
		if err != nil || v != receiver.Apply {
			t.Fatalf("first Begin: %v, %v", v, err)
		}
		if err := claim.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, v, err = m.Begin(t.Context(), k, now.Add(time.Second), time.Hour)
		restore()
		if err != nil || v != c.want {
			t.Errorf("bug %q: second Begin is %v (%v), want %v", c.bug, v, err, c.want)
		}
	}
}

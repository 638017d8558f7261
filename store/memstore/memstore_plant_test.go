//go:build plant

// The planted SkipFencing bug lets a stale lease's Save through, and
// without it the same Save is refused (a plant build only).
package memstore_test

import (
	"errors"
	"testing"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// TestSkipFencing: the planted bug lets a stale lease's Save through;
// without it the same Save is refused.
func TestSkipFencing(t *testing.T) {
	for _, c := range []struct {
		name    string
		bug     plant.Bug
		wantErr error
	}{
		{"fenced", "", store.ErrStaleLease},
		{"planted", plant.SkipFencing, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			restore, err := plant.Set(c.bug)
			if err != nil {
				t.Fatal(err)
			}
			defer restore()
			ctx := t.Context()
			s, clock := newStore(t)
			enqueue(t, s, "s", "e1")
			old := acquire(t, s, "s", "zombie")
			rec := pending(t, s, old)[0]
			clock.Advance(ttl)
			acquire(t, s, "s", "w2")

			rec.Attempts = 1
			err = s.Save(ctx, old, []machine.Record{rec})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("stale Save: error = %v, want %v", err, c.wantErr)
			}
			want := 0
			if c.wantErr == nil {
				want = 1
			}
			if got := get(t, s, "e1").Attempts; got != want {
				t.Errorf("attempts after the stale Save = %d, want %d", got, want)
			}
		})
	}
}

package machine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/courierlab/courier/machine"
)

// TestRecoverOrderFree: Recover takes the store's records in any order.
// Records in Seq order and the same records shuffled make the same
// machine and the same batch, and Recover does not reorder the caller's
// slice.
func TestRecoverOrderFree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := machine.DefaultConfig()
		n := rapid.IntRange(0, 20).Draw(t, "records")
		seqs := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 40), n, n, func(s uint64) uint64 { return s }).Draw(t, "seqs")
		slices.Sort(seqs)
		sorted := make([]machine.Record, n)
		for i, seq := range seqs {
			r := machine.Record{
				ID: fmt.Sprintf("e%d", i), Seq: seq, Payload: []byte("p"),
				AcceptedAt: epoch.Add(time.Duration(rapid.IntRange(-5000, 0).Draw(t, "accepted")) * time.Millisecond),
				State:      machine.State(rapid.IntRange(int(machine.Pending), int(machine.Delivered)).Draw(t, "state")),
				Attempts:   rapid.IntRange(0, cfg.MaxAttempts+1).Draw(t, "attempts"),
				NextAt:     epoch.Add(time.Duration(rapid.IntRange(-5000, 5000).Draw(t, "next")) * time.Millisecond),
			}
			if r.State == machine.Pending {
				r.Attempts = 0
			}
			sorted[i] = r
		}
		shuffled := slices.Clone(sorted)
		rapid.Permutation(shuffled).Draw(t, "order")
		before := slices.Clone(shuffled)

		m1, b1, err1 := machine.Recover(cfg, epoch, sorted)
		m2, b2, err2 := machine.Recover(cfg, epoch, shuffled)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("Recover: error %v in order, %v shuffled", err1, err2)
		}
		if err1 != nil {
			return
		}
		if diff := gocmp.Diff(b1, b2); diff != "" {
			t.Fatalf("Recover: batch (-in order +shuffled):\n%s", diff)
		}
		if diff := gocmp.Diff(m1.Records(), m2.Records()); diff != "" {
			t.Fatalf("Recover: records (-in order +shuffled):\n%s", diff)
		}
		if m1.Circuit() != m2.Circuit() || m1.Queued() != m2.Queued() {
			t.Fatalf("Recover: circuit %v/%v, queued %d/%d", m1.Circuit(), m2.Circuit(), m1.Queued(), m2.Queued())
		}
		if diff := gocmp.Diff(before, shuffled); diff != "" {
			t.Fatalf("Recover reordered the caller's records:\n%s", diff)
		}
	})
}

// TestRecoverTieInOrder: records in order but for a shared Seq are
// refused, naming the two IDs that share it.
func TestRecoverTieInOrder(t *testing.T) {
	rec := func(id string, seq uint64) machine.Record {
		return machine.Record{ID: id, Seq: seq, State: machine.Pending, AcceptedAt: epoch, NextAt: epoch}
	}
	_, _, err := machine.Recover(machine.DefaultConfig(), epoch, []machine.Record{rec("a", 1), rec("b", 2), rec("c", 2)})
	if want := `machine: bad record: "b" and "c" share seq 2`; err == nil || err.Error() != want {
		t.Fatalf("Recover: error %v; want %s", err, want)
	}
}

package worker

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// TestUpdatesAreUpdateOf holds updates, which builds each update field by
// field into a list it reuses, to the plain version: store.UpdatesOf of the
// batch, with the answer's outcome on the records at the answered attempt
// of the answered ID. Batches of random records, some answering, follow
// one another on one worker, longer and shorter, so that a reused update
// keeps nothing of an earlier batch's (an outcome above all).
func TestUpdatesAreUpdateOf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var w Worker
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for range rapid.IntRange(1, 6).Draw(t, "batches") {
			n := rapid.IntRange(1, 8).Draw(t, "records")
			recs := make([]machine.Record, n)
			for i := range recs {
				recs[i] = machine.Record{
					ID:       fmt.Sprintf("e%d", rapid.IntRange(0, 3).Draw(t, "id")),
					Seq:      uint64(i + 1),
					State:    machine.State(rapid.IntRange(0, 5).Draw(t, "state")),
					Reason:   machine.DeadReason(rapid.IntRange(0, 3).Draw(t, "reason")),
					Attempts: rapid.IntRange(0, 3).Draw(t, "attempts"),
					NextAt:   epoch.Add(time.Duration(rapid.IntRange(0, 1000).Draw(t, "next")) * time.Millisecond),
					Payload:  []byte("payload"),
				}
			}
			var ans *answer
			if rapid.Bool().Draw(t, "answers") {
				ans = &answer{
					id:      fmt.Sprintf("e%d", rapid.IntRange(0, 3).Draw(t, "answered")),
					outcome: store.Outcome{Attempt: rapid.IntRange(0, 3).Draw(t, "attempt"), Status: 503, Detail: "down"},
				}
			}
			want := store.UpdatesOf(recs)
			for i := range want {
				if ans != nil && want[i].ID == ans.id && want[i].Attempts == ans.outcome.Attempt {
					want[i].Outcome = &ans.outcome
				}
			}
			if diff := cmp.Diff(want, w.updates(recs, ans)); diff != "" {
				t.Fatalf("updates differ from UpdatesOf (-want +got):\n%s", diff)
			}
		}
	})
}

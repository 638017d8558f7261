// Each worker event kind maps to the observations the package doc lists,
// and the kinds a recorder logs from elsewhere map to none: checked kind by
// kind with cmp.Diff.
package observe_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
	"github.com/courierlab/courier/worker/observe"
)

func TestWorker(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	r1 := machine.Record{ID: "e1", Seq: 1, State: machine.Pending, Attempts: 1}
	r2 := machine.Record{ID: "e2", Seq: 2, State: machine.Parked}
	tests := []struct {
		name string
		ev   worker.Event
		want []invariants.Entry
	}{
		{"persisted", worker.Event{Kind: worker.Persisted, Token: 3, Records: []machine.Record{r1, r2}}, []invariants.Entry{
			{At: at, Kind: invariants.Persisted, Worker: "w", Token: 3, ID: "e1", Seq: 1, Record: r1},
			{At: at, Kind: invariants.Persisted, Worker: "w", Token: 3, ID: "e2", Seq: 2, Record: r2},
		}},
		{"sent", worker.Event{Kind: worker.Sent, Token: 3, ID: "e1", Seq: 1, Attempt: 2}, []invariants.Entry{
			{At: at, Kind: invariants.Sent, Worker: "w", Token: 3, ID: "e1", Seq: 1, Attempt: 2},
		}},
		{"probed", worker.Event{Kind: worker.Probed, Token: 3, Detail: "4"}, []invariants.Entry{
			{At: at, Kind: invariants.Probed, Worker: "w", Detail: "4"},
		}},
		{"replied with a hint", worker.Event{Kind: worker.Replied, ID: "e1", Attempt: 2,
			Outcome: channel.Outcome{Result: machine.OutcomeFailed, RetryAfter: time.Second, Status: 503}}, []invariants.Entry{
			{At: at, Kind: invariants.Replied, Worker: "w", ID: "e1", Attempt: 2, Detail: "failed", RetryAfter: time.Second},
		}},
		{"probe healthy", worker.Event{Kind: worker.ProbeReplied, Detail: "4", Outcome: channel.Outcome{Result: machine.OutcomeDelivered}}, []invariants.Entry{
			{At: at, Kind: invariants.ProbeReplied, Worker: "w", Attempt: 4, Detail: "healthy"},
		}},
		{"probe unhealthy", worker.Event{Kind: worker.ProbeReplied, Detail: "5", Outcome: channel.Outcome{Result: machine.OutcomeTimedOut}}, []invariants.Entry{
			{At: at, Kind: invariants.ProbeReplied, Worker: "w", Attempt: 5, Detail: "unhealthy"},
		}},
		{"circuit", worker.Event{Kind: worker.CircuitChanged, Circuit: machine.Open}, []invariants.Entry{
			{At: at, Kind: invariants.CircuitChanged, Worker: "w", Circuit: machine.Open},
		}},
		{"adopted", worker.Event{Kind: worker.Adopted, ID: "e2", Seq: 2}, []invariants.Entry{
			{At: at, Kind: invariants.Adopted, Worker: "w", ID: "e2", Seq: 2},
		}},
		{"rebuilt", worker.Event{Kind: worker.Rebuilt, Circuit: machine.Open, Records: []machine.Record{r2}}, []invariants.Entry{
			{At: at, Kind: invariants.Restarted, Worker: "w", Detail: "took over the stream"},
			{At: at, Kind: invariants.CircuitChanged, Worker: "w", Circuit: machine.Open},
		}},
		{"lease granted", worker.Event{Kind: worker.LeaseGranted, Token: 3}, nil},
		{"lease dropped by the worker's clock", worker.Event{Kind: worker.LeaseLost, Token: 3, Detail: "ran out"}, []invariants.Entry{
			{At: at, Kind: invariants.LeaseDropped, Worker: "w", Token: 3, Detail: "ran out"},
		}},
		{"lease refused by the store", worker.Event{Kind: worker.LeaseLost, Token: 3, Err: errors.New("stale")}, nil},
		{"store failed", worker.Event{Kind: worker.StoreFailed, Op: "Save", Err: errors.New("down")}, nil},
		{"reply dropped", worker.Event{Kind: worker.ReplyDropped, ID: "e1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ev.At = at
			got := observe.Worker(nil, "w", tt.ev)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

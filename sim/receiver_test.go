// The fake receiver deduplicates, fences, and fails poison and stubborn events as its config says: checked by driving each fake directly.
package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

func TestReceiver(t *testing.T) {
	type delivery struct {
		id  string
		seq uint64
	}
	type got struct {
		Verdicts []string
		Order    []string
		Applied  map[string]int
		Dups     int
		Fenced   int
	}
	tests := []struct {
		name       string
		reason     string
		cfg        Receiver
		bug        plant.Bug // planted bug switched on for the row
		deliveries []delivery
		want       got
	}{
		{
			name:       "dedup",
			reason:     "a second delivery of an applied ID is discarded as a duplicate and counted",
			deliveries: []delivery{{"e1", 1}, {"e1", 1}, {"e2", 2}, {"e1", 1}},
			want: got{
				Verdicts: []string{"applied", "duplicate", "applied", "duplicate"},
				Order:    []string{"e1", "e2"},
				Applied:  map[string]int{"e1": 1, "e2": 1},
				Dups:     2,
			},
		},
		{
			name:       "no fence applies out of order",
			reason:     "without Fence the receiver applies any new ID, whatever its seq",
			deliveries: []delivery{{"e2", 2}, {"e1", 1}},
			want: got{
				Verdicts: []string{"applied", "applied"},
				Order:    []string{"e2", "e1"},
				Applied:  map[string]int{"e1": 1, "e2": 1},
			},
		},
		{
			name:       "fence",
			reason:     "with Fence a seq at or below the highest applied is refused, and later seqs still apply",
			cfg:        Receiver{Fence: true},
			deliveries: []delivery{{"e1", 1}, {"e3", 3}, {"e2", 2}, {"e4", 4}, {"e0", 3}},
			want: got{
				Verdicts: []string{"applied", "applied", "fenced", "applied", "fenced"},
				Order:    []string{"e1", "e3", "e4"},
				Applied:  map[string]int{"e1": 1, "e3": 1, "e4": 1},
				Fenced:   2,
			},
		},
		{
			name:       "dedup before fence",
			reason:     "a redelivery of an applied ID is a duplicate (acknowledged), not fenced (refused)",
			cfg:        Receiver{Fence: true},
			deliveries: []delivery{{"e1", 1}, {"e2", 2}, {"e1", 1}},
			want: got{
				Verdicts: []string{"applied", "applied", "duplicate"},
				Order:    []string{"e1", "e2"},
				Applied:  map[string]int{"e1": 1, "e2": 1},
				Dups:     1,
			},
		},
		{
			name:       "poison",
			reason:     "a poison ID fails every delivery and is never applied",
			cfg:        Receiver{Poison: []string{"e2"}},
			deliveries: []delivery{{"e1", 1}, {"e2", 2}, {"e2", 2}, {"e3", 3}, {"e2", 2}},
			want: got{
				Verdicts: []string{"applied", "poison", "poison", "applied", "poison"},
				Order:    []string{"e1", "e3"},
				Applied:  map[string]int{"e1": 1, "e3": 1},
			},
		},
		{
			name:       "stubborn",
			reason:     "a stubborn ID fails its first Failures deliveries, then applies once",
			cfg:        Receiver{Stubborn: []Stubborn{{ID: "e1", Failures: 2}, {ID: "e2", Failures: 0}}},
			deliveries: []delivery{{"e1", 1}, {"e2", 2}, {"e1", 1}, {"e1", 1}, {"e1", 1}},
			want: got{
				Verdicts: []string{"stubborn", "applied", "stubborn", "applied", "duplicate"},
				Order:    []string{"e2", "e1"},
				Applied:  map[string]int{"e1": 1, "e2": 1},
				Dups:     1,
			},
		},
		{
			name:       "NoDedup applies twice",
			reason:     "the planted bug: every delivery is applied, duplicates included",
			bug:        plant.ReceiverNoDedup,
			deliveries: []delivery{{"e1", 1}, {"e1", 1}, {"e2", 2}},
			want: got{
				Verdicts: []string{"applied", "applied", "applied"},
				Order:    []string{"e1", "e1", "e2"},
				Applied:  map[string]int{"e1": 2, "e2": 1},
			},
		},
		{
			name:       "NoDedup with Fence",
			reason:     "the fence still refuses a repeated seq when deduplication is off",
			cfg:        Receiver{Fence: true},
			bug:        plant.ReceiverNoDedup,
			deliveries: []delivery{{"e1", 1}, {"e1", 1}},
			want: got{
				Verdicts: []string{"applied", "fenced"},
				Order:    []string{"e1"},
				Applied:  map[string]int{"e1": 1},
				Fenced:   1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switchOn(t, tt.bug)
			r := newReceiver(tt.cfg, receiverIDs, 1)
			var g got
			for _, d := range tt.deliveries {
				v := r.deliver(0, slices.Index(receiverIDs, d.id), d.seq)
				g.Verdicts = append(g.Verdicts, v.String())
			}
			g.Order, g.Applied, g.Dups, g.Fenced = r.order, appliedByID(r), r.dups, r.fenced
			if r.distinct != len(g.Applied) {
				t.Errorf("the receiver counts %d events applied, but applied %d", r.distinct, len(g.Applied))
			}
			if diff := cmp.Diff(tt.want, g); diff != "" {
				t.Errorf("%s\nreceiver (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

// receiverIDs is the workload TestReceiver's receivers serve: "e0" is
// last, as the index an ID names is one less than its number.
var receiverIDs = []string{"e1", "e2", "e3", "e4", "e0"}

// appliedByID is what r applied, by ID, as the map it once kept.
func appliedByID(r *receiver) map[string]int {
	m := map[string]int{}
	for i, e := range r.events {
		if e.applied > 0 {
			m[r.ids[i]] = e.applied
		}
	}
	return m
}

// A poison or stubborn ID names an event only if it is the very string of
// one of the workload's: "e01" is not "e001", as with the map by ID the
// receiver once kept; IDs outside the workload name none.
func TestReceiverConfigIDs(t *testing.T) {
	ids := []string{"e001", "e002", "e003"}
	cfg := Receiver{
		Poison:   []string{"e01", "e003", "e4", "x", "e", "e-1", "e000"},
		Stubborn: []Stubborn{{ID: "e1", Failures: 3}, {ID: "e002", Failures: 1}, {ID: "e002", Failures: 2}},
	}
	r := newReceiver(cfg, ids, 1)
	var verdicts []string
	for _, i := range []int{0, 1, 2, 1, 1, 1} {
		verdicts = append(verdicts, r.deliver(0, i, uint64(i+1)).String())
	}
	want := []string{"applied", "stubborn", "poison", "stubborn", "applied", "duplicate"}
	if diff := cmp.Diff(want, verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		id   string
		want int
		ok   bool
	}{
		{"e001", 0, true}, {"e003", 2, true}, {"e1", 0, false}, {"e01", 0, false},
		{"e004", 0, false}, {"e000", 0, false}, {"e", 0, false}, {"001", 0, false}, {"e+01", 0, false},
	} {
		if i, ok := eventOf(ids, tt.id); i != tt.want || ok != tt.ok {
			t.Errorf("eventOf(%q) = %d, %v; want %d, %v", tt.id, i, ok, tt.want, tt.ok)
		}
	}
}

// Each verdict is answered as the sender must read it.
func TestVerdictOutcome(t *testing.T) {
	tests := []struct {
		v      verdict
		reason string
		want   machine.Outcome
	}{
		{applied, "the effect took place", machine.OutcomeDelivered},
		{duplicate, "already applied, so confirmed", machine.OutcomeDelivered},
		{fenced, "the stream moved past it for good", machine.OutcomeRefused},
		{rejectedPoison, "poison fails retryably", machine.OutcomeFailed},
		{rejectedStubborn, "stubborn fails retryably", machine.OutcomeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.v.String(), func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.v.outcome()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	w := Window{From: time.Second, To: 2 * time.Second}
	tests := []struct {
		d    time.Duration
		want bool
	}{
		{time.Second - 1, false},
		{time.Second, true},
		{2*time.Second - 1, true},
		{2 * time.Second, false},
	}
	for _, tt := range tests {
		if got := w.contains(tt.d); got != tt.want {
			t.Errorf("%v.contains(%v) = %v, want %v (half-open span)", w, tt.d, got, tt.want)
		}
	}
	if diff := cmp.Diff("[1s,2s)", w.String()); diff != "" {
		t.Errorf("Window.String (-want +got):\n%s", diff)
	}
}

// This file proves the contract's small pieces of logic: the machine's
// view of a record, the budget a replay starts, and that the outcome
// detail bound is the channel's.
package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

func TestMaxDetailBytesIsTheChannels(t *testing.T) {
	if store.MaxDetailBytes != channel.MaxDetailBytes {
		t.Errorf("store.MaxDetailBytes = %d, channel.MaxDetailBytes = %d; a truncated detail must fit", store.MaxDetailBytes, channel.MaxDetailBytes)
	}
}

func TestMachineViewAndBudget(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r := store.Record{
		Event:    store.Event{Stream: "s", ID: "e1", Seq: 3, Payload: []byte("p"), AcceptedAt: at},
		Delivery: store.Delivery{State: machine.Retry, Attempts: 2, NextAt: at.Add(time.Minute)},
		History: []store.Action{
			{Kind: store.Replayed, At: at.Add(time.Hour)},
			{Kind: store.Discarded, At: at.Add(3 * time.Hour)},
			{Kind: store.Replayed, At: at.Add(2 * time.Hour)},
		},
	}
	want := machine.Record{ID: "e1", Seq: 3, Payload: []byte("p"), AcceptedAt: at.Add(2 * time.Hour), State: machine.Retry, Attempts: 2, NextAt: at.Add(time.Minute)}
	if diff := cmp.Diff(want, r.Machine()); diff != "" {
		t.Errorf("Machine (-want +got):\n%s", diff)
	}
	if r.Replays() != 2 {
		t.Errorf("Replays = %d, want 2", r.Replays())
	}
	r.History = nil
	if !r.BudgetFrom().Equal(at) || r.Replays() != 0 {
		t.Errorf("BudgetFrom, Replays without history = %v, %d; want %v, 0", r.BudgetFrom(), r.Replays(), at)
	}
	u := store.UpdateOf(want)
	if u.ID != "e1" || u.Delivery != (store.Delivery{State: machine.Retry, Attempts: 2, NextAt: at.Add(time.Minute)}) || u.Outcome != nil {
		t.Errorf("UpdateOf = %+v", u)
	}
}

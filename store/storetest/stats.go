package storetest

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// statsBacklog: a store.StatsReader counts the records still to deliver
// (pending, retry, parked) in every stream, leased by anyone or by no
// one, and not the delivered or dead ones; Oldest is the earliest budget
// start among them, so a replayed event counts from its replay, not its
// acceptance; At is the store's now. A store without Stats skips it.
func statsBacklog(e *env) {
	sr, ok := e.s.(store.StatsReader)
	if !ok {
		e.t.Skip("the store does not implement store.StatsReader")
	}
	want := func(what string, backlog int, oldest time.Time) {
		e.t.Helper()
		got, err := sr.Stats(e.ctx)
		if err != nil {
			e.t.Fatalf("Stats %s: %v", what, err)
		}
		w := store.Stats{At: e.clock.Now(), Backlog: backlog, Oldest: oldest}
		if diff := cmp.Diff(w, got); diff != "" {
			e.t.Errorf("Stats %s (-want +got):\n%s", what, diff)
		}
	}
	want("of an empty store", 0, time.Time{})

	t0 := e.clock.Now()
	for i, ev := range []struct{ stream, id string }{{"s1", "a"}, {"s2", "b"}, {"s1", "c"}, {"s3", "d"}, {"s4", "e"}} {
		if i > 0 {
			e.clock.Advance(time.Second)
		}
		e.enqueue(ev.stream, ev.id, "p")
	}
	e.acquire("s3", "w9") // owned by a worker: counted all the same
	want("after five enqueues", 5, t0)

	e.update("s1", "a", func(r *machine.Record) { r.Attempts, r.State = 1, machine.Delivered })
	e.update("s2", "b", func(r *machine.Record) { r.Attempts, r.State, r.NextAt = 1, machine.Retry, t0.Add(time.Hour) })
	e.update("s1", "c", func(r *machine.Record) { r.Attempts, r.State, r.Reason = 1, machine.Dead, machine.Rejected })
	e.update("s4", "e", func(r *machine.Record) { r.State = machine.Parked })
	want("with one delivered, one dead, one in retry, one parked", 3, t0.Add(time.Second))

	e.clock.Advance(6 * time.Second)
	if _, err := e.s.Replay(e.ctx, "c", "op"); err != nil {
		e.t.Fatalf("Replay: %v", err)
	}
	e.update("s2", "b", func(r *machine.Record) { r.Attempts, r.State, r.NextAt = 2, machine.Delivered, t0 })
	// c, accepted before d, counts from its replay: d is the oldest.
	want("after a replay and a delivery", 3, t0.Add(3*time.Second))

	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := sr.Stats(ctx); err == nil {
		e.t.Error("Stats with a cancelled context returned no error")
	}
}

package worker_test

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

// What the worker hands out is the caller's to keep: the Sends and Probes
// of every Effects, and every event its Observer received, Records
// included, read the same at the end of a run as when they were handed
// out, however many batches the worker carried out since, and the last
// Persisted copy of each record is what the store holds. The run fails
// attempts until the circuit opens, probes it, and closes it again, so
// that every kind of list (sends, probes, circuit changes, persists) is
// handed out.
func TestHandedOutListsStayAsHandedOut(t *testing.T) {
	type kept struct {
		fx   worker.Effects // as handed out
		want worker.Effects // a deep copy taken then
	}
	var events, eventsThen []worker.Event
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) {
			p := policy()
			p.Ordering, p.Window, p.BreakerThreshold = machine.Independent, 3, 3
			return p, nil
		}
		c.Observer = worker.ObserverFunc(func(ev worker.Event) {
			events = append(events, ev)
			ev.Records = slices.Clone(ev.Records)
			eventsThen = append(eventsThen, ev)
		})
	})
	for i := range 8 {
		e.enqueue("s", fmt.Sprintf("e%d", i))
	}
	var all []kept
	keep := func(fx worker.Effects) worker.Effects {
		want := worker.Effects{Sends: slices.Clone(fx.Sends), Probes: slices.Clone(fx.Probes)}
		for i := range want.Sends {
			want.Sends[i].Payload = slices.Clone(want.Sends[i].Payload)
		}
		all = append(all, kept{fx, want})
		return fx
	}
	fails := 0
	outcome := func() channel.Outcome {
		if fails++; fails <= 4 {
			return channel.Outcome{Result: machine.OutcomeFailed, Status: 503}
		}
		return delivered()
	}
	probes := 0
	for step := 0; step == 0 || step < 400 && e.w.Owns("s"); step++ {
		e.clock.Advance(max(0, e.w.Next().Sub(e.now())))
		pending := []worker.Effects{keep(e.advance())}
		for len(pending) > 0 {
			fx := pending[0]
			pending = pending[1:]
			e.clock.Advance(time.Millisecond)
			for _, x := range fx.Sends {
				pending = append(pending, keep(e.deliver(x.Reply(outcome()))))
			}
			for _, p := range fx.Probes {
				o := delivered()
				if probes++; probes == 1 {
					o = channel.Outcome{Result: machine.OutcomeFailed, Status: 503}
				}
				pending = append(pending, keep(e.deliver(p.Reply(o))))
			}
		}
	}
	for id := range 8 {
		if r := e.record(fmt.Sprintf("e%d", id)); r.State != machine.Delivered {
			t.Fatalf("e%d is %s at the end of the run, want delivered", id, r.State)
		}
	}
	circuits := 0
	for _, ev := range events {
		if ev.Kind == worker.CircuitChanged {
			circuits++
		}
	}
	if probes < 2 || circuits < 3 {
		t.Fatalf("the run made %d probes and %d circuit changes; it must open the circuit, probe it twice and close it", probes, circuits)
	}
	for i, k := range all {
		if !reflect.DeepEqual(k.fx, k.want) {
			t.Fatalf("effects %d changed after they were handed out:\nthen %+v\nnow  %+v", i, k.want, k.fx)
		}
	}
	last := map[string]machine.Record{} // each event's record as the last Persisted copy holds it
	for i := range events {
		now, then := events[i], eventsThen[i]
		if !reflect.DeepEqual(now, then) {
			t.Fatalf("event %d changed after it was observed:\nthen %+v\nnow  %+v", i, then, now)
		}
		if now.Kind == worker.Persisted {
			for _, r := range now.Records {
				last[r.ID] = r
			}
		}
	}
	for id := range 8 {
		name := fmt.Sprintf("e%d", id)
		got, want := last[name], e.record(name)
		if got.State != want.State || got.Attempts != want.Attempts || got.Seq != want.Seq || !bytes.Equal(got.Payload, want.Payload) {
			t.Fatalf("%s: the last Persisted copy is %+v; the store holds %+v", name, got, want.Machine())
		}
	}
}

// A send carries when its machine started it and the stream's rate
// window, which a driver needs to keep the limit on the wire; a stream
// without a limit has no window.
func TestSendCarriesItsStartAndRateWindow(t *testing.T) {
	for _, per := range []time.Duration{0, 2 * time.Second} {
		e := newEnv(t, func(c *worker.Config) {
			c.Policy = func(string) (machine.Config, error) {
				p := policy()
				p.Ordering = machine.Independent
				if per > 0 {
					p.RateLimit, p.RatePer = 3, per
				}
				return p, nil
			}
		})
		e.enqueue("a", "a1")
		fx := e.advance()
		if per > 0 {
			// A recovered machine counts a full window of starts.
			e.clock.Advance(per)
			fx = e.advance()
		}
		if len(fx.Sends) != 1 {
			t.Fatalf("RatePer %v: want a1's attempt, got %+v", per, fx.Sends)
		}
		if x := fx.Sends[0]; !x.At.Equal(e.now()) || x.RatePer != per {
			t.Errorf("RatePer %v: the send says At %v, RatePer %v; want %v and %v", per, x.At, x.RatePer, e.now(), per)
		}
	}
}

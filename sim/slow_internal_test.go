// Slow store calls hold the world, and what they hold is accounted for: a
// stalled node's wake held late by another node's slow call is told its
// lateness, and the checker's allowances grow by what slow calls may
// cost. Checked on the simulator's parts directly.
package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

// slowWorld is a small valid cluster, with slow calls when slow.
func slowWorld(slow bool) World {
	w := World{
		Policy:    machine.DefaultConfig(),
		Events:    1,
		Producer:  Producer{AckTimeout: time.Second},
		Channel:   Channel{LatencyMin: time.Millisecond, LatencyMax: 10 * time.Millisecond, ClientTimeout: time.Second},
		FaultsEnd: 10 * time.Second,
		Cluster:   Cluster{Workers: 2, LeaseTTL: 2 * time.Second, Poll: 200 * time.Millisecond},
	}
	if slow {
		w.Store.Slow = SlowCalls{Rate: 0.5, Min: 100 * time.Millisecond, Max: 4 * time.Second, Limit: 3}
	}
	return w
}

func newTestSim(t *testing.T, w World) *sim {
	t.Helper()
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := newSim(w, 1, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A node frozen for a second whose wake another node's slow call held
// 1.5 s late is told so: its stale reading moves on by the lateness, as a
// real node's stall does not wait for another process's call.
func TestStallWakeHeldLateIsToldItsLateness(t *testing.T) {
	s := newTestSim(t, slowWorld(true))
	n := s.nodes[0]
	late := time.Duration(-1)
	s.freeze(n, time.Second, func(d time.Duration) { late = d })
	s.q.schedule(500*time.Millisecond, func() { s.hold(2 * time.Second) })
	for s.q.Len() > 0 {
		h := s.pop()
		s.now, s.elapsed = Epoch.Add(h.at), h.at
		s.happen(h)
	}
	if want := 1500 * time.Millisecond; late != want {
		t.Fatalf("the wake was told it came %v late, want %v", late, want)
	}
}

// A slow call makes a call's reading up to Max older and may cost the
// lease it outlived: the checker's Stall and Skew grow by Max, its Slack
// by Limit such costs.
func TestSlowCallsWidenTheCheckersAllowances(t *testing.T) {
	plain, slow := newTestSim(t, slowWorld(false)).runs[0], newTestSim(t, slowWorld(true)).runs[0]
	sc, c := slowWorld(true).Store.Slow, slowWorld(true).Cluster
	if got := slow.Stall - plain.Stall; got != sc.Max {
		t.Errorf("Stall grew by %v, want Max %v", got, sc.Max)
	}
	if got := slow.Skew - plain.Skew; got != sc.Max {
		t.Errorf("Skew grew by %v, want Max %v", got, sc.Max)
	}
	cost := time.Duration(sc.Limit) * (sc.Max + c.LeaseTTL + 2*c.Poll + machine.DefaultConfig().AttemptTimeout)
	if got := slow.Slack - plain.Slack; got != sc.Max+cost {
		t.Errorf("Slack grew by %v, want Max and Limit costs %v", got, sc.Max+cost)
	}
}

// Validate names the slow-call field that is out of range, and refuses a
// secret rotation that drops the old secret before what slow calls may
// hold has passed.
func TestSlowCallsValidated(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*SlowCalls, *World)
		field string
	}{
		{"rate above 1", func(c *SlowCalls, _ *World) { c.Rate = 1.5 }, "Store.Slow.Rate"},
		{"negative min", func(c *SlowCalls, _ *World) { c.Min = -1 }, "Store.Slow.Min"},
		{"max below min", func(c *SlowCalls, _ *World) { c.Max = c.Min - 1 }, "Store.Slow.Max"},
		{"negative limit", func(c *SlowCalls, _ *World) { c.Limit = -1 }, "Store.Slow.Limit"},
		{"a rotation held as if no call were slow", func(c *SlowCalls, w *World) {
			plain := *w
			plain.Store.Slow = SlowCalls{}
			w.HTTP = HTTP{On: true, Rotation: Rotation{Add: time.Second, Switch: 2 * time.Second, Drop: 2*time.Second + plain.RotationHold()}}
		}, "HTTP.Rotation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := slowWorld(true)
			tt.edit(&w.Store.Slow, &w)
			err := w.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field+" ") {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

// A send whose lease ran out, by the worker's clock, while a slow store
// call of its own worker call held the world is not started: the driver
// checks its deadline against the call's reading plus what the call
// took, as courier.Service.send checks it against the clock.
func TestSendPastItsDeadlineAfterASlowCallIsNotStarted(t *testing.T) {
	w := slowWorld(true)
	w.Events = 3
	w.Cluster.Workers = 1
	// Every worker call's first store call takes longer than a lease.
	w.Store.Slow = SlowCalls{Rate: 1, Min: 3 * time.Second, Max: 3 * time.Second, Limit: 1000}
	r, err := Run(w, 1, Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range r.Violations {
		t.Errorf("%s", v)
	}
	for _, line := range r.Trace {
		if strings.Contains(line, "not started: past its lease deadline") {
			return
		}
	}
	t.Fatal("no send was held back, though every claim took longer than its lease")
}

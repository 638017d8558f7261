// This file proves that a recorded serve run is judged by every rule the
// simulator's runs are: a real run on SQLite with a replay and a pause
// passes invariants.Check with the lease-kept and pause rules on
// (leaseRules), and the same log with a violation planted fails by the
// planted violation's rule.
package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
)

// recordedRun runs serve on SQLite with a recorder, replays a dead letter
// and pauses the stream while events wait, and returns the run to judge:
// every observation (the receiver's too) and the store's final content.
func recordedRun(t *testing.T) invariants.Run {
	s := newSink(t)
	rec := &recorder{}
	s.rec = rec
	c, err := ParseConfig(`
api_tokens = ["` + token + `"]
allow_loopback = true
poll = "50ms"
lease_ttl = "2s"
shutdown_timeout = "2s"
[streams.orders]
url = "` + s.srv.URL + `/orders"
secrets = ["` + secret + `"]
base_backoff = "50ms"
max_backoff = "100ms"
max_attempts = 2
`)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen = "127.0.0.1:0"
	c.Database = filepath.Join(t.TempDir(), "courier.db")
	h := &hooks{rec: rec}
	base, stop := startServeHooks(t, c, h)
	state := func(id string) any { return call(t, "GET", base+"/v1/events/"+id, token, "").body["state"] }
	publish := func(id string) {
		if r := call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"`+id+`","payload":1}`); r.status != http.StatusCreated {
			t.Fatalf("publish %s = %d %v", id, r.status, r.body)
		}
	}
	var ids []string
	s.setStatus(http.StatusGone) // dead at once
	publish("r-dead")
	eventually(t, "r-dead dead", func() bool { return state("r-dead") == "dead" })
	s.setStatus(0)
	if r := call(t, "POST", base+"/v1/events/r-dead/replay", token, ""); r.status != http.StatusOK {
		t.Fatalf("replay = %d %v", r.status, r.body)
	}
	ids = append(ids, "r-dead")
	for i := range 5 {
		ids = append(ids, fmt.Sprintf("o-%d", i))
		publish(ids[len(ids)-1])
	}
	for _, id := range ids {
		eventually(t, id+" delivered", func() bool { return state(id) == "delivered" })
	}
	time.Sleep(300 * time.Millisecond) // idle for several polls: the owner gave the stream back
	if r := call(t, "POST", base+"/v1/streams/orders/pause", token, ""); r.status != http.StatusOK {
		t.Fatalf("pause = %d %v", r.status, r.body)
	}
	for i := range 5 {
		ids = append(ids, fmt.Sprintf("p-%d", i))
		publish(ids[len(ids)-1])
	}
	time.Sleep(time.Second) // longer than a renewal: any owner has seen the pause
	for _, id := range ids[len(ids)-5:] {
		if n := s.count(id); n != 0 {
			t.Fatalf("%s applied %d times while the stream was paused", id, n)
		}
	}
	if r := call(t, "POST", base+"/v1/streams/orders/resume", token, ""); r.status != http.StatusOK {
		t.Fatalf("resume = %d %v", r.status, r.body)
	}
	for _, id := range ids {
		eventually(t, id+" delivered", func() bool { return state(id) == "delivered" })
	}
	stop()

	pol := c.Streams["orders"].Policy()
	slack := c.LeaseTTL.Duration + 2*c.Poll.Duration + 5*time.Second // polls, a loaded machine
	run := invariants.Run{Policy: pol, Finished: true, Slack: slack, Skew: 10 * time.Millisecond,
		LivenessBound: invariants.LivenessBound(pol, len(ids), 0, 50*time.Millisecond) + slack}
	leaseRules(&run, c)
	// A grant just before the resume may be kept by an owner that read
	// the pause after it: as long after as this run's owners took.
	run.Stall = rec.grantToPolicy()
	run.Skew += run.Stall
	t.Logf("the owners asked Policy at most %v after a grant (the run's Stall)", run.Stall)
	rec.mu.Lock()
	run.Entries = slices.Clone(rec.run.Entries)
	rec.mu.Unlock()
	st, closeStore := sqliteAt(c.Database)(t)
	defer closeStore()
	for _, id := range ids {
		r, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("final state of %s: %v", id, err)
		}
		run.Final = append(run.Final, r.Machine())
	}
	return run
}

func kindsOf(run invariants.Run) map[invariants.Kind]int {
	n := map[invariants.Kind]int{}
	for _, e := range run.Entries {
		n[e.Kind]++
	}
	return n
}

func TestRecordedRunWithAReplayAndAPausePasses(t *testing.T) {
	run := recordedRun(t)
	if run.ClockMargin != 200*time.Millisecond || run.Recheck != 2*time.Second/3 {
		t.Errorf("ClockMargin %v and Recheck %v; want the workers' defaults for a 2s lease, 200ms and 666ms", run.ClockMargin, run.Recheck)
	}
	n := kindsOf(run)
	if n[invariants.Replayed] != 1 || n[invariants.Paused] != 1 || n[invariants.Resumed] != 1 {
		t.Fatalf("logged %d replays, %d pauses and %d resumes; want 1 each", n[invariants.Replayed], n[invariants.Paused], n[invariants.Resumed])
	}
	vs := invariants.Check(run)
	for _, v := range vs[:min(len(vs), 20)] {
		t.Errorf("invariants.Check: %s", v)
	}
	t.Logf("invariants.Check judged %d observations: %d violations", len(run.Entries), len(vs))
}

// TestRecordedRunWithAPlantedViolationFails plants into the recorded log
// a lease dropped the store still honoured for a whole lease, a send long
// after the pause, and a write under a token the store never granted:
// each is caught by its rule.
func TestRecordedRunWithAPlantedViolationFails(t *testing.T) {
	run := recordedRun(t)
	// The last grant before the pause: its worker owns the stream then.
	paused := slices.IndexFunc(run.Entries, func(e invariants.Entry) bool { return e.Kind == invariants.Paused })
	resumed := slices.IndexFunc(run.Entries, func(e invariants.Entry) bool { return e.Kind == invariants.Resumed })
	grant := slices.IndexFunc(run.Entries, func(e invariants.Entry) bool { return e.Kind == invariants.LeaseGranted })
	if paused < 0 || resumed < paused || grant < 0 {
		t.Fatalf("the log has no grant, pause and resume to plant at (%d, %d, %d)", grant, paused, resumed)
	}
	g, p := run.Entries[grant], run.Entries[paused]
	// p-0's first attempt, started long after the pause by the owner.
	first := slices.IndexFunc(run.Entries, func(e invariants.Entry) bool {
		return e.Kind == invariants.Persisted && e.ID == "p-0" && e.Record.Attempts == 1
	})
	if first < 0 {
		t.Fatal("the log has no first attempt of p-0")
	}
	late := run.Entries[first]
	late.At, late.Worker, late.Token = p.At.Add(run.Recheck+time.Second), g.Worker, g.Token
	send := invariants.Entry{At: late.At, Kind: invariants.Sent, Worker: g.Worker, Token: g.Token, ID: "p-0", Seq: late.Seq, Attempt: 1}
	tests := []struct {
		rule    string
		at      int // the planted entries go before this one
		entries []invariants.Entry
	}{
		{invariants.LeaseKept, grant + 1, []invariants.Entry{{At: g.At, Kind: invariants.LeaseDropped, Worker: g.Worker, Token: g.Token, Detail: "planted"}}},
		{invariants.PauseHeld, resumed, []invariants.Entry{late, send}},
		{invariants.Leases, grant + 1, []invariants.Entry{{At: g.At, Kind: invariants.Persisted, Worker: "ghost", Token: g.Token + 1000,
			ID: run.Final[0].ID, Seq: run.Final[0].Seq, Record: run.Final[0]}}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			planted := run
			planted.Entries = nil
			for i, e := range run.Entries {
				if i == tt.at {
					for _, p := range tt.entries {
						planted.Add(p)
					}
				}
				planted.Add(e)
			}
			for _, v := range invariants.Check(planted) {
				if v.Invariant == tt.rule {
					return
				}
			}
			t.Errorf("the planted %v was not caught by %s", tt.entries[0].Kind, tt.rule)
		})
	}
}

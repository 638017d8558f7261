// This file proves a platform world's bounds: Validate refuses one whose
// streams or events do not match its endpoints, or that mixes in what a
// platform world has not (HTTP, stream pauses), naming the field.
package sim_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/sim"
)

func TestPlatformWorldValidate(t *testing.T) {
	good := func() sim.World {
		w := platformTestWorld()
		return w
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("the good world: %v", err)
	}
	for _, c := range []struct {
		name, field string
		edit        func(*sim.World)
	}{
		{"streams", "Platform.Endpoints", func(w *sim.World) { w.Streams = 3 }},
		{"events", "Platform.Endpoints", func(w *sim.World) { w.Events = 7 }},
		{"pauses", "Platform.Endpoints", func(w *sim.World) { w.Operator.Pauses = []sim.StreamPause{{Stream: 0, From: 0, To: time.Second}} }},
		{"filter", "Platform.Endpoints", func(w *sim.World) { w.Platform.Endpoints[0].EventTypes = []string{"nope"} }},
		{"disables", "Platform.Endpoints", func(w *sim.World) {
			w.Platform.Endpoints[0].Disables = []sim.Window{{From: 2 * time.Second, To: 3 * time.Second}, {From: time.Second, To: 4 * time.Second}}
		}},
		{"replay", "Platform.Replays", func(w *sim.World) { w.Platform.Replays = []sim.BulkReplay{{Endpoint: 2, At: time.Second}} }},
		{"created", "Created", func(w *sim.World) { w.Platform.Endpoints[1].Created = 6 * time.Second }},
		{"disabled before created", "Disables", func(w *sim.World) {
			w.Platform.Endpoints[1].Created = 2 * time.Second
			w.Platform.Endpoints[1].Disables = []sim.Window{{From: time.Second, To: 3 * time.Second}}
		}},
		{"missing before created", "Platform.Missing", func(w *sim.World) {
			w.Platform.Endpoints[1].Created = 2 * time.Second
			w.Platform.Missing = []sim.MissingReplay{{Endpoint: 1, At: time.Second}}
		}},
		{"missing since after at", "Platform.Missing", func(w *sim.World) {
			w.Platform.Missing = []sim.MissingReplay{{Endpoint: 0, At: time.Second, Since: 2 * time.Second}}
		}},
		{"job page", "Platform.Replays", func(w *sim.World) {
			w.Platform.Replays = []sim.BulkReplay{{Endpoint: 0, At: time.Second, All: true, CrashAfter: 1}}
		}},
		{"reject statuses without HTTP", "RejectStatuses", func(w *sim.World) { w.Platform.Endpoints[0].RejectStatuses = []int{422} }},
		{"a reject status the receiver does not answer", "RejectStatuses", func(w *sim.World) {
			w.HTTP = sim.HTTP{On: true, RejectStatus: 503}
			w.Platform.Endpoints[0].RejectStatuses = []int{502}
		}},
		{"health without a re-enable", "Platform.DisableAfter", func(w *sim.World) { w.Platform.DisableAfter = time.Minute }},
		{"health faster than its re-enable", "Platform.DisableAfter", func(w *sim.World) {
			w.Platform.DisableAfter, w.Platform.Reenable = 3*time.Second, 2*time.Second
		}},
		{"gone without HTTP", "Gone", func(w *sim.World) {
			w.Platform.DisableAfter, w.Platform.Reenable = time.Minute, time.Second
			w.Platform.Endpoints[0].Gone = true
		}},
		{"rate limit", "rate_limit", func(w *sim.World) { w.Platform.Endpoints[1].RateLimit = -1 }},
		{"max attempts", "max_attempts", func(w *sim.World) { w.Platform.Endpoints[1].MaxAttempts = 101 }},
		{"backoff below the world's", "MaxBackoff", func(w *sim.World) {
			// The API's check passes (its defaults start at 1s); the
			// stream's policy over the world's base does not.
			w.Policy.BaseBackoff = 2 * time.Second
			w.Platform.Endpoints[1].MaxBackoff = time.Second
		}},
	} {
		w := good()
		c.edit(&w)
		err := w.Validate()
		if !errors.Is(err, sim.ErrInvalidWorld) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v; want sim.ErrInvalidWorld naming %s", c.name, err, c.field)
		}
	}
}

// platformTestWorld is a small platform world: 4 messages to 2 endpoints.
func platformTestWorld() sim.World {
	return sim.World{
		Policy: machine.DefaultConfig(), Events: 8, Streams: 2, Interarrival: 100 * time.Millisecond,
		Producer:  sim.Producer{AckTimeout: time.Second},
		Channel:   sim.Channel{LatencyMin: time.Millisecond, LatencyMax: 10 * time.Millisecond, ClientTimeout: time.Second},
		FaultsEnd: 5 * time.Second,
		Platform:  sim.Platform{EventTypes: []string{"a"}, Endpoints: []sim.PlatformEndpoint{{}, {EventTypes: []string{"a"}}}},
	}
}

// A platform world is decided by its seed alone: the platform store's maps
// (platmem) leak no iteration order into the trace. Each run has fresh
// maps, whose order Go randomises.
func TestPlatformWorldIsDeterministic(t *testing.T) {
	w := platformTestWorld()
	w.Platform.CrashRate, w.Platform.MaxCrashes, w.Platform.Redrive = 0.5, 2, time.Second
	w.Platform.Replays = []sim.BulkReplay{{Endpoint: 0, At: 4 * time.Second, All: true}}
	w.Platform.Endpoints[1].Disables = []sim.Window{{From: time.Second, To: 2 * time.Second}}
	first, err := sim.Run(w, 7, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		r, err := sim.Run(w, 7, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Hash != first.Hash {
			t.Fatalf("hash %s, then %s: the same seed ran two ways", first.Hash, r.Hash)
		}
	}
}

// In an HTTP world with health, an endpoint whose receiver answers a
// poison event 410 is disabled by the production health at once, logged
// as a disable, and enabled again by the operator; and one whose poison
// event fails (503) for DisableAfter is disabled too; the checker holds.
func TestPlatformHealthDisables(t *testing.T) {
	w := platformTestWorld()
	w.HTTP = sim.HTTP{On: true}
	w.Receiver.Poison = []string{sim.EventID(2), sim.EventID(3)} // message 1 to endpoints 0 and 1
	w.Platform.Reenable = 500 * time.Millisecond
	w.Platform.DisableAfter = 2 * (w.Platform.Reenable + w.LeaseTTL())
	w.Platform.Endpoints[0].Gone = true
	r, err := sim.Run(w, 5, sim.Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	var gone, failing, enabled int
	for _, line := range r.Trace {
		switch {
		case strings.Contains(line, "health-disable") && strings.Contains(line, platform.DisabledGone):
			gone++
		case strings.Contains(line, "health-disable") && strings.Contains(line, platform.DisabledFailing):
			failing++
		case strings.Contains(line, "platform enable"):
			enabled++
		}
	}
	if gone != 1 || failing < 1 || enabled < gone+failing {
		t.Errorf("health disabled %d times for gone, %d for failing, and the operator enabled %d; want 1, at least 1, and each enabled again", gone, failing, enabled)
	}
	if len(r.Violations) > 0 {
		t.Errorf("violations: %v", r.Violations)
	}
}

// Publishes that crash at every fan-out lose nothing: the producer
// publishes again with the same key and the re-drive finishes each
// message, so every endpoint gets every message once.
func TestPlatformCrashesAreRedriven(t *testing.T) {
	w := platformTestWorld()
	w.Platform.CrashRate, w.Platform.MaxCrashes, w.Platform.Redrive = 1, 4, 500*time.Millisecond
	r, err := sim.Run(w, 3, sim.Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	crashes := 0
	for _, line := range r.Trace {
		if strings.Contains(line, "platform crash:") {
			crashes++
		}
	}
	if len(r.Violations) > 0 || crashes != 4 || r.Stats.Applied != 8 || r.Stats.AppliedTwice != 0 {
		t.Fatalf("crashes %d, applied %d (twice %d), violations %v; want 4 crashes and all 8 deliveries applied once",
			crashes, r.Stats.Applied, r.Stats.AppliedTwice, r.Violations)
	}
}

// An endpoint created after every publish gets the messages it missed
// from a replay-missing, each applied once, and a second ask adds
// nothing; one since after some of them gets only those.
func TestPlatformReplayMissing(t *testing.T) {
	for _, c := range []struct {
		since       time.Duration
		wantAdded   string
		wantApplied int
	}{
		{0, "4 added", 8},
		{4*time.Second - 1, "0 added", 4}, // every message was published before 4 s
	} {
		w := platformTestWorld()
		w.Platform.Endpoints[1].Created = 4 * time.Second
		w.Platform.Missing = []sim.MissingReplay{{Endpoint: 1, At: 4 * time.Second, Since: c.since}, {Endpoint: 1, At: 5 * time.Second, Since: c.since}}
		r, err := sim.Run(w, 5, sim.Options{Trace: true})
		if err != nil {
			t.Fatal(err)
		}
		var asks []string
		for _, line := range r.Trace {
			if _, after, ok := strings.Cut(line, "platform replay-missing: "); ok {
				_, added, _ := strings.Cut(after, ": ")
				asks = append(asks, added)
			}
		}
		want := []string{c.wantAdded + ", 0 pending", "0 added, 0 pending"}
		if len(r.Violations) > 0 || !slices.Equal(asks, want) || r.Stats.Applied != c.wantApplied || r.Stats.AppliedTwice != 0 {
			t.Errorf("since %v: asks %q, applied %d (twice %d), violations %v; want asks %q and %d applied once",
				c.since, asks, r.Stats.Applied, r.Stats.AppliedTwice, r.Violations, want, c.wantApplied)
		}
	}
}

// A bulk replay job whose serve crashes after its first page, before it
// saves, is resumed by another serve from its saved cursor once its lease
// has ended: it lists that page again, and the dead letter it replayed
// there, dead again (poison), is not replayed twice (replay-since judges
// it); the next one is replayed once.
func TestPlatformJobResumedAfterACrash(t *testing.T) {
	w := platformTestWorld()
	w.Policy.MaxAttempts, w.Policy.BaseBackoff, w.Policy.MaxBackoff = 2, 100*time.Millisecond, 100*time.Millisecond
	w.Receiver.Poison = []string{"e001", "e003"} // messages 0 and 1 to endpoint 0
	w.Platform.Replays = []sim.BulkReplay{{Endpoint: 0, At: 4 * time.Second, All: true, Page: 1, CrashAfter: 1, Resume: 5 * time.Second}}
	r, err := sim.Run(w, 9, sim.Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, line := range r.Trace {
		if _, after, ok := strings.Cut(line, "platform job-"); ok {
			jobs = append(jobs, after)
		}
	}
	want := []string{
		"crash: rpl_00000000000000000000001001: its serve crashed after page 1, its cursor saved at 0",
		"resumed: rpl_00000000000000000000001001 by serve-2 from cursor 0",
		"done: rpl_00000000000000000000001001: listed 2, replayed 2",
	}
	if len(r.Violations) > 0 || !slices.Equal(jobs, want) {
		t.Fatalf("job lines %q, violations %v; want %q and none", jobs, r.Violations, want)
	}
}

// A job whose page the store refuses (a store outage) ends failed, and
// the operator starts a new job, by another name, a second later, until
// the outage has ended; replay-since judges each by its own name.
func TestPlatformJobRefusedByTheStore(t *testing.T) {
	w := platformTestWorld()
	w.Policy.MaxAttempts, w.Policy.BaseBackoff, w.Policy.MaxBackoff = 2, 100*time.Millisecond, 100*time.Millisecond
	w.Receiver.Poison = []string{"e001", "e003"}
	w.Cluster = sim.Cluster{Workers: 2, LeaseTTL: 2 * time.Second, Poll: 500 * time.Millisecond,
		StoreOutages: []sim.Window{{From: 3500 * time.Millisecond, To: 4900 * time.Millisecond}}}
	w.Platform.Replays = []sim.BulkReplay{{Endpoint: 0, At: 4 * time.Second, All: true, Page: 1, CrashAfter: 1, Resume: time.Second}}
	r, err := sim.Run(w, 9, sim.Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, line := range r.Trace {
		if _, after, ok := strings.Cut(line, "platform job-"); ok {
			jobs = append(jobs, after)
		}
	}
	if len(r.Violations) > 0 || len(jobs) < 4 || !strings.HasPrefix(jobs[0], "failed: rpl_00000000000000000000001001") ||
		!strings.HasPrefix(jobs[len(jobs)-1], "done: ") {
		t.Fatalf("job lines %q, violations %v; want the first job failed, a later one done, none", jobs, r.Violations)
	}
}

// In an HTTP world, an endpoint whose status policy rejects the status
// the receiver answers a poison event with dead-letters it at once,
// rejected, through the real channel; the other endpoint retries it to
// its budget. The checker holds the channel to it (channel-true).
func TestPlatformHTTPRejectStatuses(t *testing.T) {
	w := platformTestWorld()
	w.HTTP = sim.HTTP{On: true, RejectStatus: 503}
	w.Policy.MaxAttempts, w.Policy.BaseBackoff, w.Policy.MaxBackoff = 3, 100*time.Millisecond, 100*time.Millisecond
	w.Receiver.Poison = []string{"e001", "e002"} // message 0 to endpoints 0 and 1
	w.Platform.Endpoints[0].RejectStatuses = []int{422, 503}
	r, err := sim.Run(w, 4, sim.Options{Logs: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, run := range r.Runs {
		for _, e := range run.Entries {
			if e.Kind == invariants.Persisted && e.Record.State == machine.Dead {
				got = append(got, fmt.Sprintf("ep%d %s after %d", i, e.Record.Reason, e.Record.Attempts))
			}
		}
	}
	want := []string{"ep0 rejected after 1", "ep1 exhausted after 3"}
	if len(r.Violations) > 0 || !slices.Equal(got, want) {
		t.Fatalf("dead letters %q, violations %v; want %q and none", got, r.Violations, want)
	}
}

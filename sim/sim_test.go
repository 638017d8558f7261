// World.Validate names every bad field, and Run is deterministic and correct on a fault-free world: checked by running small inline worlds (with the scenarios' policy) and comparing hashes, traces, stats and the checker's verdict.
package sim_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

// base is the scenarios' fault-free world with 30 events.
func base(seed uint64) sim.World {
	w := scenarios.Base(seed)
	w.Events = 30
	return w
}

// faulty draws on every stream: flapping, lost and late replies, restarts
// and crashes, racing copies.
func faulty(seed uint64) sim.World {
	w := base(seed)
	w.FaultsEnd = 20 * time.Second
	w.Producer.SendTwice = true
	w.Producer.TwiceDelay = 10 * time.Millisecond
	w.Channel.Flapping = []sim.Window{{From: 2 * time.Second, To: 12 * time.Second}}
	w.Channel.FlapFailRate = 0.4
	w.Channel.LostAckRate = 0.2
	w.Channel.LateRate = 0.1
	w.Channel.LateDelay = 2 * time.Second
	w.Restarts.At = []time.Duration{7 * time.Second}
	w.Restarts.Random = 2
	w.Restarts.CrashAfterPersistRate = 0.05
	w.Restarts.MaxCrashes = 2
	return w
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		skip   string
		break_ func(w *sim.World)
		field  string // the field the error must name; empty: valid
	}{
		{"base", "the fault-free world is valid", "", func(w *sim.World) {}, ""},
		{"faulty", "the world with every fault is valid", "", func(w *sim.World) { *w = faulty(1) }, ""},
		{"Policy", "a bad policy is named, with its own field", "", func(w *sim.World) { w.Policy.MaxAttempts = 0 }, "Policy"},
		{"no events", "a run needs an event", "", func(w *sim.World) { w.Events = 0 }, "Events"},
		{"too many events", "Events is bounded", "", func(w *sim.World) { w.Events = 100_001 }, "Events"},
		{"Interarrival", "gaps are not negative", "", func(w *sim.World) { w.Interarrival = -1 }, "Interarrival"},
		{"too many streams", "Streams is bounded", "", func(w *sim.World) { w.Streams = sim.MaxWorldStreams + 1 }, "Streams"},
		{"the most streams", "MaxWorldStreams is what Validate allows", "", func(w *sim.World) { w.Streams = sim.MaxWorldStreams }, ""},
		{"more streams down than streams", "Down picks among the world's streams", "", func(w *sim.World) {
			w.Streams, w.FaultsEnd = 4, time.Minute
			w.Channel.Down = sim.StreamsDown{Streams: 5, Window: sim.Window{To: time.Minute}}
		}, "Channel.Down.Streams"},
		{"streams down past FaultsEnd", "Down is a fault and ends by FaultsEnd", "", func(w *sim.World) {
			w.Streams, w.FaultsEnd = 4, time.Second
			w.Channel.Down = sim.StreamsDown{Streams: 2, Window: sim.Window{To: time.Minute}}
		}, "Channel windows"},
		{"streams down in an HTTP world", "the real channel has no per-stream outage", "", func(w *sim.World) {
			w.Streams, w.FaultsEnd, w.HTTP.On = 4, time.Minute, true
			w.Channel.Down = sim.StreamsDown{Streams: 2, Window: sim.Window{To: time.Minute}}
		}, "Channel.Down"},
		{"AckTimeout", "the producer must wait for its ack", "", func(w *sim.World) { w.Producer.AckTimeout = 0 }, "Producer.AckTimeout"},
		{"TwiceDelay", "the copy cannot come before the original", "", func(w *sim.World) { w.Producer.TwiceDelay = -1 }, "Producer.TwiceDelay"},
		{"LatencyMax below LatencyMin", "latency is a range", "", func(w *sim.World) { w.Channel.LatencyMax = time.Millisecond }, "Channel.LatencyMax"},
		{"LatencyMin negative", "latency cannot be negative", "", func(w *sim.World) { w.Channel.LatencyMin = -1 }, "Channel.LatencyMin"},
		{"Random restarts without faults", "random restarts are drawn before FaultsEnd, so none can be drawn when it is 0", "", func(w *sim.World) { w.FaultsEnd = 0; w.Restarts.Random = 2 }, "Restarts.Random"},
		{"ClientTimeout", "the sender must give up some time", "", func(w *sim.World) { w.Channel.ClientTimeout = 0 }, "Channel.ClientTimeout"},
		{"LateDelay", "late means later", "", func(w *sim.World) { w.Channel.LateDelay = -1 }, "Channel.LateDelay"},
		{"FaultsEnd", "faults end at or after the start", "", func(w *sim.World) { w.FaultsEnd = -1 }, "FaultsEnd"},
		{"MaxDuration", "zero means derived, negative is wrong", "", func(w *sim.World) { w.MaxDuration = -1 }, "MaxDuration"},
		{"slow round trip", "a healthy round trip must beat every timeout, or the channel never heals", "", func(w *sim.World) { w.Channel.LatencyMax = w.Channel.ClientTimeout / 2 }, "Channel.LatencyMax"},
		{"RetryAfter", "a hint is not negative", "", func(w *sim.World) { w.Receiver.RetryAfter = -1 }, "Receiver.RetryAfter"},
		{"Gather negative", "a driver cannot hand replies over before they come", "", func(w *sim.World) { w.Driver.Gather = -1 }, "Driver.Gather"},
		{"Gather the largest allowed", "MaxGather is what Validate allows", "", func(w *sim.World) { w.Driver.Gather = w.MaxGather() }, ""},
		{"Gather past a tenth of a timeout", "the window alone must never time an attempt out", "", func(w *sim.World) { w.Driver.Gather = w.Channel.ClientTimeout/10 + 1 }, "Driver.Gather"},
		{"Gather past the round trip's slack", "a healthy reply, gathered, must beat every timeout", "", func(w *sim.World) {
			w.Channel.LatencyMax = w.Channel.ClientTimeout/2 - time.Millisecond
			w.Driver.Gather = 2 * time.Millisecond
		}, "Driver.Gather"},
		{"cluster faults without workers", "crashes and pauses need workers", "", func(w *sim.World) { w.Cluster.Crashes = []sim.WorkerFault{{At: 0, For: 1}} }, "Cluster.Workers"},
		{"cluster poll too slow", "a worker must renew well within its lease", "", func(w *sim.World) { w.Cluster = sim.Cluster{Workers: 2, LeaseTTL: time.Second, Poll: time.Second} }, "Cluster.Poll"},
		{"cluster crash past FaultsEnd", "a crash is a fault and ends by FaultsEnd", "", func(w *sim.World) {
			w.FaultsEnd = time.Second
			w.Cluster = sim.Cluster{Workers: 2, LeaseTTL: time.Second, Poll: 100 * time.Millisecond, Crashes: []sim.WorkerFault{{Worker: 1, At: 500 * time.Millisecond, For: time.Second}}}
		}, "Cluster.Crashes/Pauses"},
		{"cluster with restarts", "restarts are the single sender's; a cluster has crashes", "", func(w *sim.World) {
			w.FaultsEnd = time.Second
			w.Cluster = sim.Cluster{Workers: 2, LeaseTTL: time.Second, Poll: 100 * time.Millisecond}
			w.Restarts.At = []time.Duration{0}
		}, "Restarts"},
		{"Restarts.Random", "counts are not negative", "", func(w *sim.World) { w.Restarts.Random = -1 }, "Restarts"},
		{"Restarts.MaxCrashes", "counts are not negative", "", func(w *sim.World) { w.Restarts.MaxCrashes = -1 }, "Restarts"},
		{"FlapFailRate", "a rate is within 0..1", "", func(w *sim.World) { w.Channel.FlapFailRate = 1.5 }, "Channel.FlapFailRate"},
		{"LostAckRate", "a rate is within 0..1", "", func(w *sim.World) { w.Channel.LostAckRate = -0.1 }, "Channel.LostAckRate"},
		{"LateRate", "a rate is within 0..1", "", func(w *sim.World) { w.Channel.LateRate = 2 }, "Channel.LateRate"},
		{"CrashAfterPersistRate", "a rate is within 0..1", "", func(w *sim.World) { w.Restarts.CrashAfterPersistRate = 1.01 }, "Restarts.CrashAfterPersistRate"},
		{
			"NaN rate", "NaN is no probability",
			"",
			func(w *sim.World) { w.Channel.LostAckRate = math.NaN() }, "Channel.LostAckRate",
		},
		{
			"outage past FaultsEnd", "every fault ends by FaultsEnd", "",
			func(w *sim.World) {
				w.FaultsEnd = 10 * time.Second
				w.Channel.Outages = []sim.Window{{From: 5 * time.Second, To: 11 * time.Second}}
			}, "Channel windows",
		},
		{
			"flapping window reversed", "a window is a span", "",
			func(w *sim.World) {
				w.FaultsEnd = 10 * time.Second
				w.Channel.Flapping = []sim.Window{{From: 5 * time.Second, To: 4 * time.Second}}
			}, "Channel windows",
		},
		{
			"restart past FaultsEnd", "restarts are faults", "",
			func(w *sim.World) { w.FaultsEnd = 10 * time.Second; w.Restarts.At = []time.Duration{11 * time.Second} }, "Restarts.At",
		},
		{
			"restart before the start", "there is no time before the epoch", "",
			func(w *sim.World) { w.FaultsEnd = 10 * time.Second; w.Restarts.At = []time.Duration{-1} }, "Restarts.At",
		},
		{
			"stubborn failures", "a count of failures is not negative", "",
			func(w *sim.World) { w.Receiver.Stubborn = []sim.Stubborn{{ID: "e001", Failures: -1}} }, "Receiver.Stubborn",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			w := base(1)
			tt.break_(&w)
			err := w.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("%s: Validate() = %v, want nil", tt.reason, err)
				}
				return
			}
			if !errors.Is(err, sim.ErrInvalidWorld) {
				t.Fatalf("%s: Validate() = %v, want an error wrapping sim.ErrInvalidWorld", tt.reason, err)
			}
			prefix := sim.ErrInvalidWorld.Error() + ": " + tt.field
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("%s: Validate() = %q, want it to name the field: %q...", tt.reason, err, prefix)
			}
			// Run refuses the same world with the same error.
			if _, runErr := sim.Run(w, 1, sim.Options{}); !errors.Is(runErr, sim.ErrInvalidWorld) {
				t.Errorf("Run of an invalid world returned %v, want the Validate error", runErr)
			}
		})
	}
	t.Run("Policy error wraps the config error", func(t *testing.T) {
		w := base(1)
		w.Policy.MaxAttempts = 0
		if err := w.Validate(); !errors.Is(err, machine.ErrInvalidConfig) {
			t.Errorf("Validate() = %v, want it to wrap machine.ErrInvalidConfig too", err)
		}
	})
}

func TestRunDeterministic(t *testing.T) {
	for _, tt := range []struct {
		name  string
		world func(uint64) sim.World
	}{
		{"fault-free", base},
		{"faulty", faulty},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const seed = 42
			a, err := sim.Run(tt.world(seed), seed, sim.Options{Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := sim.Run(tt.world(seed), seed, sim.Options{Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Trace) == 0 {
				t.Fatal("Options{Trace: true} kept no trace")
			}
			if diff := cmp.Diff(a.Trace, b.Trace); diff != "" {
				t.Errorf("same world and seed, different traces (-first +second):\n%s", diff)
			}
			if a.Hash != b.Hash {
				t.Errorf("same world and seed, hashes %s and %s", a.Hash, b.Hash)
			}
			if diff := cmp.Diff(a.Stats, b.Stats); diff != "" {
				t.Errorf("same world and seed, different stats (-first +second):\n%s", diff)
			}
			c, err := sim.Run(tt.world(seed), seed, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Trace != nil {
				t.Errorf("without Options.Trace the run kept %d trace lines", len(c.Trace))
			}
			if c.Hash != a.Hash {
				t.Errorf("the hash depends on Options.Trace: %s with, %s without", a.Hash, c.Hash)
			}
			if len(a.Hash) != 16 {
				t.Errorf("Hash %q has %d hex digits, want 16", a.Hash, len(a.Hash))
			}
		})
	}
}

func TestRunSeedsDiffer(t *testing.T) {
	seen := map[string]uint64{}
	for seed := uint64(1); seed <= 8; seed++ {
		r, err := sim.Run(faulty(seed), seed, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[r.Hash]; ok {
			t.Errorf("seeds %d and %d gave the same hash %s", prev, seed, r.Hash)
		}
		seen[r.Hash] = seed
	}
	// The seed alone changes the run, with the world held fixed.
	w := base(1)
	a, err := sim.Run(w, 1, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.Run(w, 2, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash == b.Hash {
		t.Errorf("seeds 1 and 2 of one world gave the same hash %s", a.Hash)
	}
}

func TestRunFaultFree(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		w := base(seed)
		r, err := sim.Run(w, seed, sim.Options{Logs: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range r.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		s := r.Stats
		want := sim.Stats{Offers: w.Events, Accepted: w.Events, Applied: w.Events, Sends: w.Events, MaxSends: 1}
		got := sim.Stats{Offers: s.Offers, Accepted: s.Accepted, Applied: s.Applied, Sends: s.Sends, MaxSends: s.MaxSends,
			Duplicates: s.Duplicates, Fenced: s.Fenced, Dead: s.Dead, Lost: s.Lost, AppliedTwice: s.AppliedTwice,
			Probes: s.Probes, CircuitOpenings: s.CircuitOpenings, Restarts: s.Restarts, Crashes: s.Crashes}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: stats of a fault-free run (-want +got):\n%s", seed, diff)
		}
		// The receiver applied each event once, in acceptance order.
		var applied, wantApplied []string
		for _, e := range r.Run.Entries {
			if e.Kind == invariants.Applied {
				applied = append(applied, e.ID)
			}
		}
		for i := range w.Events {
			wantApplied = append(wantApplied, sim.EventID(i))
		}
		if diff := cmp.Diff(wantApplied, applied); diff != "" {
			t.Errorf("seed %d: applied events (-want +got):\n%s", seed, diff)
		}
		if !r.Run.Finished {
			t.Errorf("seed %d: the run did not finish", seed)
		}
		if len(r.Run.Final) != w.Events {
			t.Errorf("seed %d: the store holds %d records, want %d", seed, len(r.Run.Final), w.Events)
		}
		for _, rec := range r.Run.Final {
			if rec.State != machine.Delivered || rec.Attempts != 1 {
				t.Errorf("seed %d: final %s, want delivered on attempt 1", seed, rec.Format(sim.Epoch))
			}
		}
	}
}

// The faulty world holds every invariant (sim_plant_test.go shows the
// checker sees the planted ReceiverNoDedup bug in the same world).
func TestRunFaultyHolds(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		r, err := sim.Run(faulty(seed), seed, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range r.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		w := faulty(seed)
		if want := len(w.Restarts.At) + w.Restarts.Random + r.Stats.Crashes; r.Stats.Restarts != want {
			t.Errorf("seed %d: %d restarts, want %d fixed + %d random + %d crashes", seed, r.Stats.Restarts, len(w.Restarts.At), w.Restarts.Random, r.Stats.Crashes)
		}
		if r.Stats.Crashes > w.Restarts.MaxCrashes {
			t.Errorf("seed %d: %d crashes, want at most MaxCrashes %d", seed, r.Stats.Crashes, w.Restarts.MaxCrashes)
		}
	}
}

// A run cut short by MaxDuration stops at it, says so in its trace, and
// counts as finished: a poison event at the head of a strict stream holds
// every event behind it, so each one is a liveness failure.
func TestRunTimeLimit(t *testing.T) {
	w := base(1)
	w.Interarrival = 10 * time.Millisecond
	w.Receiver.Poison = []string{sim.EventID(0)}
	w.MaxDuration = 5 * time.Second
	r, err := sim.Run(w, 1, sim.Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stats.End != w.MaxDuration {
		t.Errorf("the run stopped at %v, want MaxDuration %v", r.Stats.End, w.MaxDuration)
	}
	stopped := false
	for _, line := range r.Trace {
		stopped = stopped || strings.Contains(line, "stop: time limit")
	}
	if !stopped {
		t.Errorf("the trace does not say the time limit stopped the run; last line: %q", r.Trace[len(r.Trace)-1])
	}
	if !r.Run.Finished {
		t.Error("a run stopped by its time limit must count as finished")
	}
	var want, got []found
	for i := range w.Events {
		want = append(want, found{invariants.Liveness, sim.EventID(i), -1})
	}
	for _, v := range r.Violations {
		got = append(got, found{v.Invariant, v.ID, v.Step})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations of a run held by poison and cut short (-want +got):\n%s", diff)
	}
}

// found is the part of a Violation a test pins down.
type found struct {
	Invariant, ID string
	Step          int
}

func TestEventID(t *testing.T) {
	got := []string{sim.EventID(0), sim.EventID(9), sim.EventID(999)}
	if diff := cmp.Diff([]string{"e001", "e010", "e1000"}, got); diff != "" {
		t.Errorf("EventID (-want +got):\n%s", diff)
	}
}

// TestStatsAreTheLogs holds the figures the simulator counts as it logs
// (lease grants, zombie sends, the most sends of an event, parked writes) to a plain
// count over the logs it returns, on swarm worlds, which have clusters,
// pauses and superseded leases.
func TestStatsAreTheLogs(t *testing.T) {
	zombies, parked := 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		_, res := scenarios.RunSwarmSeed(seed, sim.Options{Logs: true})
		var want sim.Stats
		sends := map[string]int{}
		for _, run := range res.Runs {
			var newest uint64 // tokens are per stream
			for _, e := range run.Entries {
				switch e.Kind {
				case invariants.Sent:
					sends[e.ID]++
					if e.Token < newest {
						want.ZombieSends++
					}
				case invariants.LeaseGranted:
					newest = max(newest, e.Token)
					want.LeaseGrants++
				case invariants.Persisted:
					if e.Record.State == machine.Parked {
						want.ParkedWrites++
					}
				}
			}
		}
		for _, run := range res.Runs {
			for _, r := range run.Final {
				want.MaxSends = max(want.MaxSends, sends[r.ID])
			}
		}
		got := res.Stats
		if got.ZombieSends != want.ZombieSends || got.LeaseGrants != want.LeaseGrants || got.MaxSends != want.MaxSends || got.ParkedWrites != want.ParkedWrites {
			t.Errorf("seed %d: zombie sends %d, lease grants %d, max sends %d, parked writes %d; the logs have %d, %d, %d, %d",
				seed, got.ZombieSends, got.LeaseGrants, got.MaxSends, got.ParkedWrites, want.ZombieSends, want.LeaseGrants, want.MaxSends, want.ParkedWrites)
		}
		zombies += want.ZombieSends
		parked += want.ParkedWrites
	}
	if zombies == 0 || parked == 0 {
		t.Errorf("zombie sends %d, parked writes %d over the swarm seeds: the test does not reach what it checks", zombies, parked)
	}
}

// TestJudgedAsWritten holds the checker's judgement as the simulator
// writes each log (no log kept, what a sweep does) to invariants.Check
// over the whole logs of the same run, and checks that keeping the logs
// changes nothing of the run.
func TestJudgedAsWritten(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		_, streamed := scenarios.RunSwarmSeed(seed, sim.Options{})
		_, logged := scenarios.RunSwarmSeed(seed, sim.Options{Logs: true})
		if streamed.Hash != logged.Hash {
			t.Fatalf("seed %d: keeping the logs changed the run: hash %s, with logs %s", seed, streamed.Hash, logged.Hash)
		}
		for _, run := range streamed.Runs {
			if run.Entries != nil {
				t.Fatalf("seed %d: a log was kept without Options.Logs", seed)
			}
		}
		var batch []invariants.Violation
		for _, run := range logged.Runs {
			if len(run.Entries) == 0 {
				t.Fatalf("seed %d: Options.Logs kept an empty log", seed)
			}
			batch = append(batch, invariants.Check(run)...)
		}
		if diff := cmp.Diff(batch, streamed.Violations); diff != "" {
			t.Errorf("seed %d: judged as written vs judged whole (-whole +written):\n%s", seed, diff)
		}
		if diff := cmp.Diff(logged.Violations, streamed.Violations); diff != "" {
			t.Errorf("seed %d: violations with and without logs differ:\n%s", seed, diff)
		}
	}
}

// A driver's gather window hands its worker several streams' replies in
// one DeliverAll, and the run still holds every invariant; with no window
// the replies of one instant still go together, and the window makes
// batches larger.
func TestGatherBatchesReplies(t *testing.T) {
	run := func(gather time.Duration) sim.Stats {
		w := base(1)
		w.Streams, w.Interarrival = 4, 5*time.Millisecond
		w.Driver.Gather = gather
		r, err := sim.Run(w, 1, sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) > 0 {
			t.Fatalf("gather %v: %v", gather, r.Violations)
		}
		return r.Stats
	}
	at0, at20 := run(0), run(20*time.Millisecond)
	if at20.Batches == 0 || at20.MixedBatches == 0 || at20.MaxBatch < 3 {
		t.Fatalf("a 20ms window made %d batches (%d of several streams, at most %d replies): want several, some mixed, one of 3 or more",
			at20.Batches, at20.MixedBatches, at20.MaxBatch)
	}
	if at20.BatchedReplies <= at0.BatchedReplies {
		t.Errorf("a 20ms window batched %d replies, no window %d: want more", at20.BatchedReplies, at0.BatchedReplies)
	}
}

// Channel.Down refuses the sends of the streams it picks, spread evenly
// (streams 5 and 10 of ten when two are down), inside its window only,
// and no other stream's: every event still lands once.
func TestStreamsDownRefuseOnlyTheirStreams(t *testing.T) {
	w := base(3)
	w.Streams, w.Events, w.FaultsEnd = 10, 60, 20*time.Second
	w.Channel.Down = sim.StreamsDown{Streams: 2, Window: sim.Window{To: 20 * time.Second}}
	r, err := sim.Run(w, 3, sim.Options{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	downOf := map[string]bool{}
	for i := range w.Events {
		downOf[sim.EventID(i)] = i%10 == 4 || i%10 == 9
	}
	refused := 0
	for _, line := range r.Trace {
		_, rest, ok := strings.Cut(line, "fault outage: ")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, "#")
		if !downOf[id] {
			t.Fatalf("%s, of a stream that is up, was refused: %s", id, line)
		}
		refused++
	}
	if refused == 0 {
		t.Fatal("no send of the streams down was refused")
	}
	if len(r.Violations) > 0 || r.Stats.Applied != w.Events || r.Stats.AppliedTwice > 0 {
		t.Fatalf("violations %v, applied %d of %d (%d twice)", r.Violations, r.Stats.Applied, w.Events, r.Stats.AppliedTwice)
	}
}

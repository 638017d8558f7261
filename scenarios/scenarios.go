package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

// Scenario is a named fault script: why it exists, what it does to the
// world, and what it must show beyond the general invariants.
type Scenario struct {
	Name   string
	Why    string // one sentence
	Faults string // what goes wrong, in words
	Expect string // what must be observed, in words; Check asserts it
	// World builds the world for a seed. The seed also becomes the
	// policy's jitter seed, so one number decides the whole run.
	World func(seed uint64) sim.World
	// Check asserts what the scenario exists to show; it returns one
	// line per failed expectation.
	Check func(r sim.Result) []string
	// Seeds is how many seeds, from 1, `go test` and RESULTS.md run; 0
	// for StandardSeeds. Only a scenario too long for that many sets it.
	Seeds int
	// ReadsLogs says that Check reads the observation logs
	// (r.Run.Entries), so Run keeps them. A Check that reads only Stats
	// and the final records leaves it false, and the run keeps no log:
	// long-outage's would hold millions of entries, about a gigabyte.
	ReadsLogs bool
}

// SeedCount is how many seeds of s `go test` and RESULTS.md run.
func (s Scenario) SeedCount() int {
	if s.Seeds > 0 {
		return s.Seeds
	}
	return StandardSeeds
}

// StandardSeeds is how many seeds of every scenario `go test` runs and
// RESULTS.md reports: seeds 1 to StandardSeeds.
const StandardSeeds = 50

// Policy is the delivery policy every scenario starts from: strict order,
// ten attempts, backoff 200ms..5s with 20% jitter, 3s attempt timeout,
// breaker after 3 failures, probes every 500ms..4s, ten minutes of age.
func Policy(seed uint64) machine.Config {
	return machine.Config{
		Ordering:          machine.Strict,
		Window:            1,
		MaxAttempts:       10,
		MaxAge:            10 * time.Minute,
		BaseBackoff:       200 * time.Millisecond,
		MaxBackoff:        5 * time.Second,
		JitterPercent:     20,
		MaxRetryAfter:     30 * time.Second,
		AttemptTimeout:    3 * time.Second,
		BreakerThreshold:  3,
		ProbeTimeout:      2 * time.Second,
		ProbeBaseInterval: 500 * time.Millisecond,
		ProbeMaxInterval:  4 * time.Second,
		MaxQueued:         10_000,
		MaxPayloadBytes:   4096,
		Seed:              seed,
	}
}

// Base is the fault-free world every scenario starts from: 40 events,
// one every 500ms on average, 5..50ms one way, a 1s client timeout.
func Base(seed uint64) sim.World {
	return sim.World{
		Policy:       Policy(seed),
		Events:       40,
		Interarrival: 500 * time.Millisecond,
		Producer:     sim.Producer{AckTimeout: 5 * time.Second},
		Channel: sim.Channel{
			LatencyMin:    5 * time.Millisecond,
			LatencyMax:    50 * time.Millisecond,
			ClientTimeout: time.Second,
		},
		Receiver: sim.Receiver{Fence: true},
	}
}

const (
	poisonID   = "e005"
	stubbornID = "e005"
)

// All returns the scenarios in their canonical order.
func All() []Scenario {
	return append([]Scenario{
		{
			Name:   "steady",
			Why:    "The baseline: with no faults every event is sent once and applied once, in order.",
			Faults: "none",
			Expect: "every event delivered on its first attempt; no retry, probe, duplicate or dead letter; the circuit never leaves closed",
			World:  Base,
			Check: func(r sim.Result) []string {
				s := r.Stats
				var c checklist
				c.expect(s.Applied == s.Accepted, "applied %d of %d accepted", s.Applied, s.Accepted)
				c.expect(s.Sends == s.Accepted, "%d sends for %d events; want exactly one each", s.Sends, s.Accepted)
				c.expect(s.Dead == 0 && s.Duplicates == 0 && s.Probes == 0 && s.CircuitOpenings == 0, "dead=%d duplicates=%d probes=%d openings=%d; want all zero", s.Dead, s.Duplicates, s.Probes, s.CircuitOpenings)
				return c
			},
		},
		{
			Name:   "outage",
			Why:    "A channel that is down for twenty seconds must open the circuit, park the backlog durably, and drain it in order when it returns.",
			Faults: "every send and probe is refused from 5s to 25s",
			Expect: "the circuit opens; events are persisted as parked; no event is sent while open; after a healthy probe every event is delivered in acceptance order; nothing dies",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Events = 60
				w.Channel.Outages = []sim.Window{{From: 5 * time.Second, To: 25 * time.Second}}
				w.FaultsEnd = 25 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				var c checklist
				c.expect(s.CircuitOpenings >= 1, "the circuit never opened")
				c.expect(s.ParkedWrites > 0, "no event was persisted as parked")
				c.expect(s.Applied == s.Accepted && s.Dead == 0, "applied %d of %d, dead %d; want all applied", s.Applied, s.Accepted, s.Dead)
				return c
			},
		},
		{
			Name:   "flapping",
			Why:    "An intermittent channel must cost retries, not losses or duplicates: the breaker trips and resets, and every event arrives once, in order, unless its whole budget met the failures.",
			Faults: "from 2s to 32s the channel is down for 1s of every 3s, and fails 20% of the rest",
			Expect: "retries happen; the breaker trips and resets; every event is applied exactly once, in order, or (rarely, when its whole budget met failures) dead as exhausted after exactly MaxAttempts sends",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				for at := 2 * time.Second; at < 32*time.Second; at += 3 * time.Second {
					w.Channel.Outages = append(w.Channel.Outages, sim.Window{From: at, To: at + time.Second})
				}
				w.Channel.Flapping = []sim.Window{{From: 2 * time.Second, To: 32 * time.Second}}
				w.Channel.FlapFailRate = 0.2
				w.FaultsEnd = 32 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				var c checklist
				c.expect(s.Sends > s.Accepted, "no retry happened (%d sends, %d events)", s.Sends, s.Accepted)
				c.expect(s.CircuitOpenings >= 1, "the breaker never opened")
				c.expect(s.Applied+s.Dead == s.Accepted, "applied %d + dead %d of %d accepted", s.Applied, s.Dead, s.Accepted)
				c.deadOnlyExhausted(r)
				return c
			},
		},
		{
			Name:   "lost-acks",
			Why:    "When 30% of replies are lost the sender cannot tell a lost reply from a lost request; it must resend, and the receiver must absorb the duplicates.",
			Faults: "30% of the receiver's replies are lost (the sender times out), until 60s",
			Expect: "duplicates reach the receiver and are discarded; every event is applied exactly once (requests always arrive); a dead letter, rare, is only ever exhausted after exactly MaxAttempts sends",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Channel.LostAckRate = 0.3
				w.FaultsEnd = 60 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				var c checklist
				c.expect(s.Duplicates > 0, "no duplicate reached the receiver")
				c.expect(s.Applied == s.Accepted && s.AppliedTwice == 0, "applied %d of %d, applied twice %d", s.Applied, s.Accepted, s.AppliedTwice)
				c.deadOnlyExhausted(r)
				return c
			},
		},
		{
			Name:      "poison",
			ReadsLogs: true,
			Why:       "An event the receiver always rejects is a bad event, not a dead channel: it must be dead-lettered on its own budget while the circuit stays closed.",
			Faults:    poisonID + " is rejected (retryable) on every delivery",
			Expect:    poisonID + " is dead (exhausted) after exactly MaxAttempts sends and kept; the circuit never opens; every other event is delivered; the poison event holds the stream no longer than its retry budget",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Receiver.Poison = []string{poisonID}
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				rec, _ := finalRecord(r.Run, poisonID)
				held := heldFor(r.Run, poisonID)
				budget := RetryBudget(r.World.Policy, r.World.Channel.ClientTimeout)
				var c checklist
				c.expect(rec.State == machine.Dead && rec.Reason == machine.Exhausted, "%s ended %s (%s); want dead (exhausted)", poisonID, rec.State, rec.Reason)
				c.expect(sendsOf(r.Run, poisonID) == r.World.Policy.MaxAttempts, "%s sent %d times; want MaxAttempts %d", poisonID, sendsOf(r.Run, poisonID), r.World.Policy.MaxAttempts)
				c.expect(s.CircuitOpenings == 0, "the circuit opened %d times", s.CircuitOpenings)
				c.expect(s.Applied == s.Accepted-1 && s.Dead == 1, "applied %d of %d, dead %d; want all but the poison applied", s.Applied, s.Accepted, s.Dead)
				c.expect(held <= budget, "%s held the stream %v; its budget is %v", poisonID, held, budget)
				return c
			},
		},
		{
			Name:      "stubborn",
			ReadsLogs: true,
			Why:       "An event that fails a few times and then succeeds must be retried, not dead-lettered, and must not open the circuit.",
			Faults:    stubbornID + " is rejected (retryable) on its first 4 deliveries",
			Expect:    stubbornID + " is delivered on its 5th attempt; nothing dies; the circuit never opens",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Receiver.Stubborn = []sim.Stubborn{{ID: stubbornID, Failures: 4}}
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				rec, _ := finalRecord(r.Run, stubbornID)
				var c checklist
				c.expect(rec.State == machine.Delivered && rec.Attempts == 5, "%s ended %s after %d attempts; want delivered after 5", stubbornID, rec.State, rec.Attempts)
				c.expect(s.Dead == 0 && s.CircuitOpenings == 0, "dead=%d openings=%d; want zero", s.Dead, s.CircuitOpenings)
				c.expect(s.Applied == s.Accepted, "applied %d of %d", s.Applied, s.Accepted)
				return c
			},
		},
		{
			Name:      "restarts-in-outage",
			ReadsLogs: true,
			Why:       "A sender that restarts while the channel is down must rebuild its backlog and its open circuit from the store alone, and lose nothing.",
			Faults:    "the channel is down from 5s to 25s; the sender restarts at 10s, 15s and 20s, and up to 3 times more right after persisting a batch, before acting on it",
			Expect:    "recovered senders start with the circuit open (parked records); every event is delivered once, in order; nothing dies",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Events = 60
				w.Channel.Outages = []sim.Window{{From: 5 * time.Second, To: 25 * time.Second}}
				w.Restarts = sim.Restarts{
					At:                    []time.Duration{10 * time.Second, 15 * time.Second, 20 * time.Second},
					CrashAfterPersistRate: 0.05,
					MaxCrashes:            3,
				}
				w.FaultsEnd = 25 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				var c checklist
				c.expect(s.Restarts >= 3, "only %d restarts", s.Restarts)
				c.expect(recoveredOpen(r.Run) > 0, "no restart recovered an open circuit from parked records")
				c.expect(s.Applied == s.Accepted && s.Dead == 0, "applied %d of %d, dead %d; want all applied", s.Applied, s.Accepted, s.Dead)
				return c
			},
		},
		{
			Name:   "producer-twice",
			Why:    "A producer that sends every event twice, the copies racing each other, must not create a second event: acceptance is idempotent by ID.",
			Faults: "every event is offered twice, the second copy within 300ms of the first",
			Expect: "every second copy is acknowledged as a duplicate and changes nothing; each event is sent and applied once",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Producer.SendTwice = true
				w.Producer.TwiceDelay = 300 * time.Millisecond
				return w
			},
			Check: func(r sim.Result) []string {
				s := r.Stats
				var c checklist
				c.expect(s.DuplicateAcks >= r.World.Events, "%d duplicate acknowledgements for %d events; want every second copy acknowledged as a duplicate", s.DuplicateAcks, r.World.Events)
				c.expect(s.Accepted == r.World.Events && s.Sends == s.Accepted && s.Applied == s.Accepted, "accepted %d, sent %d, applied %d of %d events; want one each", s.Accepted, s.Sends, s.Applied, r.World.Events)
				return c
			},
		},
		{
			Name:      "everything",
			ReadsLogs: true,
			Why:       "All the faults at once, because real incidents do not come one at a time.",
			Faults: "an outage (10s-20s), a flapping link (25s-35s, 30%), 20% lost replies, 5% of requests held 5s, " +
				"a poison and a stubborn event, 3 random restarts and up to 3 crashes after persist, a producer that sends twice; faults end at 40s",
			Expect: "every invariant holds; the poison event is dead and kept; the stubborn event is delivered; every dead letter is exhausted after exactly MaxAttempts sends",
			World: func(seed uint64) sim.World {
				w := Base(seed)
				w.Events = 80
				w.Channel.Outages = []sim.Window{{From: 10 * time.Second, To: 20 * time.Second}}
				w.Channel.Flapping = []sim.Window{{From: 25 * time.Second, To: 35 * time.Second}}
				w.Channel.FlapFailRate = 0.3
				w.Channel.LostAckRate = 0.2
				w.Channel.LateRate = 0.05
				w.Channel.LateDelay = 5 * time.Second
				w.Receiver.Poison = []string{"e007"}
				w.Receiver.Stubborn = []sim.Stubborn{{ID: "e013", Failures: 3}}
				w.Restarts = sim.Restarts{Random: 3, CrashAfterPersistRate: 0.05, MaxCrashes: 3}
				w.Producer.SendTwice = true
				w.Producer.TwiceDelay = 300 * time.Millisecond
				w.FaultsEnd = 40 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				poison, _ := finalRecord(r.Run, "e007")
				stubborn, _ := finalRecord(r.Run, "e013")
				var c checklist
				c.expect(poison.State == machine.Dead, "e007 (poison) ended %s", poison.State)
				c.expect(stubborn.State == machine.Delivered, "e013 (stubborn) ended %s", stubborn.State)
				c.deadOnlyExhausted(r)
				return c
			},
		},
	}, append(clusterScenarios(), rateLimited(), longOutage(), fanout(), platformOps(), producers64(), manyStreams(), massRecovery())...)
}

// ClusterBase is Base with three workers sharing one store: 2s leases,
// polled every 500ms.
func ClusterBase(seed uint64) sim.World {
	w := Base(seed)
	w.Cluster = sim.Cluster{Workers: 3, LeaseTTL: 2 * time.Second, Poll: 500 * time.Millisecond}
	return w
}

// clusterScenarios are the many-workers scenarios.
func clusterScenarios() []Scenario {
	return []Scenario{
		{
			Name:      "lease-takeover",
			ReadsLogs: true,
			Why:       "When the worker that owns the stream dies, its lease must expire and another worker must take over from the store alone.",
			Faults:    "three workers; the stream's owner crashes at 5s and stays down 10s",
			Expect:    "a second lease goes to another worker (the checker holds every token above the last); every event is applied once, in order; nothing dies",
			World: func(seed uint64) sim.World {
				w := ClusterBase(seed)
				w.Cluster.Crashes = []sim.WorkerFault{{Worker: sim.Owner, At: 5 * time.Second, For: 10 * time.Second}}
				w.FaultsEnd = 15 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				var c checklist
				s := r.Stats
				c.expect(s.LeaseGrants >= 2, "only %d leases granted", s.LeaseGrants)
				c.expect(leaseWorkers(r.Run) >= 2, "no other worker took the stream over")
				c.expect(s.Applied == s.Accepted && s.Dead == 0, "applied %d of %d, dead %d; want all applied", s.Applied, s.Accepted, s.Dead)
				return c
			},
		},
		{
			Name:      "zombie",
			ReadsLogs: true,
			Why:       "A worker that stalls past its lease and wakes up believing it still owns the stream must be fenced off: its writes refused, its late sends harmless.",
			Faults:    "three workers; the stream's owner stalls for 6s (three leases) right after persisting a batch with sends, from 5s",
			Expect:    "another worker takes over; the zombie gives the stream up when it wakes (its own clock says the lease ran out, or the store refuses it); its late sends are absorbed by the receiver; every event is applied once, in order; no event is sent more than MaxAttempts times",
			World: func(seed uint64) sim.World {
				w := ClusterBase(seed)
				w.Cluster.Pauses = []sim.Pause{{Worker: sim.Owner, At: 5 * time.Second, For: 6 * time.Second}}
				w.FaultsEnd = 20 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				var c checklist
				s := r.Stats
				c.expect(leaseWorkers(r.Run) >= 2, "no other worker took the stream over")
				c.expect(s.LeasesLost >= 1, "the zombie never gave the stream up")
				c.expect(s.ZombieSends >= 1, "the zombie sent nothing after it was superseded")
				c.expect(s.Applied == s.Accepted && s.Dead == 0, "applied %d of %d, dead %d; want all applied", s.Applied, s.Accepted, s.Dead)
				return c
			},
		},
		{
			Name:      "rolling-restarts",
			ReadsLogs: true,
			Why:       "Deploys restart every worker in turn while events keep coming; the stream must pass from hand to hand without a loss, a duplicate effect or a reorder.",
			Faults:    "three workers under 80 events at ~4/s; the owner crashes at 5s, 10s and 15s, each time down 3s (longer than its lease); skewed clocks (+300ms, -200ms); the store refuses writes from 12s to 13s",
			Expect:    "the stream changes hands at least twice; every event is applied once, in order; nothing dies",
			World: func(seed uint64) sim.World {
				w := ClusterBase(seed)
				w.Events = 80
				w.Interarrival = 250 * time.Millisecond
				w.Cluster.Crashes = []sim.WorkerFault{
					{Worker: sim.Owner, At: 5 * time.Second, For: 3 * time.Second},
					{Worker: sim.Owner, At: 10 * time.Second, For: 3 * time.Second},
					{Worker: sim.Owner, At: 15 * time.Second, For: 3 * time.Second},
				}
				w.Cluster.Skews = []time.Duration{0, 300 * time.Millisecond, -200 * time.Millisecond}
				w.Cluster.StoreOutages = []sim.Window{{From: 12 * time.Second, To: 13 * time.Second}}
				w.FaultsEnd = 18 * time.Second
				return w
			},
			Check: func(r sim.Result) []string {
				var c checklist
				s := r.Stats
				c.expect(handovers(r.Run) >= 2, "the stream changed hands %d times; want at least 2", handovers(r.Run))
				c.expect(s.Applied == s.Accepted && s.Dead == 0, "applied %d of %d, dead %d; want all applied", s.Applied, s.Accepted, s.Dead)
				return c
			},
		},
	}
}

// handovers counts the leases granted to a worker other than the one
// granted the lease before.
func handovers(run invariants.Run) int {
	es := entries(run)
	n, last := 0, ""
	for i := range es {
		if e := &es[i]; e.Kind == invariants.LeaseGranted {
			if last != "" && e.Worker != last {
				n++
			}
			last = e.Worker
		}
	}
	return n
}

// leaseWorkers counts the distinct workers that were granted a lease.
func leaseWorkers(run invariants.Run) int {
	es := entries(run)
	var seen []string
	for i := range es {
		if e := &es[i]; e.Kind == invariants.LeaseGranted && !slices.Contains(seen, e.Worker) {
			seen = append(seen, e.Worker)
		}
	}
	return len(seen)
}

// Names returns the scenario names in canonical order.
func Names() []string {
	var out []string
	for _, s := range All() {
		out = append(out, s.Name)
	}
	return out
}

// Lookup finds a scenario by name.
func Lookup(name string) (Scenario, error) {
	for _, s := range All() {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q; known: %s", name, strings.Join(Names(), ", "))
}

// Run simulates the scenario under seed and returns the result with the
// scenario's own failed expectations. The result keeps the observation
// logs when the caller asks (Options.Logs) or the scenario's Check reads
// them (ReadsLogs).
func (s Scenario) Run(seed uint64, opt sim.Options) (sim.Result, []string, error) {
	opt.Logs = opt.Logs || s.ReadsLogs
	r, err := sim.Run(s.World(seed), seed, opt)
	if err != nil {
		return r, nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return r, s.Check(r), nil
}

// RetryBudget is the longest one event that fails every delivery can hold
// a strict stream: MaxAttempts attempts, each answered within
// min(clientTimeout, AttemptTimeout), separated by the longest backoff
// (MaxBackoff, no Retry-After in play), plus a probe timeout for each
// breaker check its failures may cause.
func RetryBudget(p machine.Config, clientTimeout time.Duration) time.Duration {
	attempt := min(clientTimeout, p.AttemptTimeout)
	n := time.Duration(p.MaxAttempts)
	checks := time.Duration(p.MaxAttempts/p.BreakerThreshold + 1)
	return n*attempt + (n-1)*p.MaxBackoff + checks*p.ProbeTimeout
}

// checklist collects the message of every expectation that failed.
type checklist []string

func (c *checklist) expect(ok bool, format string, args ...any) {
	if !ok {
		*c = append(*c, fmt.Sprintf(format, args...))
	}
}

// deadOnlyExhausted expects every dead letter to be an event that used
// its whole budget: reason exhausted, MaxAttempts attempts.
func (c *checklist) deadOnlyExhausted(r sim.Result) {
	for _, rec := range r.Run.Final {
		if rec.State == machine.Dead {
			c.expect(rec.Reason == machine.Exhausted && rec.Attempts == r.World.Policy.MaxAttempts,
				"%s is dead (%s) after %d attempts; want only exhausted after MaxAttempts %d",
				rec.ID, rec.Reason, rec.Attempts, r.World.Policy.MaxAttempts)
		}
	}
}

func finalRecord(run invariants.Run, id string) (machine.Record, bool) {
	i := slices.IndexFunc(run.Final, func(r machine.Record) bool { return r.ID == id })
	if i < 0 {
		return machine.Record{}, false
	}
	return run.Final[i], true
}

func sendsOf(run invariants.Run, id string) int {
	es := entries(run)
	n := 0
	for i := range es {
		if e := &es[i]; e.Kind == invariants.Sent && e.ID == id {
			n++
		}
	}
	return n
}

// heldFor is how long id held the stream: from its first send to the
// moment it became terminal.
func heldFor(run invariants.Run, id string) time.Duration {
	es := entries(run)
	var first, done time.Time
	for i := range es {
		switch e := &es[i]; {
		case e.Kind == invariants.Sent && e.ID == id && first.IsZero():
			first = e.At
		case e.Kind == invariants.Persisted && e.ID == id && e.Record.State.Terminal() && done.IsZero():
			done = e.At
		}
	}
	if first.IsZero() || done.IsZero() {
		return 0
	}
	return done.Sub(first)
}

// recoveredOpen counts restarts after which the sender's circuit was open.
func recoveredOpen(run invariants.Run) int {
	es := entries(run)
	n := 0
	for i := range es {
		if es[i].Kind == invariants.Restarted && i+1 < len(es) {
			next := &es[i+1]
			if next.Kind == invariants.CircuitChanged && next.Circuit == machine.Open {
				n++
			}
		}
	}
	return n
}

// entries returns the observation log of run, and panics if the run kept
// none: a Check that reads the logs of a scenario without ReadsLogs would
// otherwise count nothing and pass or fail for the wrong reason.
func entries(run invariants.Run) []invariants.Entry {
	if run.Entries == nil {
		panic("scenarios: a Check read the observation log of a run that kept none; set the scenario's ReadsLogs")
	}
	return run.Entries
}

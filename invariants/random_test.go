// Random logs that break nearly every rule, judged by one Checker after
// another: a Checker reused from run to run (as the simulator reuses one
// for every stream and run) reports exactly what a fresh Check reports.
package invariants

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
)

// TestReusedCheckerMatchesCheck: nothing a run leaves in a Checker shows
// in the next run's report.
func TestReusedCheckerMatchesCheck(t *testing.T) {
	var reused Checker
	for seed := range uint64(3000) {
		run := randomRun(seed)
		if diff := cmp.Diff(Check(run), reused.Check(run)); diff != "" {
			t.Fatalf("seed %d: the reused Checker reports otherwise (-Check +reused):\n%s\nlog:\n%s", seed, diff, logText(run))
		}
	}
}

// TestCheckerFindsViolationsOnRandomLogs: the random logs reach every rule
// (a generator whose logs were all clean, or all broken the same way,
// would compare nothing).
func TestCheckerFindsViolationsOnRandomLogs(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(3000) {
		for _, v := range Check(randomRun(seed)) {
			seen[v.Invariant] = true
		}
	}
	for _, inv := range Names {
		if !seen[inv] {
			t.Errorf("no random log broke %s", inv)
		}
	}
}

func logText(run Run) string {
	s := ""
	for _, e := range run.Entries {
		s += fmt.Sprintf("%d %v %s id=%q w=%q tok=%d att=%d rec={%s seq=%d att=%d %s %s next=%v} circ=%s %q\n",
			e.Step, e.At.Sub(epochR), e.Kind, e.ID, e.Worker, e.Token, e.Attempt, e.Record.ID, e.Record.Seq,
			e.Record.Attempts, e.Record.State, e.Record.Reason, e.Record.NextAt.Sub(epochR), e.Circuit, e.Detail)
	}
	return s
}

var epochR = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// randomRun builds a log of a few events, several workers and every kind
// of entry, mostly plausible and often broken, except an event adopted
// before it was ever persisted.
func randomRun(seed uint64) Run {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := &gen{rng: rng, recs: map[string]*machine.Record{}, now: epochR}
	g.run.Policy = machine.Config{
		Ordering: machine.Ordering(1 + rng.IntN(2)), Window: 1 + rng.IntN(3),
		MaxAttempts: 2 + rng.IntN(3), BreakerThreshold: 1 + rng.IntN(3),
		AttemptTimeout: time.Second, BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		JitterPercent: 20, MaxRetryAfter: time.Duration(rng.IntN(2)) * 2 * time.Second,
		MaxAge: time.Duration(3+rng.IntN(8)) * time.Second, ProbeTimeout: time.Second,
		MaxPayloadBytes: 4,
	}
	g.workers = [][]string{{""}, {"", "store"}, {"n1", "n2", "store"}}[rng.IntN(3)]
	n := 5 + rng.IntN(60)
	for range n {
		g.step()
	}
	g.finish()
	// Drawn last, so that the logs are the same with and without it.
	if rng.IntN(2) == 0 {
		g.run.Policy.RateLimit, g.run.Policy.RatePer = 1+rng.IntN(3), time.Second
	}
	// Drawn last too: a third of the logs become a platform's.
	if rng.IntN(3) == 0 {
		platformize(&g.run, rng)
	}
	return g.run
}

// platformize makes run a platform stream's log: each event fanned
// first, subscribed, missed or not; some pauses are an endpoint's
// disables; some replays are a bulk replay's, since a drawn instant; some
// offers follow a replay-missing since a drawn instant.
func platformize(run *Run, rng *rand.Rand) {
	var out []Entry
	for i := range 5 {
		detail := FanSubscribed
		switch rng.IntN(6) {
		case 0:
			detail = FanUnsubscribed
		case 1:
			detail = FanMissed
		}
		out = append(out, Entry{At: epochR, Kind: Fanned, ID: fmt.Sprintf("e%d", i+1), Detail: detail})
	}
	for _, e := range run.Entries {
		switch {
		case (e.Kind == Paused || e.Kind == Resumed) && rng.IntN(2) == 0:
			e.Detail = PauseDisabled
		case e.Kind == Offered && rng.IntN(3) == 0:
			since := epochR.Add(time.Duration(rng.Int64N(int64(e.At.Sub(epochR) + 1))))
			out = append(out, Entry{At: e.At, Kind: MissingReplay, Worker: "operator", Until: since})
		case e.Kind == Replayed && rng.IntN(2) == 0:
			since := epochR.Add(time.Duration(rng.Int64N(int64(e.At.Sub(epochR) + 1))))
			e.Worker = "bulk"
			out = append(out, Entry{At: e.At, Kind: BulkReplay, Worker: "bulk", Until: since, Detail: BulkBegin}, e,
				Entry{At: e.At, Kind: BulkReplay, Worker: "bulk", Until: since, Detail: BulkEnd})
			continue
		}
		out = append(out, e)
	}
	for i := range out {
		out[i].Step = i
	}
	run.Entries = out
}

type gen struct {
	rng     *rand.Rand
	run     Run
	now     time.Time
	workers []string
	recs    map[string]*machine.Record // latest persisted, by ID
	token   uint64
}

func (g *gen) id() string { return fmt.Sprintf("e%d", 1+g.rng.IntN(5)) }

func (g *gen) worker() string { return g.workers[g.rng.IntN(len(g.workers))] }

func (g *gen) add(e Entry) {
	g.now = g.now.Add(time.Duration(g.rng.IntN(800)) * time.Millisecond)
	e.At = g.now
	if e.Worker == "" && e.Kind != Persisted {
		e.Worker = g.worker()
	}
	if e.Token == 0 && g.token > 0 && g.rng.IntN(4) > 0 {
		e.Token = g.token - uint64(g.rng.IntN(2))
	}
	g.run.Add(e)
}

// step adds one entry, or a few that belong together.
func (g *gen) step() {
	id, rng := g.id(), g.rng
	switch k := rng.IntN(20); {
	case k < 7:
		g.persist(id)
	case k < 9:
		g.add(Entry{Kind: Sent, ID: id, Attempt: g.attempt(id)})
	case k < 11:
		g.add(Entry{Kind: Replied, ID: id, Attempt: g.attempt(id), RetryAfter: time.Duration(rng.IntN(3)) * time.Second,
			Detail: []string{"delivered", "failed", "refused", "timeout"}[rng.IntN(4)]})
	case k < 12:
		g.add(Entry{Kind: []Kind{Offered, Acked, Refused}[rng.IntN(3)], ID: id, Seq: g.seq(id),
			Detail: []string{"queue full", "store unavailable"}[rng.IntN(2)]})
	case k < 13:
		g.add(Entry{Kind: []Kind{Applied, Discarded}[rng.IntN(2)], ID: id,
			Detail: []string{"duplicate", DiscardFenced, DiscardUnverified + ": bad signature"}[rng.IntN(3)]})
	case k < 15:
		g.add(Entry{Kind: CircuitChanged, Circuit: machine.Circuit(rng.IntN(4))})
	case k < 16:
		g.add(Entry{Kind: []Kind{Probed, ProbeReplied}[rng.IntN(2)], Detail: "healthy"})
	case k < 17:
		g.add(Entry{Kind: Restarted})
	case k < 18:
		if _, ok := g.recs[id]; ok {
			g.add(Entry{Kind: Adopted, ID: id, Seq: g.seq(id)})
		}
	case k < 19:
		kind := LeaseGranted
		if rng.IntN(2) == 0 {
			kind = LeaseRenewed
		} else {
			g.token += uint64(rng.IntN(3))
		}
		token := g.token
		if token > 0 && rng.IntN(4) == 0 {
			token-- // a renewal or a grant of a superseded token
		}
		g.add(Entry{Kind: kind, Token: token, Until: g.now.Add(time.Duration(rng.IntN(5)) * time.Second)})
	default:
		switch rng.IntN(5) {
		case 0:
			g.add(Entry{Kind: []Kind{Paused, Resumed}[rng.IntN(2)], Worker: "operator"})
		case 1:
			g.replay(id)
		case 2:
			g.add(Entry{Kind: LeaseDropped, Token: g.token, Detail: "ran out"})
		default:
			g.add(Entry{Kind: WriteRejected, ID: id, Detail: "stale"})
		}
	}
}

// replay is an operator's replay of id, whatever its state: a fresh
// budget under a new token.
func (g *gen) replay(id string) {
	prev := g.recs[id]
	if prev == nil {
		return
	}
	r := *prev
	r.State, r.Attempts, r.Reason, r.AcceptedAt, r.NextAt = machine.Pending, 0, 0, g.now, g.now
	g.token++
	g.recs[id] = &r
	g.add(Entry{Kind: Replayed, ID: id, Seq: r.Seq, Worker: "operator", Token: g.token, Record: r})
}

func (g *gen) seq(id string) uint64 {
	var n uint64
	fmt.Sscanf(id, "e%d", &n)
	if g.rng.IntN(10) == 0 {
		n++
	}
	return n
}

func (g *gen) attempt(id string) int {
	if r := g.recs[id]; r != nil && g.rng.IntN(4) > 0 {
		return r.Attempts
	}
	return g.rng.IntN(4)
}

// persist writes the next version of id's record: mostly the next step of
// its life, sometimes a step back or a rewrite.
func (g *gen) persist(id string) {
	rng := g.rng
	// First persisted with its own seq, so that the first owing event
	// by seq, which parking names, is one.
	var seq uint64
	fmt.Sscanf(id, "e%d", &seq)
	r := machine.Record{ID: id, Seq: seq, Payload: []byte("p"), AcceptedAt: g.now, State: machine.Pending}
	if prev := g.recs[id]; prev != nil {
		r = *prev
		r.Attempts += rng.IntN(3) - rng.IntN(2)
		r.State = machine.State(1 + rng.IntN(5))
		if rng.IntN(12) == 0 {
			r.Payload = []byte("changed")
		}
		if rng.IntN(12) == 0 {
			r.Seq++
		}
	} else if rng.IntN(5) == 0 {
		r.Payload = []byte("too long")
	}
	if r.State == machine.Dead {
		r.Reason = machine.DeadReason(1 + rng.IntN(3))
	} else {
		r.Reason = 0
	}
	r.NextAt = g.now.Add(time.Duration(rng.IntN(2500)) * time.Millisecond)
	e := Entry{Kind: Persisted, ID: id, Seq: r.Seq, Record: r, Worker: g.worker()}
	if rng.IntN(25) == 0 {
		e.ID = g.id() // an observer that named another ID
	}
	g.recs[id] = &r
	g.add(e)
}

// finish sets the run's bounds and the store's final content: the latest
// records, a few lost or changed.
func (g *gen) finish() {
	rng := g.rng
	g.run.Finished = rng.IntN(3) > 0
	g.run.ReceiverFences = rng.IntN(2) == 0
	g.run.ReceiverVerdicts = rng.IntN(2) == 0
	g.run.Slack = time.Duration(rng.IntN(2)) * time.Second
	g.run.Skew = time.Duration(rng.IntN(2)) * 100 * time.Millisecond
	g.run.Stall = time.Duration(rng.IntN(2)) * 200 * time.Millisecond
	g.run.ClockMargin = time.Duration(rng.IntN(3)) * 100 * time.Millisecond
	if rng.IntN(2) == 0 {
		g.run.HealedAt = epochR.Add(time.Duration(rng.IntN(20)) * time.Second)
		g.run.LivenessBound = time.Duration(1+rng.IntN(20)) * time.Second
	}
	for i := 1; i <= 6; i++ {
		r := g.recs[fmt.Sprintf("e%d", i)]
		switch {
		case r == nil && rng.IntN(3) > 0, r != nil && rng.IntN(10) == 0:
			continue
		case r == nil:
			g.run.Final = append(g.run.Final, machine.Record{ID: fmt.Sprintf("e%d", i), State: machine.Delivered})
			continue
		}
		f := *r
		if rng.IntN(8) == 0 {
			f.State = machine.State(1 + rng.IntN(5))
		}
		g.run.Final = append(g.run.Final, f)
	}
	// Drawn last, so that the logs and bounds above stay as they were.
	if rng.IntN(2) == 0 {
		g.run.OwnerWait = time.Duration(rng.IntN(3)) * time.Second
	}
}

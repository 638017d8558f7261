package scenarios

import (
	"strings"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/sim"
)

// platformOps is the operators' scenario of the platform (issue 27): an
// endpoint with a retry policy of its own, one created late and given
// what it missed, and a bulk replay job whose serve crashes.
func platformOps() Scenario {
	return Scenario{
		Name:      "platform-ops",
		Why:       "An endpoint's own retry policy governs its stream alone; an endpoint created late gets exactly the messages it missed since the instant asked, once, and asking again adds nothing; a bulk replay job a crash interrupts, resumed from its cursor, replays each dead letter once.",
		Faults:    "20 messages to three endpoints: ep0 answers poison to 4 of them and retries 3 times, 200ms to 400ms apart (the world's policy: 8 times from 1s); ep1 is created at 6s and asks at 8s and again at 12s for what it missed since 2s; ep2 is healthy; at 15s ep0's dead letters are replayed by a job one a page, whose serve crashes after its first page, resumed by another serve 3s after its lease ended",
		Expect:    "ep0's poison events die after 3 attempts; ep1 accepts every message since 2s and none before, the second ask adding none; the job replays each of ep0's 4 dead letters once, across the crash",
		World:     platformOpsWorld,
		ReadsLogs: true,
		Check:     checkPlatformOps,
	}
}

// platformOpsWorld is the platform-ops scenario's world.
func platformOpsWorld(seed uint64) sim.World {
	w := Base(seed)
	w.Events, w.Streams = 20*3, 3
	w.Interarrival = 500 * time.Millisecond
	w.Policy.MaxAttempts, w.Policy.BaseBackoff, w.Policy.MaxBackoff = 8, time.Second, 5*time.Second
	w.Receiver = sim.Receiver{Poison: []string{sim.EventID(3 * 1), sim.EventID(3 * 5), sim.EventID(3 * 9), sim.EventID(3 * 13)}}
	w.FaultsEnd = 20 * time.Second
	w.Platform = sim.Platform{
		EventTypes: []string{"order.paid"},
		Endpoints: []sim.PlatformEndpoint{
			{MaxAttempts: 3, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 400 * time.Millisecond},
			{Created: 6 * time.Second},
			{},
		},
		Missing: []sim.MissingReplay{{Endpoint: 1, At: 8 * time.Second, Since: 2 * time.Second}, {Endpoint: 1, At: 12 * time.Second, Since: 2 * time.Second}},
		Replays: []sim.BulkReplay{{Endpoint: 0, At: 15 * time.Second, All: true, Page: 1, CrashAfter: 1, Resume: 3 * time.Second}},
	}
	return w
}

// checkPlatformOps asserts platform-ops' expectations from the logs of
// ep0 and ep1.
func checkPlatformOps(r sim.Result) []string {
	var c checklist
	sends, died, jobReplays := map[string]int{}, 0, map[string]int{}
	for _, e := range entries(r.Runs[0]) {
		switch {
		case e.Kind == invariants.Sent:
			sends[e.ID]++
		case e.Kind == invariants.Persisted && e.Record.Reason.String() == "exhausted" && sends[e.ID] == 3:
			died++
		case e.Kind == invariants.Replayed && strings.HasPrefix(e.Worker, "replay rpl_"):
			jobReplays[e.ID]++
		}
	}
	c.expect(died >= 4, "%d of ep0's poison deliveries died exhausted after 3 attempts; want 4", died)
	c.expect(len(jobReplays) == 4, "the job replayed %d dead letters (%v); want ep0's 4", len(jobReplays), jobReplays)
	for id, n := range jobReplays {
		c.expect(n == 1, "the job replayed %s %d times", id, n)
	}
	since := sim.Epoch.Add(2 * time.Second)
	wanted, accepted := 0, 0
	for _, e := range entries(r.Runs[1]) {
		switch {
		case e.Kind == invariants.Fanned && (e.Detail == invariants.FanSubscribed || e.Detail == invariants.FanMissed && !e.At.Before(since)):
			wanted++
		case e.Kind == invariants.Persisted && e.Record.Seq > 0 && e.Worker == "store":
			accepted++
		}
	}
	c.expect(wanted > 0 && accepted == wanted, "ep1 accepted %d deliveries; want %d, each message since 2s", accepted, wanted)
	return c
}

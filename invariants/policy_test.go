// The policy rules report exactly the broken promise, by rule, event and
// step, for hand-built timed logs that each break one, and nothing for
// logs that keep the policy, including its edges (a capped or ignored
// Retry-After, a half-open close, a released backlog, a restart).
package invariants_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// timedPolicy has round numbers: backoff 1s doubling to 8s with 20%
// jitter (after failed attempt 1 the next is due 0.8s to 1s later),
// Retry-After capped at 5s, attempts time out after 3s, the breaker trips
// after 3 failures, MaxAge is a minute.
func timedPolicy() machine.Config {
	p := machine.DefaultConfig()
	p.BaseBackoff, p.MaxBackoff, p.JitterPercent = time.Second, 8*time.Second, 20
	p.MaxRetryAfter = 5 * time.Second
	p.AttemptTimeout = 3 * time.Second
	p.BreakerThreshold = 3
	p.ProbeTimeout = 2 * time.Second
	p.MaxAge = time.Minute
	p.Ordering, p.Window = machine.Independent, 8
	return p
}

// tlog builds a timed observation log as a sender that keeps the policy
// writes it; each method returns the Step of the entry a row may expect.
type tlog struct {
	run    invariants.Run
	now    time.Duration
	seq    uint64
	recs   map[string]machine.Record
	worker string
	token  uint64
}

func newTimed(p machine.Config) *tlog {
	b := &tlog{run: invariants.Run{Policy: p}, recs: map[string]machine.Record{}}
	b.circuit(machine.Closed)
	return b
}

func (b *tlog) at(d time.Duration) *tlog { b.now = d; return b }

func (b *tlog) add(e invariants.Entry) int {
	e.At = epoch.Add(b.now)
	if e.Worker == "" {
		e.Worker = b.worker
	}
	b.run.Add(e)
	return len(b.run.Entries) - 1
}

func (b *tlog) put(id string, f func(r *machine.Record)) int {
	r := b.recs[id]
	f(&r)
	b.recs[id] = r
	return b.add(invariants.Entry{Kind: invariants.Persisted, ID: id, Seq: r.Seq, Record: r, Token: b.token})
}

func (b *tlog) accept(id string) int {
	b.seq++
	b.recs[id] = machine.Record{ID: id, Seq: b.seq, AcceptedAt: epoch.Add(b.now), NextAt: epoch.Add(b.now), State: machine.Pending}
	b.add(invariants.Entry{Kind: invariants.Offered, ID: id})
	b.put(id, func(*machine.Record) {})
	return b.add(invariants.Entry{Kind: invariants.Acked, ID: id, Seq: b.seq})
}

// start persists the next attempt (due to time out AttemptTimeout later)
// and returns the step of its persist; the send follows at once.
func (b *tlog) start(id string) int {
	s := b.put(id, func(r *machine.Record) {
		r.Attempts++
		r.NextAt = epoch.Add(b.now + b.run.Policy.AttemptTimeout)
	})
	b.add(invariants.Entry{Kind: invariants.Sent, ID: id, Seq: b.recs[id].Seq, Attempt: b.recs[id].Attempts, Token: b.token})
	return s
}

// fail is a failed reply with hint, and the record persisted in st with
// its next attempt due after next; it returns the persist's step.
func (b *tlog) fail(id string, st machine.State, next, hint time.Duration) int {
	b.add(invariants.Entry{Kind: invariants.Replied, ID: id, Attempt: b.recs[id].Attempts, RetryAfter: hint, Detail: "failed"})
	return b.put(id, func(r *machine.Record) { r.State, r.NextAt = st, epoch.Add(b.now+next) })
}

func (b *tlog) deliver(id string) int {
	b.add(invariants.Entry{Kind: invariants.Replied, ID: id, Attempt: b.recs[id].Attempts, Detail: "delivered"})
	return b.put(id, func(r *machine.Record) { r.State = machine.Delivered })
}

func (b *tlog) park(id string) int {
	return b.put(id, func(r *machine.Record) { r.State = machine.Parked })
}

func (b *tlog) circuit(c machine.Circuit) int {
	return b.add(invariants.Entry{Kind: invariants.CircuitChanged, Circuit: c})
}

func (b *tlog) probe() int { return b.add(invariants.Entry{Kind: invariants.Probed, Detail: "1"}) }

func (b *tlog) probeReply(answer string) int {
	return b.add(invariants.Entry{Kind: invariants.ProbeReplied, Attempt: 1, Detail: answer})
}

func (b *tlog) restart() int {
	return b.add(invariants.Entry{Kind: invariants.Restarted, Detail: "test"})
}

// backoffs are delays within the bounds after failed attempts 1, 2, 3.
var backoffs = []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond, 3600 * time.Millisecond}

// fails is three failures of e1 at 0.1s, 1.1s and 3s, each retried at its
// NextAt; with trip the third trips the breaker.
func (b *tlog) fails(trip bool) {
	b.accept("e1")
	for i := range 3 {
		b.at(b.recs["e1"].NextAt.Sub(epoch)).start("e1")
		b.at(b.now + 100*time.Millisecond)
		if trip && i == 2 {
			b.circuit(machine.Checking)
		}
		b.fail("e1", machine.Retry, backoffs[i], 0)
	}
}

func (b *tlog) trip() { b.fails(true) }

// pausedStep, as worker w1, fails e1 twice (the streak is 2), starts e3 and e4 at 1.2s,
// then at 5s, after a pause past their timeouts, logs one step: the reply
// delivering e4 (its input) and, in Seq order, the landings of e3's
// timeout and of the delivery. With trip, e2 and e5 were started and time
// out too, so three timeouts follow the delivery in the machine's order.
func (b *tlog) pausedStep(trip bool) {
	const ms = time.Millisecond
	b.worker = "w1" // a worker of a cluster, which may pause
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5"} {
		b.accept(id)
	}
	b.start("e1")
	b.at(100*ms).fail("e1", machine.Retry, time.Second, 0)
	b.at(1100 * ms).start("e1")
	b.at(1200*ms).fail("e1", machine.Retry, 2*time.Second, 0)
	b.start("e3")
	b.start("e4")
	if trip {
		b.start("e2")
		b.start("e5")
	}
	timedOut := func(id string) {
		b.put(id, func(r *machine.Record) { r.State, r.NextAt = machine.Retry, epoch.Add(b.now+900*ms) })
	}
	b.at(5 * time.Second).add(invariants.Entry{Kind: invariants.Replied, ID: "e4", Attempt: 1, Detail: "delivered"})
	if trip {
		timedOut("e2")
	}
	timedOut("e3")
	b.put("e4", func(r *machine.Record) { r.State = machine.Delivered })
	if trip {
		timedOut("e5")
	}
}

// stalledFailure, as worker w1, trips the breaker at 3s with a probe out (it times out
// at 5s), logs at 5.6s the timeout of e2, which was in flight since 1s,
// then a healthy probe reply that closes the circuit, and moves to 7s.
func (b *tlog) stalledFailure() {
	const ms = time.Millisecond
	b.worker = "w1" // a worker of a cluster, which may stall
	b.accept("e1")
	b.accept("e2")
	b.start("e1")
	b.at(100*ms).fail("e1", machine.Retry, 900*ms, 0)
	b.at(time.Second).start("e1")
	b.start("e2")
	b.at(1100*ms).fail("e1", machine.Retry, 1800*ms, 0)
	b.at(2900 * ms).start("e1")
	b.at(3 * time.Second).circuit(machine.Checking)
	b.fail("e1", machine.Retry, 3600*ms, 0)
	b.probe()
	b.at(5600*ms).put("e2", func(r *machine.Record) { r.State, r.NextAt = machine.Retry, epoch.Add(b.now+900*ms) })
	b.probeReply("healthy")
	b.circuit(machine.Closed)
	b.at(7 * time.Second)
}

// policyRow is a timed log that breaks one policy rule, or none.
type policyRow struct {
	name   string
	reason string
	policy func(p *machine.Config) // changes timedPolicy, if set
	// build writes the log and returns the violations it must yield.
	build func(b *tlog) []found
}

// checkPolicyRows checks each row's log against the policy rules.
func checkPolicyRows(t *testing.T, rows []policyRow) {
	t.Helper()
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			p := timedPolicy()
			if tt.policy != nil {
				tt.policy(&p)
			}
			b := newTimed(p)
			want := tt.build(b)
			checkPolicy(t, tt.reason, b.run, want)
		})
	}
}

// ms is n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestRetryTiming (retry-timing): the NextAt persisted with a failure lies
// within the policy's delays, the same owner never starts the next attempt
// before it, and a single sender starts it then when nothing holds it back.
func TestRetryTiming(t *testing.T) {
	const s = time.Second
	checkPolicyRows(t, []policyRow{
		{
			name:   "retry at the backoff",
			reason: "a failure, the next attempt 0.9s later, within 0.8s..1s",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, ms(900), 0)
				b.at(s).start("e1")
				b.at(ms(1100)).deliver("e1")
				return nil
			},
		},
		{
			name:   "retry too soon",
			reason: "a next attempt 0.5s after failed attempt 1 is below the jittered backoff",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				return []found{{invariants.RetryTiming, "e1", b.at(ms(100)).fail("e1", machine.Retry, ms(500), 0)}}
			},
		},
		{
			name:   "retry too late",
			reason: "a next attempt 2s after failed attempt 1 is above the backoff, with no hint to excuse it",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				return []found{{invariants.RetryTiming, "e1", b.at(ms(100)).fail("e1", machine.Retry, 2*s, 0)}}
			},
		},
		{
			name:   "retry-after honoured",
			reason: "a 4s hint postpones the retry to 4s",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, 4*s, 4*s)
				return nil
			},
		},
		{
			name:   "retry-after honoured by a landing a slow save delayed",
			reason: "the worker decided at the reply; the store wrote 400ms later (a slow call, within Stall): the 4s hint still counts from the reply",
			build: func(b *tlog) []found {
				b.run.Stall, b.run.Skew = ms(500), ms(500)
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).add(invariants.Entry{Kind: invariants.Replied, ID: "e1", Attempt: 1, RetryAfter: 4 * s, Detail: "failed"})
				b.at(ms(500)).put("e1", func(r *machine.Record) { r.State, r.NextAt = machine.Retry, epoch.Add(ms(100)+4*s) })
				return nil
			},
		},
		{
			name:   "retry-after ignored",
			reason: "a 4s hint, and the retry is due after the bare backoff",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				return []found{{invariants.RetryTiming, "e1", b.at(ms(100)).fail("e1", machine.Retry, s, 4*s)}}
			},
		},
		{
			name:   "retry-after above the cap is capped",
			reason: "a 60s hint counts as MaxRetryAfter (5s)",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, 5*s, 60*s)
				return nil
			},
		},
		{
			name:   "retry-after above the cap obeyed",
			reason: "waiting the whole 60s hint exceeds MaxRetryAfter",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				return []found{{invariants.RetryTiming, "e1", b.at(ms(100)).fail("e1", machine.Retry, 60*s, 60*s)}}
			},
		},
		{
			name:   "zero cap ignores hints",
			reason: "with MaxRetryAfter 0 a hint changes nothing: waiting for it is too late",
			policy: func(p *machine.Config) { p.MaxRetryAfter = 0 },
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, s, 4*s)
				b.accept("e2")
				b.start("e2")
				return []found{{invariants.RetryTiming, "e2", b.at(ms(200)).fail("e2", machine.Retry, 4*s, 4*s)}}
			},
		},
		{
			name:   "timeout backs off from the timeout",
			reason: "no reply: the attempt fails at AttemptTimeout and backs off from there",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(3*s).put("e1", func(r *machine.Record) { r.State, r.NextAt = machine.Retry, epoch.Add(3*s+ms(900)) })
				return nil
			},
		},
		{
			name:   "retry late",
			reason: "due at 1s with the circuit closed and the window free, it went out at 1.5s",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, ms(900), 0)
				return []found{{invariants.RetryTiming, "e1", b.at(ms(1500)).start("e1")}}
			},
		},
		{
			name:   "retry held by the window",
			reason: "due at 1s while the window (1) is taken by e2: it waits, and that is no fault",
			policy: func(p *machine.Config) { p.Window = 1 },
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, ms(900), 0)
				b.accept("e2")
				b.at(ms(200)).start("e2")
				b.at(ms(1500)).deliver("e2")
				b.start("e1")
				return nil
			},
		},
		{
			name:   "retry held by the circuit",
			reason: "due at 1s while the breaker checks the channel: it waits for the probe",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, ms(900), 0)
				b.at(ms(500)).circuit(machine.Checking)
				b.probe()
				b.at(ms(1400)).probeReply("healthy")
				b.circuit(machine.Closed)
				b.start("e1")
				return nil
			},
		},
		{
			name:   "sent before its NextAt",
			reason: "the same owner starts attempt 2 before the NextAt it persisted",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, ms(900), 0)
				return []found{{invariants.RetryTiming, "e1", b.at(ms(500)).start("e1")}}
			},
		},
	})
}

// TestBreaker (breaker): after BreakerThreshold consecutive failures, or
// one after a half-open close, the next thing sent is a probe; nothing is
// sent while a probe is unanswered.
func TestBreaker(t *testing.T) {
	const s = time.Second
	checkPolicyRows(t, []policyRow{
		{
			name:   "breaker trips and probes",
			reason: "three failures, the circuit checks, a probe is the next thing sent",
			build: func(b *tlog) []found {
				b.trip()
				b.probe()
				b.at(5 * s).probeReply("healthy")
				b.circuit(machine.Closed)
				b.at(ms(6600)).start("e1")
				return nil
			},
		},
		{
			name:   "breaker never trips",
			reason: "after three consecutive failures an attempt goes out instead of a probe",
			build: func(b *tlog) []found {
				b.fails(false)
				b.at(5 * s).accept("e2")
				return []found{{invariants.Breaker, "e2", b.start("e2") + 1}}
			},
		},
		{
			name:   "a success resets the streak",
			reason: "two failures, a delivery, a failure: no probe owed",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.accept("e2")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, s, 0)
				b.at(ms(1100)).start("e1")
				b.at(ms(1200)).fail("e1", machine.Retry, 2*s, 0)
				b.start("e2")
				b.at(ms(1300)).deliver("e2")
				b.at(ms(3200)).start("e1")
				b.at(ms(3300)).fail("e1", machine.Retry, 4*s, 0)
				b.accept("e3")
				b.start("e3")
				return nil
			},
		},
		{
			name:   "a paused step lands its reply before its timeouts",
			reason: "after a pause one step lands e3's delivery, then e2's timeout; Seq order logs e2 first, yet the streak is 1, no probe owed",
			build: func(b *tlog) []found {
				b.pausedStep(false)
				b.start("e1")
				return nil
			},
		},
		{
			name:   "a paused step's timeouts still trip after its reply",
			reason: "as above, but three timeouts follow the delivery in the machine's order: a probe is owed",
			build: func(b *tlog) []found {
				b.pausedStep(true)
				return []found{{invariants.Breaker, "e1", b.start("e1") + 1}}
			},
		},
		{
			name:   "a stalled failure while the probe was out",
			reason: "the failure is logged 2.5s after the probe, past its 2s timeout, but the worker stalled up to 1s before logging it: no probe owed",
			build: func(b *tlog) []found {
				b.run.Stall = s
				b.stalledFailure()
				b.start("e1")
				return nil
			},
		},
		{
			name:   "a late failure with no stall to explain it",
			reason: "the same log without a stall: the probe had timed out, so the failure owed a new one",
			build: func(b *tlog) []found {
				b.stalledFailure()
				return []found{{invariants.Breaker, "e1", b.start("e1") + 1}}
			},
		},
		{
			name:   "attempt while the probe is out",
			reason: "the circuit says closed, but the probe sent at 3s has no answer yet",
			build: func(b *tlog) []found {
				b.trip()
				b.probe()
				b.circuit(machine.Closed)
				b.at(4 * s).accept("e2")
				return []found{{invariants.Breaker, "e2", b.start("e2") + 1}}
			},
		},
		{
			name:   "half-open: one failure probes again",
			reason: "after a healthy probe reopens the stream, its first failure owes a probe",
			build: func(b *tlog) []found {
				b.trip()
				b.probe()
				b.at(5 * s).probeReply("unhealthy")
				b.circuit(machine.Open)
				b.park("e1")
				b.at(6 * s).probe()
				b.at(7 * s).probeReply("healthy")
				b.circuit(machine.Closed)
				b.put("e1", func(r *machine.Record) { r.State, r.NextAt = machine.Pending, epoch.Add(7*s) })
				b.start("e1")
				b.at(7*s+ms(100)).fail("e1", machine.Retry, 8*s, 0)
				b.at(8 * s).accept("e2")
				return []found{{invariants.Breaker, "e2", b.start("e2") + 1}}
			},
		},
	})
}

// TestParking (parking): once the circuit opens, every waiting record is
// persisted parked before the next send or probe.
func TestParking(t *testing.T) {
	const s = time.Second
	checkPolicyRows(t, []policyRow{
		{
			name:   "open parks every waiting record",
			reason: "the probe fails, both waiting records are parked, then the next probe",
			build: func(b *tlog) []found {
				b.trip()
				b.accept("e2")
				b.probe()
				b.at(5 * s).probeReply("unhealthy")
				b.circuit(machine.Open)
				b.park("e1")
				b.park("e2")
				b.at(6 * s).probe()
				return nil
			},
		},
		{
			name:   "open, parked only in memory",
			reason: "the circuit opens and e2 is never persisted as parked before the next probe",
			build: func(b *tlog) []found {
				b.trip()
				b.accept("e2")
				b.probe()
				b.at(5 * s).probeReply("unhealthy")
				b.circuit(machine.Open)
				b.park("e1")
				return []found{{invariants.Parking, "e2", b.at(6 * s).probe()}}
			},
		},
		{
			name:   "failure while open persisted as retry",
			reason: "an attempt in flight when the circuit opened must land parked",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.accept("e2")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Retry, backoffs[0], 0)
				b.at(s).start("e1")
				b.at(ms(1100)).fail("e1", machine.Retry, backoffs[1], 0)
				b.at(2 * s).start("e2")
				b.at(ms(2900)).start("e1")
				b.at(ms(3000)).circuit(machine.Checking)
				b.fail("e1", machine.Retry, backoffs[2], 0)
				b.probe()
				b.at(ms(3500)).probeReply("unhealthy")
				b.circuit(machine.Open)
				b.park("e1")
				return []found{{invariants.Parking, "e2", b.at(ms(3600)).fail("e2", machine.Retry, s, 0)}}
			},
		},
	})
}

// TestRecovery (recovery): a rebuilt worker starts open over a parked
// record, not closed over one with an attempt behind it, probes first, and
// keeps the NextAt persisted before it.
func TestRecovery(t *testing.T) {
	const s = time.Second
	checkPolicyRows(t, []policyRow{
		{
			name:   "recovered open, probes first",
			reason: "a store holding a parked record: the new machine starts open and probes",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.park("e1")
				b.at(s).restart()
				b.circuit(machine.Open)
				b.probe()
				return nil
			},
		},
		{
			name:   "recovered closed with a parked record",
			reason: "a restarted worker that forgets the outage starts closed",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.park("e1")
				b.at(s).restart()
				return []found{{invariants.Recovery, "e1", b.circuit(machine.Closed)}}
			},
		},
		{
			name:   "recovered checking, sends before the probe",
			reason: "a record with an attempt behind it: probe before any send",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(4 * s).restart()
				b.circuit(machine.Checking)
				return []found{{invariants.Recovery, "e1", b.start("e1") + 1}}
			},
		},
		{
			name:   "recovered, resent before NextAt",
			reason: "attempt 1's timeout (3s) is its NextAt: a new owner may not resend before it",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(s).restart()
				b.circuit(machine.Checking)
				b.probe()
				b.at(2 * s).probeReply("healthy")
				b.circuit(machine.Closed)
				return []found{{invariants.Recovery, "e1", b.start("e1")}}
			},
		},
		{
			name:   "released backlog goes at once",
			reason: "a healthy probe releases parked records whatever their NextAt",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.start("e1")
				b.at(ms(100)).fail("e1", machine.Parked, ms(900), 0)
				b.at(ms(500)).start("e1")
				return nil
			},
		},
	})
}

// TestAge (age): no attempt starts at or after acceptance + MaxAge.
func TestAge(t *testing.T) {
	checkPolicyRows(t, []policyRow{
		{
			name:   "attempt at MaxAge",
			reason: "an attempt may start just before acceptance + MaxAge, not at it",
			build: func(b *tlog) []found {
				b.accept("e1")
				b.accept("e2")
				b.at(time.Minute - 1).start("e1")
				return []found{{invariants.Age, "e2", b.at(time.Minute).start("e2")}}
			},
		},
	})
}

// checkPolicy compares the policy violations of run with want.
func checkPolicy(t *testing.T, reason string, run invariants.Run, want []found) {
	t.Helper()
	policy := map[string]bool{}
	for _, n := range invariants.PolicyNames {
		policy[n] = true
	}
	var got []found
	vs := invariants.Check(run)
	for _, v := range vs {
		if policy[v.Invariant] {
			got = append(got, found{v.Invariant, v.ID, v.Step})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s\nCheck mismatch (-want +got):\n%s\nfull report: %v", reason, diff, vs)
	}
	sameWithReused(t, run, vs)
}

// reused is one Checker that judges every log of the table tests in turn:
// whatever a log leaves in its maps and slabs must not show in the next.
var reused invariants.Checker

// sameWithReused checks that the reused Checker finds exactly what Check
// found in run, twice: after other logs, then after run itself, whose
// IDs, workers and tokens are all the same as the log it judges.
func sameWithReused(t *testing.T, run invariants.Run, fresh []invariants.Violation) {
	t.Helper()
	for _, after := range []string{"other logs", "the same log"} {
		if diff := cmp.Diff(fresh, reused.Check(run)); diff != "" {
			t.Errorf("a Checker that judged %s first reports otherwise (-Check +Checker.Check):\n%s", after, diff)
		}
	}
}

func TestLeaseAndProducerRules(t *testing.T) {
	const s = time.Second
	grant := func(b *tlog, w string, token uint64, until time.Duration) int {
		b.worker, b.token = w, token
		return b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: token, Until: epoch.Add(until)})
	}
	renew := func(b *tlog, token uint64, until time.Duration) int {
		return b.add(invariants.Entry{Kind: invariants.LeaseRenewed, Token: token, Until: epoch.Add(until)})
	}
	offer := func(b *tlog, id string) int { return b.add(invariants.Entry{Kind: invariants.Offered, ID: id}) }
	tests := []struct {
		name   string
		reason string
		build  func(b *tlog) []found
	}{
		{"renewal extends", "a renewal keeps the token and moves Expires later", func(b *tlog) []found {
			grant(b, "w1", 1, 2*s)
			b.at(s)
			renew(b, 1, 3*s)
			b.accept("e1")
			return nil
		}},
		{"renewal shrinks", "a renewal with a shorter TTL moved Expires earlier", func(b *tlog) []found {
			grant(b, "w1", 1, 4*s)
			return []found{{invariants.Leases, "", b.at(s).add(invariants.Entry{Kind: invariants.LeaseRenewed, Token: 1, Until: epoch.Add(2 * s)})}}
		}},
		{"renewal just before expiry", "a lease is valid until the instant before Expires", func(b *tlog) []found {
			grant(b, "w1", 1, 2*s)
			b.at(2*s - 1)
			renew(b, 1, 4*s)
			b.accept("e1")
			return nil
		}},
		{"renewal at expiry", "at Expires exactly the lease has expired: only a new grant may follow", func(b *tlog) []found {
			grant(b, "w1", 1, 2*s)
			return []found{{invariants.Leases, "", b.at(2 * s).add(invariants.Entry{Kind: invariants.LeaseRenewed, Token: 1, Until: epoch.Add(4 * s)})}}
		}},
		{"renewal after expiry", "the store revived a lease that had expired, though nothing superseded it", func(b *tlog) []found {
			grant(b, "w1", 1, 2*s)
			b.at(s)
			renew(b, 1, 3*s)
			return []found{{invariants.Leases, "", b.at(3*s + 1).add(invariants.Entry{Kind: invariants.LeaseRenewed, Token: 1, Until: epoch.Add(6 * s)})}}
		}},
		{"renewal changes token", "a renewal handed back another token", func(b *tlog) []found {
			grant(b, "w1", 1, 4*s)
			return []found{{invariants.Leases, "", b.at(s).add(invariants.Entry{Kind: invariants.LeaseRenewed, Token: 2, Until: epoch.Add(5 * s)})}}
		}},
		{"tokens shrink", "a grant with a smaller token than the last", func(b *tlog) []found {
			grant(b, "w1", 5, 4*s)
			return []found{{invariants.Leases, "", grant(b, "w2", 3, 8*s)}}
		}},
		{"token reused", "every lease must carry a larger fencing token than the last", func(b *tlog) []found {
			grant(b, "w1", 2, 4*s)
			return []found{{invariants.Leases, "", grant(b, "w2", 2, 8*s)}}
		}},
		{"write after expiry", "the store accepted a write under a lease that had expired", func(b *tlog) []found {
			grant(b, "w1", 1, 2*s)
			b.at(s).accept("e1")
			return []found{{invariants.Leases, "e1", b.at(2 * s).start("e1")}}
		}},
		{"write under a superseded token", "an old owner's write went through after a newer grant", func(b *tlog) []found {
			grant(b, "w1", 1, 2*s)
			b.accept("e1")
			b.at(3 * s)
			grant(b, "w2", 2, 5*s)
			b.worker, b.token = "w1", 1
			return []found{{invariants.Leases, "e1", b.start("e1")}}
		}},
		{"re-offer acknowledged again", "an acknowledged ID offered again is acknowledged with its sequence", func(b *tlog) []found {
			b.accept("e1")
			offer(b, "e1")
			b.add(invariants.Entry{Kind: invariants.Acked, ID: "e1", Seq: 1, Detail: "duplicate"})
			return nil
		}},
		{"re-offer refused when full", "the queue is full, but a known ID must still be acknowledged", func(b *tlog) []found {
			b.accept("e1")
			offer(b, "e1")
			return []found{{invariants.Producers, "e1", b.add(invariants.Entry{Kind: invariants.Refused, ID: "e1", Detail: "queue full"})}}
		}},
		{"re-offer in a store outage", "a store that cannot be reached refuses anything; the producer retries", func(b *tlog) []found {
			b.accept("e1")
			offer(b, "e1")
			b.add(invariants.Entry{Kind: invariants.Refused, ID: "e1", Detail: "store unavailable"})
			return nil
		}},
		{"re-offer never answered", "an acknowledged ID offered again got no answer at all", func(b *tlog) []found {
			b.accept("e1")
			return []found{{invariants.Producers, "e1", offer(b, "e1")}}
		}},
		{"re-offer rewrites the payload", "answering a re-offer changed the stored payload", func(b *tlog) []found {
			b.accept("e1")
			offer(b, "e1")
			s := b.put("e1", func(r *machine.Record) { r.Payload = []byte("copy 2") })
			b.add(invariants.Entry{Kind: invariants.Acked, ID: "e1", Seq: 1, Detail: "duplicate"})
			return []found{{invariants.Producers, "e1", s}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTimed(timedPolicy())
			want := tt.build(b)
			checkPolicy(t, tt.reason, b.run, want)
		})
	}
}

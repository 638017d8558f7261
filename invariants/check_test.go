// Check reports exactly the broken guarantee, by invariant name, event
// and step, for hand-built logs that each break one (a test per
// invariant), and nothing for logs of correct runs, including the unusual
// but legal ones.
package invariants_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// found is the part of a Violation a test pins down: the detail is prose.
type found struct {
	Invariant string
	ID        string
	Step      int
}

// untimed are the policy rules about timing and the circuit, which these
// logs do not model (they keep no NextAt and no backoff): policy_test.go
// judges them with logs that do.
var untimed = map[string]bool{
	invariants.RetryTiming: true, invariants.Breaker: true, invariants.Parking: true,
	invariants.Recovery: true, invariants.Age: true,
}

// final is the Step of a violation about the final state.
const final = -1

// policy is the default policy with a budget small enough to exhaust by
// hand.
func policy() machine.Config {
	p := machine.DefaultConfig()
	p.MaxAttempts = 3
	return p
}

func independent() machine.Config {
	p := policy()
	p.Ordering = machine.Independent
	p.Window = 4
	return p
}

// logb builds an observation log the way a sender and receiver that follow
// the contract would write it; each method returns the Step of the entry it
// added, so that a row can name the entry it expects to be reported.
type logb struct {
	run     invariants.Run
	now     time.Duration
	seq     uint64
	recs    map[string]machine.Record
	ids     []string
	replied map[string]bool // "id#attempt" that have an answer
}

func newLog(p machine.Config) *logb {
	return &logb{run: invariants.Run{Policy: p}, recs: map[string]machine.Record{}, replied: map[string]bool{}}
}

func (b *logb) add(e invariants.Entry) int {
	e.At = epoch.Add(b.now)
	b.run.Add(e)
	return len(b.run.Entries) - 1
}

// wait advances the clock of the entries that follow.
func (b *logb) wait(d time.Duration) { b.now += d }

// store persists r as the latest version of its event.
func (b *logb) store(r machine.Record) int {
	if _, ok := b.recs[r.ID]; !ok {
		b.ids = append(b.ids, r.ID)
	}
	b.recs[r.ID] = r
	return b.add(invariants.Entry{Kind: invariants.Persisted, ID: r.ID, Seq: r.Seq, Record: r})
}

// persist stores a new version of a known event.
func (b *logb) persist(id string, st machine.State, attempts int, reason machine.DeadReason) int {
	r := b.recs[id]
	r.State, r.Attempts, r.Reason = st, attempts, reason
	return b.store(r)
}

// admit persists a new event as pending, without acknowledging it.
func (b *logb) admit(id string) int {
	b.seq++
	return b.store(machine.Record{ID: id, Seq: b.seq, AcceptedAt: epoch.Add(b.now), State: machine.Pending})
}

// accept persists a new event, then acknowledges it.
func (b *logb) accept(id string) int {
	b.admit(id)
	return b.ack(id, b.recs[id].Seq)
}

func (b *logb) ack(id string, seq uint64) int {
	return b.add(invariants.Entry{Kind: invariants.Acked, ID: id, Seq: seq})
}

// send sends attempt n without persisting it first.
func (b *logb) send(id string, n int) int {
	return b.add(invariants.Entry{Kind: invariants.Sent, ID: id, Seq: b.recs[id].Seq, Attempt: n})
}

// attempt persists the next attempt, then sends it. An earlier attempt
// that had no answer gets one first (failed), as it must before a retry.
func (b *logb) attempt(id string) int {
	if n := b.recs[id].Attempts; n > 0 && !b.replied[id+"#"+strconv.Itoa(n)] {
		b.reply(id, machine.OutcomeFailed)
	}
	n := b.recs[id].Attempts + 1
	b.persist(id, b.recs[id].State, n, machine.NotDead)
	return b.send(id, n)
}

func (b *logb) apply(id string) int {
	return b.add(invariants.Entry{Kind: invariants.Applied, ID: id, Seq: b.recs[id].Seq})
}

func (b *logb) discard(id, why string) int {
	return b.add(invariants.Entry{Kind: invariants.Discarded, ID: id, Seq: b.recs[id].Seq, Detail: why})
}

// discardDead is an operator discarding id's dead letter (store.Discard).
func (b *logb) discardDead(id string) int {
	return b.add(invariants.Entry{Kind: invariants.DeadDiscarded, ID: id, Seq: b.recs[id].Seq, Worker: "operator", Record: b.recs[id]})
}

// purge is retention deleting id's record: it leaves the store.
func (b *logb) purge(id string) int {
	r := b.recs[id]
	delete(b.recs, id)
	b.ids = slices.DeleteFunc(b.ids, func(x string) bool { return x == id })
	return b.add(invariants.Entry{Kind: invariants.Deleted, ID: id, Seq: r.Seq, Worker: "operator", Record: r})
}

func (b *logb) circuit(c machine.Circuit) int {
	return b.add(invariants.Entry{Kind: invariants.CircuitChanged, Circuit: c})
}

func (b *logb) restart() int {
	return b.add(invariants.Entry{Kind: invariants.Restarted, Detail: "test"})
}

func (b *logb) probe() int { return b.add(invariants.Entry{Kind: invariants.Probed, Detail: "1"}) }

// reply records the channel's answer to the event's latest attempt.
func (b *logb) reply(id string, o machine.Outcome) int {
	b.replied[id+"#"+strconv.Itoa(b.recs[id].Attempts)] = true
	return b.add(invariants.Entry{Kind: invariants.Replied, ID: id, Attempt: b.recs[id].Attempts, Detail: o.String()})
}

// deliver is one successful attempt: persisted, sent, applied, confirmed.
func (b *logb) deliver(id string) {
	b.attempt(id)
	b.apply(id)
	b.reply(id, machine.OutcomeDelivered)
	b.persist(id, machine.Delivered, b.recs[id].Attempts, machine.NotDead)
}

// die records the event dead for reason, without a new attempt, after
// what makes that reason hold: the channel's refusal (rejected), the
// passing of MaxAge (expired), or the last of MaxAttempts counted
// (exhausted).
func (b *logb) die(id string, reason machine.DeadReason) int {
	r := b.recs[id]
	attempts := r.Attempts
	switch reason {
	case machine.Rejected:
		b.reply(id, machine.OutcomeRefused)
	case machine.Expired:
		if deadline := r.AcceptedAt.Add(b.run.Policy.MaxAge).Sub(epoch); b.now < deadline {
			b.now = deadline
		}
	case machine.Exhausted:
		attempts = max(attempts, b.run.Policy.MaxAttempts)
		b.reply(id, machine.OutcomeFailed)
	}
	return b.persist(id, machine.Dead, attempts, reason)
}

// finish ends the log as a finished run whose store holds every record.
func (b *logb) finish() invariants.Run {
	b.run.Finished = true
	return b.stop()
}

// stop ends the log as a run stopped early.
func (b *logb) stop() invariants.Run {
	b.run.Final = nil
	for _, id := range b.ids {
		b.run.Final = append(b.run.Final, b.recs[id])
	}
	return b.run
}

// checkRow is a log that breaks one guarantee, or none.
type checkRow struct {
	name   string
	reason string
	// build writes the log and returns the violations it must yield.
	build func(b *logb) []found
}

// checkRows checks each row's log: Check reports exactly the violations
// it names, leaving out the timed policy rules (untimed), and a reused
// Checker reports the same.
func checkRows(t *testing.T, rows []checkRow) {
	t.Helper()
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			b := newLog(policy())
			want := tt.build(b)
			var got []found
			vs := invariants.Check(b.run)
			for _, v := range vs {
				if untimed[v.Invariant] {
					continue
				}
				got = append(got, found{v.Invariant, v.ID, v.Step})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\nCheck mismatch (-want +got):\n%s\nfull report: %v", tt.reason, diff, vs)
			}
			sameWithReused(t, b.run, vs)
		})
	}
}

// TestNothingLost (nothing-lost): an acknowledged event was persisted first,
// stays in the store, and delivered there means applied.
func TestNothingLost(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "acked event missing from the final store",
			reason: "an acknowledged event must stay in the store",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				b.accept("e2")
				b.deliver("e2")
				b.finish()
				b.run.Final = b.run.Final[1:]
				return []found{{invariants.NothingLost, "e1", final}}
			},
		},
		{
			name:   "acked before persisted",
			reason: "the producer may be told only once the event is durable",
			build: func(b *logb) []found {
				s := b.ack("e1", 1)
				b.admit("e1")
				b.deliver("e1")
				b.finish()
				return []found{{invariants.NothingLost, "e1", s}}
			},
		},
		{
			name:   "delivered in the store but never applied",
			reason: "delivered must mean the receiver's effect took place",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.NothingLost, "e1", final}}
			},
		},
	})
}

// TestAppliedOnce (applied-once): no ID applied twice, nothing applied that
// was never accepted, and a known ID never becomes a new event.
func TestAppliedOnce(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "applied twice",
			reason: "the receiver must absorb a redundant attempt (independent order, so only applied-once is at stake)",
			build: func(b *logb) []found {
				b.run.Policy = independent()
				b.accept("e1")
				b.attempt("e1")
				b.apply("e1")
				b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.attempt("e1")
				s := b.apply("e1")
				b.persist("e1", machine.Delivered, 2, machine.NotDead)
				b.finish()
				return []found{{invariants.AppliedOnce, "e1", s}}
			},
		},
		{
			name:   "applied but never accepted",
			reason: "the receiver may apply only what the sender accepted (independent order, see the strict row below)",
			build: func(b *logb) []found {
				b.run.Policy = independent()
				b.accept("e1")
				b.deliver("e1")
				s := b.add(invariants.Entry{Kind: invariants.Applied, ID: "ghost", Seq: 7})
				b.finish()
				return []found{{invariants.AppliedOnce, "ghost", s}}
			},
		},
		{
			name:   "applied but never accepted, strict",
			reason: "an unknown ID has no place in the order; it is reported once, as never accepted",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				s := b.add(invariants.Entry{Kind: invariants.Applied, ID: "ghost", Seq: 7})
				b.finish()
				return []found{{invariants.AppliedOnce, "ghost", s}}
			},
		},
		{
			name:   "ack with a different seq for a known ID",
			reason: "accepting a known ID again must not make a new event",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				s := b.ack("e1", 2)
				b.finish()
				return []found{{invariants.Producers, "e1", s}, {invariants.AppliedOnce, "e1", s}}
			},
		},
		{
			name:   "persisted again with a different seq",
			reason: "an event keeps the seq it was accepted with",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.apply("e1")
				r := b.recs["e1"]
				r.Seq, r.State = 9, machine.Delivered
				s := b.store(r)
				b.finish()
				return []found{{invariants.AppliedOnce, "e1", s}}
			},
		},
	})
}

// TestOrder (order): in strict mode sends wait for every earlier event to
// settle, and a fencing receiver applies in acceptance order; independent
// order promises nothing.
func TestOrder(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "strict: applied out of order",
			reason: "with a fencing receiver, a late attempt of a dead event landing after its successor breaks strict order",
			build: func(b *logb) []found {
				b.run.ReceiverFences = true
				b.accept("e1")
				b.accept("e2")
				b.attempt("e1")
				b.die("e1", machine.Expired)
				b.deliver("e2")
				s := b.apply("e1")
				b.finish()
				return []found{{invariants.Order, "e1", s}}
			},
		},
		{
			name:   "strict, receiver without fence: late attempt applied after its successor",
			reason: "without a fence, a dead event's late attempt may land after its successor; only the sends are held to order",
			build: func(b *logb) []found {
				b.accept("e1")
				b.accept("e2")
				b.attempt("e1")
				b.die("e1", machine.Expired)
				b.deliver("e2")
				b.apply("e1")
				b.finish()
				return nil
			},
		},
		{
			name:   "strict: seq 2 sent while seq 1 is pending",
			reason: "strict order holds every event behind the earliest non-terminal one",
			build: func(b *logb) []found {
				b.accept("e1")
				b.accept("e2")
				s := b.attempt("e2")
				b.reply("e2", machine.OutcomeFailed)
				b.persist("e2", machine.Retry, 1, machine.NotDead)
				b.deliver("e1")
				b.deliver("e2")
				b.finish()
				return []found{{invariants.Order, "e2", s}}
			},
		},
		{
			name:   "independent order applied out of order",
			reason: "independent ordering promises no order",
			build: func(b *logb) []found {
				b.run.Policy = independent()
				b.accept("e1")
				b.accept("e2")
				b.attempt("e1")
				b.attempt("e2")
				b.apply("e2")
				b.apply("e1")
				b.persist("e2", machine.Delivered, 1, machine.NotDead)
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return nil
			},
		},
	})
}

// TestBoundedSends (bounded-sends): at most MaxAttempts sends, each
// persisted first and numbered anew, within the window, never after
// terminal, while parked, or past an open or checking circuit.
func TestBoundedSends(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "more than MaxAttempts sends across a restart",
			reason: "the budget is counted durably, so a restart must not renew it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.attempt("e1")
				b.restart()
				b.circuit(machine.Closed)
				b.attempt("e1")
				b.persist("e1", machine.Retry, 3, machine.NotDead)
				s := b.attempt("e1")
				b.apply("e1")
				b.persist("e1", machine.Delivered, 4, machine.NotDead)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "attempt sent before it was persisted",
			reason: "the attempt count must be durable before the send",
			build: func(b *logb) []found {
				b.accept("e1")
				s := b.send("e1", 1)
				b.apply("e1")
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "attempt number reused after a restart",
			reason: "each attempt is numbered above the last, so a resend of attempt 1 is a send the store never counted",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.restart()
				b.circuit(machine.Closed)
				s := b.send("e1", 1)
				b.apply("e1")
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "sent after terminal",
			reason: "a delivered event is never sent again (its attempt is persisted, so only the terminal rule is broken)",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				b.persist("e1", machine.Delivered, 2, machine.NotDead)
				s := b.send("e1", 2)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "sent while parked",
			reason: "a parked event waits for a healthy probe, whatever circuit the sender reports",
			build: func(b *logb) []found {
				b.accept("e1")
				b.persist("e1", machine.Parked, 1, machine.NotDead)
				b.persist("e1", machine.Parked, 2, machine.NotDead)
				s := b.send("e1", 2)
				b.apply("e1")
				b.persist("e1", machine.Delivered, 2, machine.NotDead)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "sent while the circuit is open",
			reason: "only probes go out while the circuit is open",
			build: func(b *logb) []found {
				b.accept("e1")
				b.circuit(machine.Open)
				s := b.attempt("e1")
				b.circuit(machine.Closed)
				b.apply("e1")
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "sent while the circuit is checking",
			reason: "sending stops while the probe is out",
			build: func(b *logb) []found {
				b.accept("e1")
				b.circuit(machine.Checking)
				s := b.attempt("e1")
				b.circuit(machine.Closed)
				b.apply("e1")
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "strict: two attempts in flight",
			reason: "strict order allows one attempt in flight; the second starts before the first is answered or timed out",
			build: func(b *logb) []found {
				b.accept("e1")
				b.accept("e2")
				b.attempt("e1")
				b.wait(time.Second)
				s := b.persist("e2", machine.Pending, 1, machine.NotDead)
				b.stop()
				return []found{{invariants.BoundedSends, "e2", s}}
			},
		},
		{
			name:   "independent: a window of two",
			reason: "Window bounds the attempts in flight; an attempt stops counting at its reply or its AttemptTimeout",
			build: func(b *logb) []found {
				b.run.Policy = independent()
				b.run.Policy.Window = 2
				b.accept("e1")
				b.accept("e2")
				b.accept("e3")
				b.attempt("e1")
				b.attempt("e2")
				s := b.persist("e3", machine.Pending, 1, machine.NotDead)
				b.wait(b.run.Policy.AttemptTimeout) // all three have timed out
				b.persist("e3", machine.Pending, 2, machine.NotDead)
				b.stop()
				return []found{{invariants.BoundedSends, "e3", s}}
			},
		},
	})
}

// TestDeadKept (dead-kept): a dead event stays in the store, dead, with the
// reason it died for.
func TestDeadKept(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "dead record later persisted as pending",
			reason: "dead is terminal; the record returning to dead later does not undo the change",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				s := b.persist("e1", machine.Pending, 1, machine.NotDead)
				b.die("e1", machine.Rejected)
				b.finish()
				return []found{{invariants.DeadKept, "e1", s}}
			},
		},
		{
			name:   "dead record with another reason in the final store",
			reason: "a dead event keeps the reason it died for",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Exhausted)
				b.finish()
				b.run.Final[0].Reason = machine.Expired
				return []found{{invariants.DeadKept, "e1", final}}
			},
		},
		{
			name:   "dead record pending in the final store",
			reason: "a dead event stays dead in the store, whatever the log said last",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Exhausted)
				b.finish()
				b.run.Final[0].State, b.run.Final[0].Reason = machine.Pending, machine.NotDead
				return []found{{invariants.DeadKept, "e1", final}}
			},
		},
		{
			name:   "dead record missing from the final store",
			reason: "a dead event stays in the store: the report must name dead-kept, not only nothing-lost",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Exhausted)
				b.accept("e2")
				b.deliver("e2")
				b.finish()
				b.run.Final = b.run.Final[1:]
				return []found{{invariants.DeadKept, "e1", final}}
			},
		},
	})
}

// TestDeadDeserved (dead-deserved): a dead letter's reason is true of its history.
func TestDeadDeserved(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "dead (exhausted) too early",
			reason: "exhausted means MaxAttempts attempts were made",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				s := b.persist("e1", machine.Dead, 1, machine.Exhausted)
				b.finish()
				return []found{{invariants.DeadDeserved, "e1", s}}
			},
		},
		{
			name:   "dead (expired) before MaxAge",
			reason: "expired means MaxAge passed, or the next attempt would fall after it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				s := b.persist("e1", machine.Dead, 1, machine.Expired)
				b.finish()
				return []found{{invariants.DeadDeserved, "e1", s}}
			},
		},
		{
			name:   "dead (rejected) without a refusal",
			reason: "rejected means the channel refused it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.add(invariants.Entry{Kind: invariants.Replied, ID: "e1", Attempt: 1, Detail: machine.OutcomeFailed.String()})
				s := b.persist("e1", machine.Dead, 1, machine.Rejected)
				b.finish()
				return []found{{invariants.DeadDeserved, "e1", s}}
			},
		},
	})
}

// TestChannelTrue (channel-true): with the receiver's verdicts in the log,
// a refusal the receiver never made and a delivery that did not verify
// are reported; a refusal that follows the receiver's is not, and without
// ReceiverVerdicts the channel is taken at its word.
func TestChannelTrue(t *testing.T) {
	verdicts := func(b *logb) { b.run.ReceiverVerdicts = true }
	checkRows(t, []checkRow{
		{
			name:   "refused, but the receiver did not refuse",
			reason: "a channel that reads a retryable answer as a refusal kills the event",
			build: func(b *logb) []found {
				verdicts(b)
				b.accept("e1")
				b.attempt("e1")
				s := b.die("e1", machine.Rejected) // the reply before it is the refusal
				b.finish()
				return []found{{invariants.ChannelTrue, "e1", s - 1}}
			},
		},
		{
			name:   "refused after the receiver fenced it",
			reason: "the receiver's own refusal makes the channel's true",
			build: func(b *logb) []found {
				verdicts(b)
				b.accept("e1")
				b.attempt("e1")
				b.discard("e1", invariants.DiscardFenced)
				b.die("e1", machine.Rejected)
				b.finish()
				return nil
			},
		},
		{
			name:   "refused after the receiver answered a status the endpoint rejects",
			reason: "the endpoint's status policy makes the receiver's answer a refusal for good",
			build: func(b *logb) []found {
				verdicts(b)
				b.accept("e1")
				b.attempt("e1")
				b.add(invariants.Entry{Kind: invariants.Discarded, ID: "e1", Attempt: 1, Detail: invariants.DiscardRejected})
				b.die("e1", machine.Rejected)
				b.finish()
				return nil
			},
		},
		{
			name:   "retried after the receiver answered a status the endpoint rejects",
			reason: "a channel that drops the endpoint's status policy retries what must be rejected at once (reject-statuses-dropped)",
			build: func(b *logb) []found {
				verdicts(b)
				b.accept("e1")
				b.attempt("e1")
				b.add(invariants.Entry{Kind: invariants.Discarded, ID: "e1", Attempt: 1, Detail: invariants.DiscardRejected})
				s := b.reply("e1", machine.OutcomeFailed)
				b.deliver("e1")
				b.finish()
				return []found{{invariants.ChannelTrue, "e1", s}}
			},
		},
		{
			name:   "a rejected status for an attempt of before a replay, answered after it",
			reason: "the replay fenced that attempt off: the new budget's attempt of the same number owes it nothing",
			build: func(b *logb) []found {
				verdicts(b)
				b.grant(1)
				b.accept("e1")
				for n := 1; n <= 3; n++ {
					b.persist("e1", machine.Pending, n, machine.NotDead)
					b.sendAs("e1", n, 1)
					b.reply("e1", machine.OutcomeFailed)
				}
				b.persist("e1", machine.Dead, 3, machine.Exhausted)
				b.replay("e1", 2)
				b.add(invariants.Entry{Kind: invariants.Discarded, ID: "e1", Attempt: 1, Token: 1, Detail: invariants.DiscardRejected})
				b.grant(3)
				b.deliverAs("e1", 3)
				b.finish()
				return nil
			},
		},
		{
			name:   "a delivery that did not verify",
			reason: "the sender signs what the receiver can verify",
			build: func(b *logb) []found {
				verdicts(b)
				b.accept("e1")
				b.attempt("e1")
				s := b.discard("e1", invariants.DiscardUnverified+": no signature matched")
				b.reply("e1", machine.OutcomeFailed)
				b.deliver("e1")
				b.finish()
				return []found{{invariants.ChannelTrue, "e1", s}}
			},
		},
		{
			name:   "without the receiver's verdicts",
			reason: "a log of the sender's side alone takes the channel at its word",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.discard("e1", invariants.DiscardUnverified+": no signature matched")
				b.die("e1", machine.Rejected)
				b.finish()
				return nil
			},
		},
	})
}

// TestMonotonic (monotonic): terminal states never change, attempt counts
// never fall, and an accepted record keeps its identity.
func TestMonotonic(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "payload rewritten",
			reason: "a record's identity (payload, acceptance time) never changes after acceptance",
			build: func(b *logb) []found {
				b.accept("e1")
				r := b.recs["e1"]
				r.Payload = []byte("other")
				s := b.store(r)
				b.deliver("e1")
				b.finish()
				return []found{{invariants.Monotonic, "e1", s}}
			},
		},
		{
			name:   "delivered record later persisted as retry",
			reason: "delivered is terminal",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				s := b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.Monotonic, "e1", s}}
			},
		},
		{
			name:   "attempts going down",
			reason: "the attempt count only grows, or the budget could be renewed",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.attempt("e1")
				b.apply("e1")
				s := b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.persist("e1", machine.Delivered, 2, machine.NotDead)
				b.finish()
				return []found{{invariants.Monotonic, "e1", s}}
			},
		},
	})
}

// TestLiveness (liveness): every event settles by its deadline, or by the
// end of a finished run; a run stopped early may leave events queued.
func TestLiveness(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "pending when the run finished",
			reason: "a finished run leaves no event unsettled",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				b.accept("e2")
				b.finish()
				return []found{{invariants.Liveness, "e2", final}}
			},
		},
		{
			name:   "settled after LivenessBound from HealedAt",
			reason: "once the faults heal, every event settles within the bound",
			build: func(b *logb) []found {
				b.run.HealedAt = epoch.Add(10 * time.Second)
				b.run.LivenessBound = time.Minute
				b.accept("e1")
				b.wait(2 * time.Minute)
				b.deliver("e1")
				b.finish()
				return []found{{invariants.Liveness, "e1", final}}
			},
		},
		{
			name:   "settled past MaxAge plus AttemptTimeout",
			reason: "no event outlives its age budget plus one attempt",
			build: func(b *logb) []found {
				b.run.Policy.MaxAge = time.Minute
				b.accept("e1")
				b.wait(time.Minute + b.run.Policy.AttemptTimeout + time.Second)
				b.deliver("e1")
				b.finish()
				return []found{{invariants.Liveness, "e1", final}}
			},
		},
		{
			name:   "stopped early, but long after the deadline",
			reason: "a run stopped early still holds the events whose deadline it outlived",
			build: func(b *logb) []found {
				b.run.Policy.MaxAge = time.Minute
				b.accept("e1")
				b.wait(5 * time.Minute)
				b.accept("e2")
				b.stop()
				return []found{{invariants.Liveness, "e1", final}}
			},
		},
		{
			name:   "stopped early with a pending event",
			reason: "a run stopped on purpose may leave events queued",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				b.accept("e2")
				b.stop()
				return nil
			},
		},
	})
}

// TestCleanRuns: correct runs, including the unusual but legal ones, break
// nothing; a broken one is reported in step order.
func TestCleanRuns(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "normal run",
			reason: "events accepted, sent once and delivered in order break nothing",
			build: func(b *logb) []found {
				b.circuit(machine.Closed)
				for _, id := range []string{"e1", "e2", "e3"} {
					b.accept(id)
				}
				for _, id := range []string{"e1", "e2", "e3"} {
					b.wait(time.Second)
					b.deliver(id)
				}
				b.finish()
				return nil
			},
		},
		{
			name:   "duplicates discarded",
			reason: "a redundant attempt and a repeated offer are absorbed by the receiver and the sender",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.apply("e1")
				b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.ack("e1", 1)
				b.attempt("e1")
				b.discard("e1", "duplicate")
				b.persist("e1", machine.Delivered, 2, machine.NotDead)
				b.accept("e2")
				b.deliver("e2")
				b.finish()
				return nil
			},
		},
		{
			name:   "dead letter that was also applied",
			reason: "every reply lost: the receiver applied it, the sender gave up; allowed",
			build: func(b *logb) []found {
				b.accept("e1")
				b.accept("e2")
				b.attempt("e1")
				b.apply("e1")
				for n := 2; n <= 3; n++ {
					b.persist("e1", machine.Retry, n-1, machine.NotDead)
					b.attempt("e1")
					b.discard("e1", "duplicate")
				}
				b.die("e1", machine.Exhausted)
				b.deliver("e2")
				b.finish()
				return nil
			},
		},
		{
			name:   "outage: parked, probed, drained",
			reason: "parking under an open circuit and draining after a healthy probe is the designed path",
			build: func(b *logb) []found {
				b.accept("e1")
				b.accept("e2")
				b.attempt("e1")
				b.persist("e1", machine.Retry, 1, machine.NotDead)
				b.circuit(machine.Checking)
				b.probe()
				b.circuit(machine.Open)
				b.persist("e1", machine.Parked, 1, machine.NotDead)
				b.persist("e2", machine.Parked, 0, machine.NotDead)
				b.restart()
				b.circuit(machine.Open)
				b.probe()
				b.circuit(machine.Closed)
				b.persist("e1", machine.Pending, 1, machine.NotDead)
				b.persist("e2", machine.Pending, 0, machine.NotDead)
				b.deliver("e1")
				b.deliver("e2")
				b.finish()
				return nil
			},
		},
		{
			name:   "several violations",
			reason: "violations come in step order, final-state ones last",
			build: func(b *logb) []found {
				b.run.Policy = independent()
				s1 := b.ack("e1", 1)
				b.admit("e1")
				b.accept("e2")
				s2 := b.send("e2", 1)
				b.deliver("e1")
				b.finish()
				return []found{
					{invariants.NothingLost, "e1", s1},
					{invariants.BoundedSends, "e2", s2},
					{invariants.Liveness, "e2", final},
				}
			},
		},
	})
}

func TestViolationString(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		v      invariants.Violation
		want   string
	}{
		{
			name:   "event at a step",
			reason: "the usual form names the invariant, the event and the step",
			v:      invariants.Violation{Invariant: invariants.Order, ID: "e2", Step: 7, Detail: "applied seq 2 after seq 3"},
			want:   "order: event e2 at step 7: applied seq 2 after seq 3",
		},
		{
			name:   "event in the final state",
			reason: "step -1 reads as the final state",
			v:      invariants.Violation{Invariant: invariants.NothingLost, ID: "e1", Step: -1, Detail: "missing"},
			want:   "nothing-lost: event e1 at final state: missing",
		},
		{
			name:   "no event, at a step",
			reason: "a violation about no one event leaves the event out",
			v:      invariants.Violation{Invariant: invariants.BoundedSends, Step: 0, Detail: "x"},
			want:   "bounded-sends: at step 0: x",
		},
		{
			name:   "no event, final state",
			reason: "both omissions together",
			v:      invariants.Violation{Invariant: invariants.Liveness, Step: -1, Detail: "y"},
			want:   "liveness: at final state: y",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.v.String()); diff != "" {
				t.Errorf("%s\nString mismatch (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

func TestLivenessBound(t *testing.T) {
	p := machine.DefaultConfig()
	const latency = 50 * time.Millisecond
	base := invariants.LivenessBound(p, 10, 0, latency)

	t.Run("settle time alone", func(t *testing.T) {
		got := invariants.LivenessBound(p, 0, 0, latency)
		want := p.ProbeMaxInterval + p.ProbeTimeout + p.AttemptTimeout + max(p.MaxBackoff, p.MaxRetryAfter)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("bound with no events is the sender's longest wait (-want +got):\n%s", diff)
		}
	})
	tests := []struct {
		name   string
		reason string
		events int
		poison int
	}{
		{"more events", "each event needs its round trip", 11, 0},
		{"many more events", "the bound grows with the backlog", 1000, 0},
		{"one poison", "a poison event spends its whole budget after healing", 10, 1},
		{"more poison", "each poison event adds its budget", 10, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := invariants.LivenessBound(p, tt.events, tt.poison, latency)
			if got <= base {
				t.Errorf("%s: LivenessBound(events=%d, poison=%d) = %v, want above %v (events=10, poison=0)", tt.reason, tt.events, tt.poison, got, base)
			}
		})
	}
	t.Run("poison outweighs an event", func(t *testing.T) {
		event := invariants.LivenessBound(p, 11, 0, latency)
		poison := invariants.LivenessBound(p, 10, 1, latency)
		if poison <= event {
			t.Errorf("one poison event adds %v, one ordinary event %v; want the poison to cost more", poison-base, event-base)
		}
	})
}

// TestOperatorActions: an operator may discard a dead letter, and
// retention may delete a settled record (delivered, or a discarded dead
// letter), which is then missing from the store by design. Every other
// discard or deletion is caught, and a record missing with no deletion
// logged is still lost.
func TestOperatorActions(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "delivered record deleted by retention",
			reason: "a settled record is gone by design: not lost",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				b.purge("e1")
				b.finish()
				return nil
			},
		},
		{
			name:   "discarded dead letter deleted by retention",
			reason: "a discarded dead letter is settled: retention may delete it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				b.discardDead("e1")
				b.purge("e1")
				b.finish()
				return nil
			},
		},
		{
			name:   "discarded dead letter kept",
			reason: "a discard leaves the dead letter dead and in the store",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Exhausted)
				b.discardDead("e1")
				b.finish()
				return nil
			},
		},
		{
			name:   "delivered record missing with no deletion logged",
			reason: "only a deletion the log shows excuses a missing record",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				b.accept("e2")
				b.deliver("e2")
				b.purge("e1")
				b.finish()
				b.run.Final = nil // e2 vanished too, and nothing deleted it
				return []found{{invariants.NothingLost, "e2", final}}
			},
		},
		{
			name:   "pending record deleted by retention",
			reason: "an unsettled record is owed a delivery: deleting it loses it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				s := b.purge("e1")
				b.finish()
				return []found{{invariants.NothingLost, "e1", s}}
			},
		},
		{
			name:   "undiscarded dead letter deleted by retention",
			reason: "a dead letter is kept until an operator acts on it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				s := b.purge("e1")
				b.finish()
				return []found{{invariants.DeadKept, "e1", s}}
			},
		},
		{
			name:   "pending record discarded",
			reason: "only a dead letter may be discarded; a live event is still owed a delivery",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				s := b.discardDead("e1")
				b.reply("e1", machine.OutcomeDelivered)
				b.apply("e1")
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.NothingLost, "e1", s}}
			},
		},
		{
			name:   "discard that revived the dead letter",
			reason: "a discard must leave the dead letter dead, with its reason",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				r := b.recs["e1"]
				r.State, r.Reason = machine.Pending, machine.NotDead
				s := b.add(invariants.Entry{Kind: invariants.DeadDiscarded, ID: "e1", Seq: r.Seq, Worker: "operator", Record: r})
				b.finish()
				return []found{{invariants.DeadKept, "e1", s}}
			},
		},
	})
}

// replay is an operator replaying id (store.Replay) under fencing token
// token (0 without leases): the store hands it back pending, with no
// attempts, its MaxAge counting from now.
func (b *logb) replay(id string, token uint64) int {
	r := b.recs[id]
	r.State, r.Attempts, r.Reason, r.AcceptedAt, r.NextAt = machine.Pending, 0, machine.NotDead, epoch.Add(b.now), epoch.Add(b.now)
	b.recs[id] = r
	for k := range b.replied {
		if strings.HasPrefix(k, id+"#") {
			delete(b.replied, k) // the attempt numbers start again
		}
	}
	return b.add(invariants.Entry{Kind: invariants.Replayed, ID: id, Seq: r.Seq, Worker: "operator", Token: token, Record: r})
}

// sendAs sends attempt n of id under lease token.
func (b *logb) sendAs(id string, n int, token uint64) int {
	return b.add(invariants.Entry{Kind: invariants.Sent, ID: id, Seq: b.recs[id].Seq, Attempt: n, Token: token})
}

// TestReplay: an operator's replay of an undiscarded dead letter gives it
// a fresh budget (attempts, attempt numbers, reasons to die and deadline
// all count anew), but never a second effect; a replay of anything else
// is a store that rewrote history (monotonic).
func TestReplay(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "exhausted dead letter replayed and delivered",
			reason: "a replay starts a fresh budget: attempt 1 again, MaxAttempts sends again",
			build: func(b *logb) []found {
				b.accept("e1")
				for range 3 {
					b.attempt("e1")
				}
				b.die("e1", machine.Exhausted)
				b.wait(time.Minute)
				b.replay("e1", 0)
				b.attempt("e1")
				b.attempt("e1")
				b.deliver("e1")
				b.finish()
				return nil
			},
		},
		{
			name:   "replayed dead letter dies again",
			reason: "a replayed event may die again, for a reason that holds in its new budget",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				b.replay("e1", 0)
				for range 3 {
					b.attempt("e1")
				}
				b.die("e1", machine.Exhausted)
				b.finish()
				return nil
			},
		},
		{
			name:   "expired dead letter replayed long after acceptance",
			reason: "MaxAge counts from the replay: the liveness deadline moves with it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Expired)
				b.wait(2 * b.run.Policy.MaxAge)
				b.replay("e1", 0)
				b.deliver("e1")
				b.finish()
				return nil
			},
		},
		{
			name:   "late send of the budget before the replay",
			reason: "an owner the replay fenced off may still send an attempt it persisted before: it counts against the old budget",
			build: func(b *logb) []found {
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 1, Until: epoch.Add(time.Hour)})
				b.accept("e1")
				for n := 1; n <= 3; n++ {
					b.persist("e1", machine.Pending, n, machine.NotDead)
					b.sendAs("e1", n, 1)
					b.reply("e1", machine.OutcomeFailed)
				}
				b.persist("e1", machine.Dead, 3, machine.Exhausted)
				b.replay("e1", 2)
				b.sendAs("e1", 3, 1) // the zombie's, held in the network
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 3, Until: epoch.Add(time.Hour)})
				for n := 1; n <= 3; n++ {
					b.persist("e1", machine.Pending, n, machine.NotDead)
					b.sendAs("e1", n, 3)
					b.reply("e1", machine.OutcomeFailed)
				}
				b.persist("e1", machine.Dead, 3, machine.Exhausted)
				b.finish()
				return nil
			},
		},
		{
			name:   "sends past MaxAttempts in the replayed budget",
			reason: "the fresh budget is a budget: MaxAttempts still bounds it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				b.replay("e1", 0)
				for range 3 {
					b.attempt("e1")
				}
				s := b.attempt("e1")
				b.die("e1", machine.Exhausted)
				b.finish()
				return []found{{invariants.BoundedSends, "e1", s}}
			},
		},
		{
			name:   "replayed dead letter exhausted too early",
			reason: "attempts before the replay do not count toward the new budget",
			build: func(b *logb) []found {
				b.accept("e1")
				for range 3 {
					b.attempt("e1")
				}
				b.die("e1", machine.Exhausted)
				b.replay("e1", 0)
				b.attempt("e1")
				b.reply("e1", machine.OutcomeFailed)
				s := b.persist("e1", machine.Dead, 1, machine.Exhausted)
				b.finish()
				return []found{{invariants.DeadDeserved, "e1", s}}
			},
		},
		{
			name:   "applied again after a replay",
			reason: "a replay is a fresh budget, not a fresh effect: the receiver must still apply the event once",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.apply("e1") // the reply was lost, and the budget ran out
				b.die("e1", machine.Exhausted)
				b.replay("e1", 0)
				b.attempt("e1")
				s := b.apply("e1")
				b.reply("e1", machine.OutcomeDelivered)
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.AppliedOnce, "e1", s}}
			},
		},
		{
			name:   "delivered record replayed",
			reason: "only a dead letter may be replayed: a store that re-drives a delivered record rewrites history",
			build: func(b *logb) []found {
				b.accept("e1")
				b.deliver("e1")
				s := b.replay("e1", 0)
				b.attempt("e1")
				b.discard("e1", "duplicate")
				b.reply("e1", machine.OutcomeDelivered)
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.finish()
				return []found{{invariants.Monotonic, "e1", s}}
			},
		},
		{
			name:   "pending record replayed",
			reason: "a replay of a live event resets its attempt count behind its owner's back",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				s := b.replay("e1", 0)
				b.deliver("e1")
				b.finish()
				// The fresh attempt 1 goes out while the first is in flight.
				return []found{{invariants.Monotonic, "e1", s}, {invariants.BoundedSends, "e1", s + 1}}
			},
		},
		{
			name:   "discarded dead letter replayed",
			reason: "a discarded dead letter is settled; retention may delete it at any time",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				b.discardDead("e1")
				s := b.replay("e1", 0)
				b.deliver("e1")
				b.finish()
				return []found{{invariants.Monotonic, "e1", s}}
			},
		},
		{
			name:   "replay that left the record dead",
			reason: "the store must hand a replayed dead letter back pending with no attempts",
			build: func(b *logb) []found {
				b.accept("e1")
				b.attempt("e1")
				b.die("e1", machine.Rejected)
				r := b.recs["e1"]
				s := b.add(invariants.Entry{Kind: invariants.Replayed, ID: "e1", Seq: r.Seq, Worker: "operator", Record: r})
				b.finish()
				return []found{{invariants.Monotonic, "e1", s}}
			},
		},
	})
}

// grant logs a lease granted to the sender under token.
func (b *logb) grant(token uint64) int {
	return b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: token, Until: epoch.Add(b.now + time.Hour)})
}

// pause logs an operator's pause (on) or resume of the stream.
func (b *logb) pause(on bool) int {
	k := invariants.Resumed
	if on {
		k = invariants.Paused
	}
	return b.add(invariants.Entry{Kind: k, Worker: "operator"})
}

// deliverAs is one successful attempt sent under lease token.
func (b *logb) deliverAs(id string, token uint64) int {
	n := b.recs[id].Attempts + 1
	b.persist(id, b.recs[id].State, n, machine.NotDead)
	s := b.sendAs(id, n, token)
	b.apply(id)
	b.reply(id, machine.OutcomeDelivered)
	b.persist(id, machine.Delivered, n, machine.NotDead)
	return s
}

// TestPause (pause): while an operator has the stream paused, no
// takeover delivers; the owner the pause found may finish what it holds.
func TestPause(t *testing.T) {
	checkRows(t, []checkRow{
		{
			name:   "owner finishes what it holds",
			reason: "a pause stops takeovers; the owner it found finishes its events",
			build: func(b *logb) []found {
				b.grant(1)
				b.accept("e1")
				b.pause(true)
				b.deliverAs("e1", 1)
				b.pause(false)
				b.finish()
				return nil
			},
		},
		{
			name:   "takeover refused during the pause, delivered after the resume",
			reason: "a lease granted in the pause and given back at once delivers nothing; the next one after the resume may",
			build: func(b *logb) []found {
				b.accept("e1")
				b.pause(true)
				b.wait(time.Second)
				b.grant(1)
				b.wait(time.Second)
				b.pause(false)
				b.grant(2)
				b.deliverAs("e1", 2)
				b.finish()
				return nil
			},
		},
		{
			name:   "owner starts an attempt within a renewal of the pause",
			reason: "the owner asks Policy again at its next renewal: until then it may start attempts",
			build: func(b *logb) []found {
				b.run.Recheck = time.Second
				b.grant(1)
				b.accept("e1")
				b.pause(true)
				b.wait(900 * time.Millisecond)
				b.deliverAs("e1", 1)
				b.pause(false)
				b.finish()
				return nil
			},
		},
		{
			name:   "owner sends after the pause what it started before",
			reason: "an attempt started before the owner saw the pause may go out late (a stalled worker)",
			build: func(b *logb) []found {
				b.run.Recheck = time.Second
				b.grant(1)
				b.accept("e1")
				b.persist("e1", machine.Pending, 1, machine.NotDead)
				b.pause(true)
				b.wait(3 * time.Second)
				b.sendAs("e1", 1, 1)
				b.apply("e1")
				b.reply("e1", machine.OutcomeDelivered)
				b.persist("e1", machine.Delivered, 1, machine.NotDead)
				b.pause(false)
				b.finish()
				return nil
			},
		},
		{
			name:   "owner keeps starting attempts past a renewal of the pause",
			reason: "the owner must see the pause at its next renewal and start nothing more",
			build: func(b *logb) []found {
				b.run.Recheck = time.Second
				b.grant(1)
				b.accept("e1")
				b.pause(true)
				b.wait(2 * time.Second)
				s := b.deliverAs("e1", 1)
				b.pause(false)
				b.finish()
				return []found{{invariants.PauseHeld, "e1", s}}
			},
		},
		{
			name:   "takeover delivers during the pause",
			reason: "a worker that took the stream over in the pause ignored it",
			build: func(b *logb) []found {
				b.accept("e1")
				b.pause(true)
				b.grant(1)
				s := b.deliverAs("e1", 1)
				b.pause(false)
				b.finish()
				return []found{{invariants.PauseHeld, "e1", s}}
			},
		},
		{
			name:   "takeover in the pause delivers after the resume",
			reason: "a lease granted in the pause must have been refused: what it sends later is as wrong",
			build: func(b *logb) []found {
				b.accept("e1")
				b.pause(true)
				b.grant(1)
				b.wait(time.Second)
				b.pause(false)
				s := b.deliverAs("e1", 1)
				b.finish()
				return []found{{invariants.PauseHeld, "e1", s}}
			},
		},
		{
			name:   "takeover read the pause on a stale clock",
			reason: "a grant within Run.Stall of the resume may have read the stream's policy after it",
			build: func(b *logb) []found {
				b.run.Stall = time.Second
				b.accept("e1")
				b.pause(true)
				b.grant(1)
				b.wait(time.Second)
				b.pause(false)
				b.deliverAs("e1", 1)
				b.finish()
				return nil
			},
		},
	})
}

// renew logs the store renewing the sender's lease token until until
// from now; detail invariants.ReplyLost says the sender never heard.
func (b *logb) renew(token uint64, until time.Duration, detail string) int {
	return b.add(invariants.Entry{Kind: invariants.LeaseRenewed, Token: token, Until: epoch.Add(b.now + until), Detail: detail})
}

// dropLease logs the sender giving its lease token up by its own clock.
func (b *logb) dropLease(token uint64) int {
	return b.add(invariants.Entry{Kind: invariants.LeaseDropped, Token: token, Detail: "the lease ran out by the worker's clock"})
}

// TestLeaseKept (lease-kept): a worker gives up a lease of its own
// accord only when the store told it the lease ends within ClockMargin
// (and twice the skew).
func TestLeaseKept(t *testing.T) {
	rows := []checkRow{
		{
			name:   "given up at its end by the worker's clock",
			reason: "a worker that stops ClockMargin before the lease ends keeps the lease as long as it may",
			build: func(b *logb) []found {
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 1, Until: epoch.Add(b.now + 2*time.Second)})
				b.wait(1800 * time.Millisecond)
				b.dropLease(1)
				b.finish()
				return nil
			},
		},
		{
			name:   "given up with most of it left",
			reason: "one refused renewal must not cost a lease that has a second left: a prompt retry keeps it",
			build: func(b *logb) []found {
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 1, Until: epoch.Add(b.now + 2*time.Second)})
				b.wait(700 * time.Millisecond)
				s := b.dropLease(1)
				b.finish()
				return []found{{invariants.LeaseKept, "", s}}
			},
		},
		{
			name:   "given up before a renewal it heard of ends",
			reason: "the expiry that counts is the latest the store told the worker",
			build: func(b *logb) []found {
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 1, Until: epoch.Add(b.now + 2*time.Second)})
				b.wait(time.Second)
				b.renew(1, 2*time.Second, "")
				b.wait(time.Second)
				s := b.dropLease(1)
				b.finish()
				return []found{{invariants.LeaseKept, "", s}}
			},
		},
		{
			name:   "renewal whose reply was lost",
			reason: "the worker cannot count on a renewal it never heard of",
			build: func(b *logb) []found {
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 1, Until: epoch.Add(b.now + 2*time.Second)})
				b.wait(1700 * time.Millisecond)
				b.renew(1, 2*time.Second, invariants.ReplyLost)
				b.wait(100 * time.Millisecond)
				b.dropLease(1)
				b.finish()
				return nil
			},
		},
		{
			name:   "superseded lease given up",
			reason: "a lease a newer grant superseded is no longer valid, whatever its expiry said",
			build: func(b *logb) []found {
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 1, Until: epoch.Add(b.now + 2*time.Second)})
				b.add(invariants.Entry{Kind: invariants.LeaseGranted, Token: 2, Worker: "w2", Until: epoch.Add(b.now + 2*time.Second)})
				b.dropLease(1)
				b.finish()
				return nil
			},
		},
	}
	for i := range rows {
		build := rows[i].build
		rows[i].build = func(b *logb) []found {
			b.run.ClockMargin = 200 * time.Millisecond
			return build(b)
		}
	}
	checkRows(t, rows)
}

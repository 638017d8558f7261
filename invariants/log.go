package invariants

import (
	"fmt"
	"time"

	"github.com/courierlab/courier/machine"
)

// Kind is what an Entry records.
type Kind uint8

const (
	// Acked: the producer received an acknowledgement for ID (Seq).
	Acked Kind = iota + 1
	// Persisted: the store durably holds Record.
	Persisted
	// Sent: attempt Attempt of ID left the sender.
	Sent
	// Probed: a health probe left the sender.
	Probed
	// Applied: the receiver applied ID; its effect took place.
	Applied
	// Discarded: the receiver got ID and did not apply it (Detail says
	// why: "duplicate", "fenced", or "unverified: ..." for a delivery
	// whose signature the receiver could not verify).
	Discarded
	// CircuitChanged: the sender's circuit went to Circuit.
	CircuitChanged
	// Restarted: the sender (Worker) lost its memory, or a worker took
	// over a stream with a fresh machine. Its circuit is reported by the
	// CircuitChanged that follows.
	Restarted
	// LeaseGranted: the store granted Worker a lease with fencing Token.
	LeaseGranted
	// WriteRejected: the store refused Worker's write because it would
	// rewrite history (store.ErrInvalidWrite); Detail says how. A correct
	// owner never makes such a write.
	WriteRejected
	// Replied: the channel's outcome of attempt Attempt of ID reached
	// Worker (Detail: delivered, failed, refused or timeout), with the
	// receiver's RetryAfter hint if it gave one.
	Replied
	// Offered: the producer offered ID (a first offer or a resend).
	Offered
	// Refused: the sender refused the producer's offer of ID and
	// acknowledged nothing (Detail: "queue full" or "store unavailable").
	Refused
	// ProbeReplied: the answer to probe Attempt reached Worker (Detail:
	// "healthy" or "unhealthy").
	ProbeReplied
	// LeaseRenewed: the store renewed Worker's lease Token until Until.
	// Detail ReplyLost: the store renewed it, and its reply never reached
	// Worker.
	LeaseRenewed
	// Adopted: Worker's machine took over ID, a record the shared store
	// accepted.
	Adopted
	// DeadDiscarded: an operator discarded ID (store.Discard succeeded):
	// Record is what the store holds after it. Only a dead letter may be
	// discarded; it stays dead, settled, and retention may delete it.
	DeadDiscarded
	// Deleted: retention deleted ID's record (store.DeleteSettled); Record
	// is the record as the store held it. Only a settled record may be
	// deleted: delivered, or a dead letter an operator discarded. A
	// record rightly deleted is not lost: the store no longer has it by
	// design.
	Deleted
	// Replayed: an operator replayed ID (store.Replay succeeded): Record
	// is what the store holds after it, in the machine's form (pending,
	// no attempts, AcceptedAt the replay's instant, where its fresh MaxAge
	// counts from), and Token the replay's fencing token, which makes
	// every lease granted before it stale. Only an undiscarded dead
	// letter may be replayed; it starts a fresh delivery budget.
	Replayed
	// Paused: an operator paused the stream (no ID): from now on no
	// worker may take it over and deliver, until Resumed. The worker that
	// owns the stream when the pause comes may finish what it holds.
	Paused
	// Resumed: an operator resumed the paused stream (no ID).
	Resumed
	// LeaseDropped: Worker stopped acting on its lease Token of its own
	// accord, though the store had refused it nothing (Detail says why:
	// its own clock said the lease ran out). It must not do so while the
	// store would still honour the lease by more than Run.ClockMargin and
	// twice Run.Skew (lease-kept).
	LeaseDropped
	// Fanned: the platform accepted a message, of which ID is the
	// delivery to this stream's endpoint (Detail FanSubscribed: the
	// endpoint wanted it when it was published, so it must get it once in
	// effect; FanUnsubscribed: it must get nothing). The log's own
	// reading of the endpoint's filter and state, not the platform's.
	Fanned
	// BulkReplay: an operator's bulk replay of the stream's dead letters
	// (Worker names it, as the Replayed entries it makes do) begins
	// (Detail BulkBegin) or ends (BulkEnd, or BulkFailed when the store
	// stopped it); Until is its since instant,
	// zero for every dead letter.
	BulkReplay
	// MissingReplay: an operator asked the platform to give the stream's
	// endpoint every message since Until it missed (replay-missing).
	MissingReplay
	// LeaseReleased: Worker gave its lease Token back and the store took
	// it (Release, ReleaseUntil): the stream has no owner from then on.
	LeaseReleased
)

var kindNames = [...]string{
	Acked: "acked", Persisted: "persisted", Sent: "sent", Probed: "probed",
	Applied: "applied", Discarded: "discarded", CircuitChanged: "circuit", Restarted: "restarted",
	LeaseGranted: "lease", WriteRejected: "write-rejected", Replied: "replied",
	Offered: "offered", Refused: "refused", ProbeReplied: "probe-replied", LeaseRenewed: "renewed",
	Adopted: "adopted", DeadDiscarded: "dead-discarded", Deleted: "deleted", Replayed: "replayed",
	Paused: "paused", Resumed: "resumed", LeaseDropped: "lease-dropped",
	Fanned: "fanned", BulkReplay: "bulk-replay", MissingReplay: "missing-replay", LeaseReleased: "released",
}

func (k Kind) String() string {
	if k >= Acked && k <= LeaseReleased {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Entry is one observation of a run. Step is its index in Run.Entries.
type Entry struct {
	Step    int
	At      time.Time
	Kind    Kind
	ID      string
	Seq     uint64
	Attempt int
	// Record is set on Persisted.
	Record machine.Record
	// Circuit is set on CircuitChanged.
	Circuit machine.Circuit
	// Worker names the sender that acted, when there are several ("" for
	// a single sender; "store" for a record the store itself created).
	Worker string
	// Token is the fencing token under which Worker acted (0 without
	// leases): on Sent, Persisted and LeaseGranted; on Replayed, the
	// replay's own; on a Discarded DiscardRejected, the attempt's.
	Token uint64
	// RetryAfter is the receiver's hint, on Replied.
	RetryAfter time.Duration
	// Until is when the lease expires, on LeaseGranted and LeaseRenewed;
	// on LeaseReleased, the instant the owner asked the store to hold
	// the stream until (ReleaseUntil), zero for a plain Release.
	Until  time.Time
	Detail string
}

// Run is everything the checker needs of one run: what was observed, in
// order, and what the store held at the end. It is built by the simulator
// today and by a real runtime's recorder later; the checker knows nothing
// of either.
type Run struct {
	Policy  machine.Config
	Entries []Entry
	// Final is the store's content at the end of the run.
	Final []machine.Record
	// Finished is true when the run went on until nothing was left to do
	// (or its time limit), so that every event should have settled; false
	// when it was stopped early on purpose.
	Finished bool
	// HealedAt is the instant from which no fault was injected; zero if
	// the run had no faults.
	HealedAt time.Time
	// LivenessBound is how long after HealedAt every event must have
	// reached delivered or dead (see LivenessBound).
	LivenessBound time.Duration
	// Slack is added to every event's MaxAge deadline: the time a lease
	// handover can take, the largest clock skew between workers (an owner
	// judges MaxAge by its own clock), and the time workers were crashed or
	// stalled, the store refused writes or an operator paused a stream
	// (no one can give an event up then). Zero for a single sender.
	Slack time.Duration
	// OwnerWait is the longest a stream with due work may wait for an
	// owner beyond Slack (worker.WaitBound): the owner-wait rule. Zero:
	// not judged.
	OwnerWait time.Duration
	// Rotation is the part of Slack that is the streams' turns for an
	// owner (OwnerWait, in a world with more busy streams than the
	// workers' room): liveness allows for it, owner-wait does not count
	// it twice.
	Rotation time.Duration
	// Skew is the largest offset between a worker's clock and the run's
	// clock (Entry.At). A worker judges backoff, NextAt and MaxAge by its
	// own clock, so the policy rules allow Skew either way. Zero for a
	// single sender.
	Skew time.Duration
	// ClockMargin is how much of a lease the workers leave unused by their
	// own clock (worker.Config.ClockMargin): the most a correct worker
	// gives a lease up early, besides clock offsets. Zero: the lease-kept
	// rule is not judged.
	ClockMargin time.Duration
	// Recheck is how often an owner asks Policy again (the workers'
	// RenewEvery): a pause stops an owner's sends within it, plus Skew and
	// Stall. Zero: only takeovers are judged against pauses.
	Recheck time.Duration
	// Stall is the longest a worker may act on a stale clock reading (it
	// read its clock, froze, then acted): it stamps an attempt's start up
	// to Stall early, so it may count the attempt timed out, and start
	// another in its window, up to Stall before AttemptTimeout has truly
	// passed. Skew includes it. Zero without stalls.
	Stall time.Duration
	// ReceiverFences is true when the receiver applies only sequences above
	// the last it applied. Only then does strict order promise that the
	// receiver applies in acceptance order (a dead event's late attempt
	// could land out of order otherwise); sends are held to order always.
	ReceiverFences bool
	// ReceiverVerdicts is true when the log holds the receiver's own
	// verdict on every delivery that reached it (Applied, or Discarded
	// with its reason), as the simulator logs them. Then the channel's
	// replies are not taken on trust: a refusal must follow the
	// receiver's (a delivery Discarded as "fenced"), and every delivery
	// must verify (see ChannelTrue). A recorder that sees only the
	// sender's side leaves it false.
	ReceiverVerdicts bool
}

// ReplyLost is the Detail of a LeaseRenewed whose reply the worker never
// got: the lease runs until Until in the store, but the worker could not
// count on it.
const ReplyLost = "reply lost"

// Details of a Discarded entry.
const (
	// DiscardFenced: the receiver refused the delivery for good (its
	// stream has moved past its sequence).
	DiscardFenced = "fenced"
	// DiscardUnverified prefixes the reason a delivery did not verify.
	DiscardUnverified = "unverified"
	// DiscardRejected: the receiver answered attempt Attempt with a
	// status its endpoint's status policy rejects at once
	// (platform.StatusPolicy), and that answer came back: the channel
	// must report it refused.
	DiscardRejected = "rejected"
)

// Add appends an entry, numbering it.
func (r *Run) Add(e Entry) {
	e.Step = len(r.Entries)
	r.Entries = append(r.Entries, e)
}

// Violation is a broken guarantee: which, of which event, where.
type Violation struct {
	Invariant string
	ID        string // empty when the violation is not about one event
	Step      int    // index in Run.Entries; -1 when it is about the final state
	Detail    string
}

func (v Violation) String() string {
	where := "final state"
	if v.Step >= 0 {
		where = fmt.Sprintf("step %d", v.Step)
	}
	if v.ID != "" {
		return fmt.Sprintf("%s: event %s at %s: %s", v.Invariant, v.ID, where, v.Detail)
	}
	return fmt.Sprintf("%s: at %s: %s", v.Invariant, where, v.Detail)
}

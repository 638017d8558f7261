package store

import (
	"context"
	"errors"
	"time"

	"github.com/courierlab/courier/machine"
)

// Lease is the right to act on one stream until Expires, by the store's
// clock. Token is the fencing token: every lease the store grants carries
// a token greater than every token it granted before, so a write carrying
// an older token can be recognised and refused. Owner is part of the
// lease's identity: the right token under another owner's name is not the
// lease.
type Lease struct {
	Stream  string
	Owner   string
	Token   uint64
	Expires time.Time
}

// Event is the immutable part of a record, written once by Enqueue and
// never again: no Save carries it, compares it or can change it.
type Event struct {
	Stream     string
	ID         string
	Seq        uint64 // the event's place in its stream, from 1, never reused
	Payload    []byte
	AcceptedAt time.Time
}

// Delivery is the mutable part of a record: where the event is in its
// life. It is what Save writes, as the machine's Batch.Persist says it.
// Attempts counts the attempts of the current budget: a replay starts a
// new budget at zero (see Action).
type Delivery struct {
	State    machine.State
	Attempts int
	NextAt   time.Time
	Reason   machine.DeadReason // set if and only if State is machine.Dead
}

// MaxDetailBytes bounds Outcome.Detail as a store keeps it. It equals
// channel.MaxDetailBytes, so a detail cut by channel.Truncate is kept
// whole.
const MaxDetailBytes = 256

// Outcome is what the channel said about one attempt, kept with the record
// so that an operator can see why an event is retrying or why it died.
// It never holds a payload, a header value or a secret: Status is a
// transport status code (an HTTP status; 0 when no answer came) and Detail
// a short text. Detail comes from receivers and channels, so it may be
// any string: a store keeps it as CleanDetail makes it (valid UTF-8, no
// NUL, at most MaxDetailBytes bytes) and never refuses a Save for it.
type Outcome struct {
	Attempt int // the attempt it answered, within the current budget; 0: none recorded
	Status  int
	Detail  string
}

// Update is one record's new delivery state in a Save: the record's
// machine.Record as the batch persists it, without the event. Outcome, if
// not nil, is the outcome of the attempt that led to this state (the
// machine.Result the batch answers); it replaces the record's Last. A nil
// Outcome keeps Last as it is.
type Update struct {
	ID string
	Delivery
	Outcome *Outcome
}

// UpdateOf is the Update that persists r, with no outcome.
func UpdateOf(r machine.Record) Update {
	return Update{ID: r.ID, Delivery: Delivery{State: r.State, Attempts: r.Attempts, NextAt: r.NextAt, Reason: r.Reason}}
}

// UpdatesOf is UpdateOf for every record of a batch, in order.
func UpdatesOf(recs []machine.Record) []Update {
	out := make([]Update, len(recs))
	for i, r := range recs {
		out[i] = UpdateOf(r)
	}
	return out
}

// ActionKind says what an operator did to a dead letter.
type ActionKind uint8

const (
	// Replayed: the dead letter was re-driven with a fresh budget.
	Replayed ActionKind = iota + 1
	// Discarded: the operator acknowledged the dead letter; it is settled
	// and retention may delete it.
	Discarded
)

func (k ActionKind) String() string {
	switch k {
	case Replayed:
		return "replayed"
	case Discarded:
		return "discarded"
	}
	return "ActionKind(?)"
}

// Action is one operator action in a record's history, with the state it
// ended: the budget's attempts, why it had died and the last outcome.
type Action struct {
	Kind  ActionKind
	By    string    // who acted, as the operator's tool names them
	At    time.Time // by the store's clock
	Token uint64    // a replay's fencing token (a fresh grant); 0 for a discard
	// What the dead letter was when the operator acted.
	Attempts int
	Reason   machine.DeadReason
	Last     Outcome
}

// Record is everything the store holds about one event.
type Record struct {
	Event
	Delivery
	// Last is the outcome of the latest attempt a Save recorded in the
	// current budget (Attempt 0: none yet); LastAt is when, by the
	// store's clock.
	Last   Outcome
	LastAt time.Time
	// SettledAt is when the record settled, by the store's clock: when it
	// was saved delivered, or when its dead letter was discarded. Zero
	// while it is not settled; a dead letter is not settled until an
	// operator acts. Retention counts from it.
	SettledAt time.Time
	// History is every operator action, oldest first.
	History []Action
}

// Replays is how many times the record was replayed.
func (r Record) Replays() int {
	n := 0
	for _, a := range r.History {
		if a.Kind == Replayed {
			n++
		}
	}
	return n
}

// BudgetFrom is when the current budget started: the latest replay, or
// the acceptance. MaxAge counts from it.
func (r Record) BudgetFrom() time.Time {
	for i := len(r.History) - 1; i >= 0; i-- {
		if r.History[i].Kind == Replayed {
			return r.History[i].At
		}
	}
	return r.AcceptedAt
}

// Machine is the record as the machine sees it: its AcceptedAt is
// BudgetFrom, so a replayed event gets a fresh MaxAge as well as fresh
// attempts. Pending returns records in this form.
func (r Record) Machine() machine.Record {
	return machine.Record{
		ID: r.ID, Seq: r.Seq, Payload: r.Payload, AcceptedAt: r.BudgetFrom(),
		State: r.State, Attempts: r.Attempts, NextAt: r.NextAt, Reason: r.Reason,
	}
}

// Store is what courier's runtime needs from durable storage when several
// workers share it. Every method is safe for concurrent use.
//
// A method that returns nil has made its whole change durable. A method
// that returns an error changed nothing, with one exception:
// ErrUnknown, which a networked store returns when it cannot tell (see
// the package doc, "What an error means"). ctx is checked before any
// visible change: a context already cancelled returns ctx.Err() and
// changes nothing.
//
// Times are the store's, at microsecond resolution at least: a backend
// may truncate its clock to the microsecond, so callers must not rely on
// anything finer.
//
// Names are text, payloads are bytes. A stream name, an event ID, an
// owner and an operator must be valid UTF-8 with no NUL byte (CheckName):
// every method refuses anything else with ErrBadArgument before it reads
// or writes, and so does a call given a lease or an update that carries
// such a name. A payload is kept and returned byte for byte, whatever the
// bytes. An outcome's detail is cleaned, never refused (CleanDetail).
type Store interface {
	// Enqueue persists a new event at the end of stream and assigns it the
	// stream's next Seq (from 1; a Seq is never reused, not even after
	// retention deleted its record), in state pending with no attempts and
	// NextAt = AcceptedAt = the store's now. IDs are opaque,
	// case-sensitive, at most machine.MaxIDBytes long, and unique in the
	// store: enqueueing an ID that exists in stream, in any state, returns
	// the existing record with created false and changes nothing, even if
	// the payload differs; enqueueing it on another stream fails with
	// ErrBadArgument (a producer bug that must not pass for success). The
	// producer may be acknowledged once Enqueue returns nil.
	Enqueue(ctx context.Context, stream, id string, payload []byte) (rec Record, created bool, err error)

	// ClaimDue grants owner a lease of ttl on up to max streams that are
	// due and have no valid lease, earliest due instant first, ties in
	// stream-name order. A stream's due instant is the earliest NextAt of
	// its pending and retry records, or, if one of its records is parked
	// (a probe is owed, which only the owner can time), any instant: but
	// never before the instant its last release named (Release: the
	// release itself; ReleaseUntil: until). A stream is due when its due
	// instant is at or before the store's now. A stream with no pending,
	// retry or parked record is never due: terminal records are never
	// due. Every store keeps each stream's due instant as it changes, in
	// the same transaction as the change (Enqueue, Save, Replay, Release,
	// ReleaseUntil), so that ClaimDue never reads every stream.
	ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]Lease, error)

	// Acquire grants owner a lease of ttl on stream, whether or not it has
	// due work. It fails with ErrLeaseHeld while another lease on the
	// stream is valid (an owner holding a valid lease must Renew instead).
	// Acquisition is atomic: two callers never both hold a valid lease.
	Acquire(ctx context.Context, stream, owner string, ttl time.Duration) (Lease, error)

	// Renew extends a valid lease to now+ttl, keeping its token. A lease
	// is valid while it is the stream's current one (same token and
	// owner), not released, not revoked by a replay, and the store's now
	// is before Expires: at Expires exactly it has expired. Renew never
	// shortens a lease (a shorter ttl leaves Expires as it was) and never
	// touches a record. A lease that is not valid fails with
	// ErrStaleLease.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)

	// Release gives a valid lease up: it is stale at once, and the stream
	// can be claimed at once. A stale lease fails with ErrStaleLease.
	Release(ctx context.Context, l Lease) error

	// ReleaseUntil gives a valid lease up as Release does, and keeps the
	// stream from being due before until, whatever is enqueued meanwhile:
	// what an owner does with a stream whose next work is far off (a long
	// backoff, a probe owed later), so that the stream is claimed again
	// when it falls due, not before. Acquire still grants it at once. A
	// Replay lifts the hold (the replayed record is due at once). An
	// until at or before the store's now is a plain Release. A stale
	// lease fails with ErrStaleLease.
	ReleaseUntil(ctx context.Context, l Lease, until time.Time) error

	// Pending returns, in the machine's form (Record.Machine), up to limit
	// non-terminal records of the lease's stream with Seq above after, in
	// Seq order: what the owner rebuilds its machine from, page by page
	// (after 0, then the last Seq of each page until a page is short),
	// and later the newly enqueued records it adopts. A stale lease fails
	// with ErrStaleLease; a limit below 1 with ErrBadArgument.
	Pending(ctx context.Context, l Lease, after uint64, limit int) ([]machine.Record, error)

	// Save writes the delivery state of the updates atomically: all or
	// none. It never reads or writes an event (ID, Seq, payload,
	// acceptance). It is checked at the storage boundary against the
	// lease (ErrStaleLease) and then against each record's history
	// (ErrInvalidWrite), and refuses any write no machine could make:
	//
	//   - each ID appears once in the batch and names a record of the
	//     lease's stream;
	//   - the state is one of the machine's, with a Reason if and only if
	//     it is dead;
	//   - a terminal record never changes: an update of it must equal it
	//     field for field (and then changes nothing), Outcome nil or equal
	//     to Last;
	//   - Attempts never falls, and grows by at most one per write, and
	//     only while the record stays pending, retry or parked: an attempt
	//     is persisted before it is sent, so no result (delivered,
	//     rejected, failed into retry) can come with an attempt that was
	//     not already durable;
	//   - delivered, retry, and dead as exhausted or rejected all need an
	//     attempt behind them (Attempts at least 1);
	//   - an Outcome answers an attempt that exists (1 <= Attempt <=
	//     Attempts), never one older than Last's.
	//
	// An Outcome's Detail is no reason to refuse a write: it is kept as
	// CleanDetail makes it, and a terminal record's Last is compared
	// with the cleaned detail. An update's ID that is not text (see
	// CheckName) fails with ErrBadArgument. Saving a record delivered
	// sets its SettledAt. An empty Save writes nothing but is checked
	// against the lease all the same. Saves through one lease may run at
	// once: the store runs them one at a time, each checked against and
	// applied to what the Saves before it left. Save must not keep
	// ups, or the Outcomes they point to, after it returns: the worker
	// reuses them for its next batch.
	Save(ctx context.Context, l Lease, ups []Update) error

	// Get returns the record with id, in any state (a dead letter stays
	// readable with its reason, last outcome and history), or
	// ErrNotFound.
	Get(ctx context.Context, id string) (Record, error)

	// DeadLetters returns up to limit dead records of stream with Seq
	// above after, in Seq order, discarded ones included until retention
	// deletes them. A limit below 1 fails with ErrBadArgument.
	DeadLetters(ctx context.Context, stream string, after uint64, limit int) ([]Record, error)

	// Replay re-drives the dead letter id with a fresh budget: it becomes
	// pending, with no attempts, no reason, no Last, due at the store's
	// now, and MaxAge counting from now (Record.BudgetFrom). The action
	// is appended to its History with who (by), when and the state it
	// ended. It is fenced like a write: it takes the next token, which
	// makes every lease granted before it stale (the current owner's next
	// call fails with ErrStaleLease, so it drops its machine and the next
	// owner rebuilds with the replayed record), and the stream is free to
	// claim at once. An unknown id fails with ErrNotFound, a record that
	// is not an undiscarded dead letter with ErrInvalidWrite, an empty by
	// with ErrBadArgument.
	Replay(ctx context.Context, id, by string) (Record, error)

	// Discard settles the dead letter id: it stays dead and readable, its
	// SettledAt becomes the store's now, the action is appended to its
	// History, and retention may delete it. It takes no lease and touches
	// none: no owner holds a dead record. An unknown id fails with
	// ErrNotFound, a record that is not an undiscarded dead letter with
	// ErrInvalidWrite, an empty by with ErrBadArgument.
	Discard(ctx context.Context, id, by string) (Record, error)

	// DeleteSettled deletes up to limit settled records (delivered, or
	// discarded dead letters) whose SettledAt is at or before the store's
	// now minus retention, oldest first, and returns how many it deleted.
	// An undiscarded dead letter is never deleted. A deleted ID is
	// unknown afterwards: enqueued again it is a new event, which is why
	// retention must be longer than any producer may resend an event. A
	// non-positive retention or a limit below 1 fails with
	// ErrBadArgument.
	DeleteSettled(ctx context.Context, retention time.Duration, limit int) (int, error)
}

// Pinger is a Store that can tell, in one round trip that changes
// nothing, whether it answers now: what a readiness probe asks. Ping
// returns nil if the backend answered, and otherwise an error wrapping
// ErrUnavailable, or ctx.Err() for a context already done. memstore,
// sqlitestore and pgstore implement it (pgstore and sqlitestore read a
// row in a transaction, so the database answers, not only a connection).
type Pinger interface {
	Ping(ctx context.Context) error
}

// pingID is the ID Ping reads from a Store that is not a Pinger. Whether
// it names an event does not matter: found or not, the store answered.
const pingID = "courier-ping"

// Ping asks s whether it answers now: s's own Ping if it is a Pinger,
// otherwise a Get, for which ErrNotFound is an answer too. A type that
// wraps a Store by embedding the interface hides the Store's Ping, and
// is asked with the Get.
func Ping(ctx context.Context, s Store) error {
	if p, ok := s.(Pinger); ok {
		return p.Ping(ctx)
	}
	if _, err := s.Get(ctx, pingID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// Errors a Store returns. Backends wrap them with detail; callers test
// with errors.Is. What each means for the caller is in the package doc,
// "What an error means".
var (
	// ErrStaleLease: the lease expired, was released, was replaced by a
	// newer one or revoked by a replay. The call changed nothing. The
	// caller is no longer the owner: it must stop acting on the stream,
	// drop its machine and send nothing more.
	ErrStaleLease = errors.New("store: stale lease")
	// ErrLeaseHeld: another owner holds a valid lease on the stream. The
	// call changed nothing.
	ErrLeaseHeld = errors.New("store: lease held by another owner")
	// ErrInvalidWrite: a write no machine could make (rewriting history,
	// an impossible state, replaying what is not a dead letter). The call
	// changed nothing. It is a bug in the caller.
	ErrInvalidWrite = errors.New("store: invalid write")
	// ErrNotFound: no record has that ID.
	ErrNotFound = errors.New("store: not found")
	// ErrUnavailable: the backend could not take the call (a transient
	// failure: no connection, a conflict that rolled back). It is certain
	// that nothing changed; the caller may try again.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrUnknown: the call's outcome is unknown. The change was sent to
	// the backend and its reply was lost (the connection broke, or the
	// context ended, while the commit was in flight): it may or may not
	// have been made, entirely or not at all, never in part. The caller
	// must re-read before acting on it. Only a write can return it.
	ErrUnknown = errors.New("store: outcome unknown")
	// ErrBadArgument: an empty stream, ID, owner or operator, or one that
	// is not text (invalid UTF-8 or a NUL byte, see CheckName), an ID
	// longer than machine.MaxIDBytes or belonging to another stream, a
	// non-positive ttl, max, limit or retention. The call changed nothing.
	// The error names the argument.
	ErrBadArgument = errors.New("store: bad argument")
)

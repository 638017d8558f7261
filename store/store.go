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
// an older token can be recognised and refused.
type Lease struct {
	Stream  string
	Owner   string
	Token   uint64
	Expires time.Time
}

// Store is what courier's runtime needs from durable storage when several
// workers share it. Every method is safe for concurrent use. A method that
// returns nil has made its change durable; a method that returns an error
// has changed nothing. ctx is checked before any visible change: a
// cancelled context returns ctx.Err() and changes nothing.
type Store interface {
	// Enqueue persists a new event at the end of stream and assigns it the
	// stream's next Seq (from 1), in state pending with no attempts and
	// NextAt = AcceptedAt = the store's now. IDs are opaque, case-sensitive,
	// at most machine.MaxIDBytes long, and unique in the store: enqueueing
	// an ID that exists in stream, in any state, returns the existing
	// record with created false and changes nothing, even if the payload
	// differs; enqueueing it on another stream fails with ErrBadArgument
	// (a producer bug that must not pass for success). The producer may be
	// acknowledged once Enqueue returns nil.
	Enqueue(ctx context.Context, stream, id string, payload []byte) (rec machine.Record, created bool, err error)

	// ClaimDue grants owner a lease of ttl on up to max streams that have
	// due work and no valid lease, in stream-name order. A stream has due
	// work when one of its records is parked (a probe is owed) or is
	// pending or in retry with NextAt at or before the store's now.
	// Terminal records are never due.
	ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]Lease, error)

	// Acquire grants owner a lease of ttl on stream, whether or not it has
	// due work. It fails with ErrLeaseHeld while another lease on the
	// stream is valid (an owner holding a valid lease must Renew instead).
	// Acquisition is atomic: two callers never both hold a valid lease.
	Acquire(ctx context.Context, stream, owner string, ttl time.Duration) (Lease, error)

	// Renew extends a valid lease to now+ttl, keeping its token. A lease
	// is valid while it is the stream's current one (same token and
	// owner), not released, and the store's now is before Expires: at
	// Expires exactly it has expired. It never
	// shortens a lease (a shorter ttl leaves Expires as it was) and never
	// touches a record. A lease that expired, was released or was replaced
	// fails with ErrStaleLease.
	Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)

	// Release gives a valid lease up, so the stream can be claimed at once.
	// A stale lease fails with ErrStaleLease.
	Release(ctx context.Context, l Lease) error

	// Pending returns the non-terminal records of the lease's stream with
	// Seq above after, in Seq order: what the owner rebuilds its machine
	// from (after 0) and, later, the newly enqueued records it adopts. A
	// stale lease fails with ErrStaleLease.
	Pending(ctx context.Context, l Lease, after uint64) ([]machine.Record, error)

	// Save writes the records of one machine.Batch atomically: all or none.
	// It is checked at the storage boundary against the lease's token and
	// expiry (ErrStaleLease) and against the records' history
	// (ErrInvalidWrite): each record appears once in the batch, exists in
	// the lease's stream with the same Seq, payload and acceptance time,
	// and has a valid state (a reason if and only if dead); a terminal
	// record never changes (saving it unchanged is allowed and changes
	// nothing); an attempt count grows by at most one per write and never
	// falls.
	Save(ctx context.Context, l Lease, recs []machine.Record) error

	// Get returns the record with id, in any state (a dead letter stays
	// readable with its reason), or ErrNotFound.
	Get(ctx context.Context, id string) (machine.Record, error)

	// DeadLetters returns the dead records of stream, in Seq order.
	DeadLetters(ctx context.Context, stream string) ([]machine.Record, error)
}

// Errors a Store returns. Backends wrap them with detail; callers test
// with errors.Is.
var (
	// ErrStaleLease: the lease expired, was released or was replaced by a
	// newer one. The caller is no longer the owner: it must stop acting on
	// the stream, drop its machine and send nothing more.
	ErrStaleLease = errors.New("store: stale lease")
	// ErrLeaseHeld: another owner holds a valid lease on the stream.
	ErrLeaseHeld = errors.New("store: lease held by another owner")
	// ErrInvalidWrite: a Save would rewrite history (unknown record,
	// changed identity, terminal record changed, attempts jumped or fell).
	ErrInvalidWrite = errors.New("store: invalid write")
	// ErrNotFound: no record has that ID.
	ErrNotFound = errors.New("store: not found")
	// ErrUnavailable: the backend could not take the call (a transient
	// failure). Nothing changed; the caller may try again.
	ErrUnavailable = errors.New("store: unavailable")
	// ErrBadArgument: an empty stream, ID or owner, an ID longer than
	// machine.MaxIDBytes or belonging to another stream, a non-positive
	// ttl or max.
	ErrBadArgument = errors.New("store: bad argument")
)

package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/courierlab/courier/store"
)

// Row is one result row (database/sql's *Row and pgx's Row both fit).
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Tx is one database transaction. Queries use $1, $2 ... placeholders;
// a backend whose driver wants another style rewrites them.
type Tx interface {
	Exec(ctx context.Context, q string, args ...any) error
	QueryRow(ctx context.Context, q string, args ...any) Row
	Query(ctx context.Context, q string, args ...any) (Rows, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// DB begins transactions. write says whether the transaction may write.
type DB interface {
	Begin(ctx context.Context, write bool) (Tx, error)
}

// Dialect is what differs between SQL backends.
type Dialect struct {
	// Now is the SQL expression of the database's clock in unix
	// microseconds, read first in each transaction (a Save reads it in
	// the statement that locks its stream); "" means the host's clock.
	// A Core given a clock function uses it instead.
	Now string
	// Lock is appended to a SELECT whose rows must stay locked until
	// commit (" FOR UPDATE"); SkipLocked to a claim's (" FOR UPDATE SKIP
	// LOCKED").
	Lock, SkipLocked string
	// Int is appended to an integer parameter in a list of VALUES, whose
	// type the database would not infer ("::bigint"; "" where any
	// value goes, as in SQLite).
	Int string
	// NextToken is the SQL that draws the next fencing token.
	NextToken string
	// NoRows reports whether err says a query returned no row.
	NoRows func(err error) bool
	// Retry reports whether err rolled the transaction back for a reason
	// that a second try may not meet (a serialization failure, a
	// deadlock, a unique-key race): the call is run again.
	Retry func(err error) bool
	// Certain reports whether a failed commit certainly committed
	// nothing (the database answered with an error); otherwise its
	// outcome is unknown.
	Certain func(err error) bool
}

// Core implements store.Store over a DB.
type Core struct {
	db  DB
	d   Dialect
	now func() time.Time
}

// New returns a Core. now, if not nil, replaces the store's clock (the
// database's, or the host's when Dialect.Now is empty): tests pass one
// they control.
func New(db DB, d Dialect, now func() time.Time) *Core {
	return &Core{db: db, d: d, now: now}
}

// maxTries bounds how often a call is run again after a retryable
// rollback.
const maxTries = 8

// errRetry marks an error Dialect.Retry accepted.
var errRetry = errors.New("retryable conflict")

// write runs fn in a write transaction, judged at one instant of the
// store's clock, and classifies what went wrong: a contract error as it
// is, a failure before the commit as store.ErrUnavailable (nothing
// changed), a failed commit as store.ErrUnknown unless the database
// certainly refused it.
func (c *Core) write(ctx context.Context, op string, fn func(tx Tx, now int64) error) error {
	return c.run(ctx, op, true, true, fn)
}

// writeUnclocked is write for a call that reads the clock itself, in
// the statement that locks its streams (lockLeases): one round trip fewer.
func (c *Core) writeUnclocked(ctx context.Context, op string, fn func(tx Tx) error) error {
	return c.run(ctx, op, true, false, func(tx Tx, _ int64) error { return fn(tx) })
}

// read runs fn in a read transaction.
func (c *Core) read(ctx context.Context, op string, fn func(tx Tx, now int64) error) error {
	return c.run(ctx, op, false, true, fn)
}

func (c *Core) run(ctx context.Context, op string, write, clocked bool, fn func(tx Tx, now int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	for try := 0; try < maxTries; try++ {
		err = c.once(ctx, op, write, clocked, fn)
		if !errors.Is(err, errRetry) {
			return err
		}
	}
	return fmt.Errorf("%w: %s: %d tries met conflicts: %w", store.ErrUnavailable, op, maxTries, err)
}

func (c *Core) once(ctx context.Context, op string, write, clocked bool, fn func(tx Tx, now int64) error) error {
	tx, err := c.db.Begin(ctx, write)
	if err != nil {
		return c.failed(op, err)
	}
	var now int64
	if clocked {
		now, err = c.clock(ctx, tx)
	}
	if err == nil {
		err = fn(tx, now)
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		if contract(err) {
			return err
		}
		return c.failed(op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		if c.d.Certain(err) {
			return c.failed(op+": commit", err)
		}
		return fmt.Errorf("%w: %s: commit: %w", store.ErrUnknown, op, err)
	}
	return nil
}

// failed classifies an error that certainly changed nothing.
func (c *Core) failed(op string, err error) error {
	if c.d.Retry(err) {
		return fmt.Errorf("%w: %s: %w", errRetry, op, err)
	}
	return fmt.Errorf("%w: %s: %w", store.ErrUnavailable, op, err)
}

// contract reports whether err is one of the contract's own verdicts,
// which pass through unchanged.
func contract(err error) bool {
	for _, e := range []error{store.ErrStaleLease, store.ErrLeaseHeld, store.ErrInvalidWrite, store.ErrNotFound, store.ErrBadArgument} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// clock reads the store's now, once per call, in microseconds.
func (c *Core) clock(ctx context.Context, tx Tx) (int64, error) {
	if us, ok := c.hostClock(); ok {
		return us, nil
	}
	var us int64
	if err := tx.QueryRow(ctx, `SELECT `+c.d.Now).Scan(&us); err != nil {
		return 0, fmt.Errorf("reading the database's clock: %w", err)
	}
	return us, nil
}

// hostClock reads the store's now where it is not the database's: the
// clock function, or the host's clock. ok is false for the database's.
func (c *Core) hostClock() (us int64, ok bool) {
	switch {
	case c.now != nil:
		return c.now().UnixMicro(), true
	case c.d.Now == "":
		return time.Now().UnixMicro(), true
	}
	return 0, false
}

// micros is t in the stored form: microseconds since the Unix epoch, 0
// for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// instant is the inverse of micros.
func instant(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

// Normalize truncates t to what the store keeps.
func Normalize(t time.Time) time.Time { return instant(micros(t)) }

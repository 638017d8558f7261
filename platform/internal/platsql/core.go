package platsql

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

// Row is one result row.
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

// Tx is one transaction. Queries use $1, $2 ... placeholders; a backend
// whose driver wants another style rewrites them.
type Tx interface {
	// Exec runs q and returns how many rows it changed.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
	QueryRow(ctx context.Context, q string, args ...any) Row
	Query(ctx context.Context, q string, args ...any) (Rows, error)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// DB begins transactions; write says whether it may write.
type DB interface {
	Begin(ctx context.Context, write bool) (Tx, error)
}

// Dialect is what differs between the backends.
type Dialect struct {
	// Share and Update are appended to a SELECT of an application's row
	// that must hold it until commit, shared or exclusively.
	Share, Update string
	// NoRows reports whether err says a query returned no row.
	NoRows func(err error) bool
	// Retry reports whether err rolled the transaction back for a reason
	// a second try may not meet (a unique-key race, a deadlock).
	Retry func(err error) bool
	// Certain reports whether a failed commit certainly committed
	// nothing; otherwise its outcome is unknown.
	Certain func(err error) bool
}

// Core implements platform.Store over a DB.
type Core struct {
	db  DB
	d   Dialect
	now func() time.Time
}

var _ platform.Store = (*Core)(nil)

// New returns a Core; now nil means the host's clock.
func New(db DB, d Dialect, now func() time.Time) *Core {
	if now == nil {
		now = time.Now
	}
	return &Core{db: db, d: d, now: now}
}

const maxTries = 8

var errRetry = errors.New("retryable conflict")

// write runs fn in one write transaction, with the store's now in
// microseconds, and classifies what went wrong: a contract error as it
// is, a failure before the commit as ErrUnavailable, a failed commit as
// ErrUnknown unless the database certainly refused it.
func (c *Core) write(ctx context.Context, op string, fn func(tx Tx, now int64) error) error {
	return c.run(ctx, op, true, fn)
}

func (c *Core) read(ctx context.Context, op string, fn func(tx Tx) error) error {
	return c.run(ctx, op, false, func(tx Tx, _ int64) error { return fn(tx) })
}

func (c *Core) run(ctx context.Context, op string, write bool, fn func(tx Tx, now int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	for range maxTries {
		if err = c.once(ctx, op, write, fn); !errors.Is(err, errRetry) {
			return err
		}
	}
	return fmt.Errorf("%w: %s: %d tries met conflicts: %w", platform.ErrUnavailable, op, maxTries, err)
}

func (c *Core) once(ctx context.Context, op string, write bool, fn func(tx Tx, now int64) error) error {
	tx, err := c.db.Begin(ctx, write)
	if err != nil {
		return c.failed(op, err)
	}
	if err := fn(tx, c.now().UnixMicro()); err != nil {
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
		return fmt.Errorf("%w: %s: commit: %w", platform.ErrUnknown, op, err)
	}
	return nil
}

func (c *Core) failed(op string, err error) error {
	if c.d.Retry(err) {
		return fmt.Errorf("%w: %s: %w", errRetry, op, err)
	}
	return fmt.Errorf("%w: %s: %w", platform.ErrUnavailable, op, err)
}

// contract reports whether err is one of the contract's verdicts, which
// pass through unchanged.
func contract(err error) bool {
	for _, e := range []error{platform.ErrNotFound, platform.ErrConflict, platform.ErrBadArgument, platform.ErrInvalidMove,
		context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// instant is a stored time back as a time.Time.
func instant(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Step is one migration: the schema version it brings the platform's
// tables to, and its SQL.
type Step struct {
	Version int
	SQL     string
}

// Migrations reads the steps a backend embeds as migrations/*.sql in
// fsys, in version order. Files are named NNNN_what.sql, NNNN the
// version, from 0001 up, each number once and none skipped: a database
// migrated past a gap would never run the step that later fills it. It
// panics on a name out of this pattern, a number twice or a gap (the
// files are embedded: that is a build mistake).
func Migrations(fsys fs.FS) []Step {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	out := make([]Step, 0, len(names))
	for _, name := range names { // fs.Glob sorts: versions ascend
		num, _, ok := strings.Cut(strings.TrimPrefix(name, "migrations/"), "_")
		v, err := strconv.Atoi(num)
		if !ok || len(num) != 4 || err != nil || v < 1 {
			panic(fmt.Sprintf("platsql: migration %s is not named NNNN_what.sql with NNNN from 0001", name))
		}
		if n := len(out); n > 0 && out[n-1].Version == v {
			panic(fmt.Sprintf("platsql: migration %s takes version %d again", name, v))
		}
		if v != len(out)+1 {
			panic(fmt.Sprintf("platsql: migration %s skips version %d", name, len(out)+1))
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(err)
		}
		out = append(out, Step{Version: v, SQL: string(b)})
	}
	return out
}

// Migrate brings the platform's tables to the last of steps inside tx,
// which the caller has made exclusive (an advisory lock, SQLite's write
// lock), and commits it: it runs, in order, each step above the version
// kept in platform_schema (created here), then keeps the last step's
// version. A version above it was written by a newer courier and is
// refused.
func Migrate(ctx context.Context, tx Tx, d Dialect, steps []Step) error {
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS platform_schema (version integer NOT NULL)`); err != nil {
		return err
	}
	last := 0
	if len(steps) > 0 {
		last = steps[len(steps)-1].Version
	}
	var version int
	err := tx.QueryRow(ctx, `SELECT version FROM platform_schema`).Scan(&version)
	switch {
	case d.NoRows(err):
		if _, err := tx.Exec(ctx, `INSERT INTO platform_schema (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	case version > last:
		return fmt.Errorf("platform schema version %d was written by a newer courier; this one knows versions up to %d", version, last)
	}
	for _, s := range steps {
		if s.Version <= version {
			continue
		}
		if _, err := tx.Exec(ctx, s.SQL); err != nil {
			return fmt.Errorf("platform schema version %d: %w", s.Version, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE platform_schema SET version = $1`, last); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func fmtInvalidMove(delivery string, old platform.FanoutState) error {
	return fmt.Errorf("%w: %s is %v, not pending", platform.ErrInvalidMove, delivery, old)
}

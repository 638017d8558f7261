package receiver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Dialect picks the SQL spelling for a database.
type Dialect uint8

const (
	// SQLite (modernc.org/sqlite or mattn/go-sqlite3). Open the database
	// with a busy timeout and immediate transactions (modernc:
	// "file:x.db?_pragma=busy_timeout(10000)&_txlock=immediate"); SQLite
	// has one writer, so claims are applied one at a time.
	SQLite Dialect = iota + 1
	// Postgres (pgx's stdlib driver, lib/pq). Claims on different IDs
	// proceed in parallel; two on one ID wait on the row's lock.
	Postgres
)

// pruneEvery bounds how often SQL deletes expired IDs.
const pruneEvery = time.Minute

// SQL is a Store in a database through database/sql. The claim is a
// transaction that inserts the ID: a concurrent claim on the same ID waits
// on it, and the application can do its own writes in it (Claim.Tx), so
// that its effect and the dedup record commit together.
type SQL struct {
	db      *sql.DB
	dialect Dialect
	q       queries

	mu        sync.Mutex
	lastPrune time.Time
}

type queries struct {
	claim, streamRow, lastSeq, setSeq, prune string
}

// Table names SQL creates and uses.
const (
	TableApplied = "courier_receiver_applied"
	TableStreams = "courier_receiver_streams"
)

// NewSQL creates the two tables if they are missing and returns the store.
func NewSQL(ctx context.Context, db *sql.DB, d Dialect) (*SQL, error) {
	if db == nil {
		return nil, errors.New("receiver: NewSQL: db is nil")
	}
	if d != SQLite && d != Postgres {
		return nil, fmt.Errorf("receiver: NewSQL: unknown dialect %d", d)
	}
	s := &SQL{db: db, dialect: d}
	forUpdate := ""
	if d == Postgres {
		forUpdate = " FOR UPDATE"
	}
	s.q = queries{
		// An ID applied before the cutoff ($3) is forgotten: the upsert
		// takes it over. Otherwise the conflict changes nothing: 0 rows.
		claim: s.rebind(`INSERT INTO ` + TableApplied + ` (id, applied_at) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET applied_at = excluded.applied_at WHERE ` + TableApplied + `.applied_at < $3`),
		streamRow: s.rebind(`INSERT INTO ` + TableStreams + ` (stream, last_seq) VALUES ($1, 0) ON CONFLICT (stream) DO NOTHING`),
		lastSeq:   s.rebind(`SELECT last_seq FROM ` + TableStreams + ` WHERE stream = $1` + forUpdate),
		setSeq:    s.rebind(`UPDATE ` + TableStreams + ` SET last_seq = $2 WHERE stream = $1 AND last_seq < $2`),
		prune:     s.rebind(`DELETE FROM ` + TableApplied + ` WHERE applied_at < $1`),
	}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS ` + TableApplied + ` (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS ` + TableApplied + `_at ON ` + TableApplied + ` (applied_at)`,
		`CREATE TABLE IF NOT EXISTS ` + TableStreams + ` (stream TEXT PRIMARY KEY, last_seq BIGINT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("receiver: creating tables: %w", err)
		}
	}
	return s, nil
}

// rebind turns $n placeholders into SQLite's ?n.
func (s *SQL) rebind(q string) string {
	if s.dialect == SQLite {
		return strings.ReplaceAll(q, "$", "?")
	}
	return q
}

// Begin implements Store.
func (s *SQL) Begin(ctx context.Context, k Key, now time.Time, window time.Duration) (Claim, Verdict, error) {
	cutoff := now.Add(-window).UnixMilli()
	if err := s.maybePrune(ctx, now, cutoff); err != nil {
		return nil, 0, err
	}
	if k.Strict && k.Seq > 1<<63-1 {
		return nil, 0, fmt.Errorf("receiver: sequence %d does not fit a BIGINT", k.Seq)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("receiver: begin: %w", err)
	}
	v, err := s.claim(ctx, tx, k, now.UnixMilli(), cutoff)
	if err != nil || v != Apply {
		_ = tx.Rollback()
		return nil, v, err
	}
	return &sqlClaim{s: s, tx: tx, k: k}, Apply, nil
}

func (s *SQL) claim(ctx context.Context, tx *sql.Tx, k Key, at, cutoff int64) (Verdict, error) {
	res, err := tx.ExecContext(ctx, s.q.claim, k.ID, at, cutoff)
	if err != nil {
		return 0, fmt.Errorf("receiver: claiming the ID: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("receiver: claiming the ID: %w", err)
	} else if n == 0 {
		return Duplicate, nil
	}
	if !k.Strict {
		return Apply, nil
	}
	if _, err := tx.ExecContext(ctx, s.q.streamRow, k.Stream); err != nil {
		return 0, fmt.Errorf("receiver: stream row: %w", err)
	}
	var last int64
	if err := tx.QueryRowContext(ctx, s.q.lastSeq, k.Stream).Scan(&last); err != nil {
		return 0, fmt.Errorf("receiver: reading the last sequence: %w", err)
	}
	if k.Seq <= uint64(last) {
		return Superseded, nil
	}
	return Apply, nil
}

// maybePrune deletes expired IDs at most once per pruneEvery, in its own
// statement: inside claims it would make them lock each other's rows.
func (s *SQL) maybePrune(ctx context.Context, now time.Time, cutoff int64) error {
	s.mu.Lock()
	due := now.Sub(s.lastPrune) >= pruneEvery || now.Before(s.lastPrune)
	if due {
		s.lastPrune = now
	}
	s.mu.Unlock()
	if !due {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, s.q.prune, cutoff); err != nil {
		return fmt.Errorf("receiver: pruning expired IDs: %w", err)
	}
	return nil
}

type sqlClaim struct {
	s    *SQL
	tx   *sql.Tx
	k    Key
	done bool
}

func (c *sqlClaim) Tx() *sql.Tx { return c.tx }

func (c *sqlClaim) Commit(ctx context.Context) error {
	if c.done {
		return nil
	}
	c.done = true
	if c.k.Strict {
		if _, err := c.tx.ExecContext(ctx, c.s.q.setSeq, c.k.Stream, int64(c.k.Seq)); err != nil {
			_ = c.tx.Rollback()
			return fmt.Errorf("receiver: recording the sequence: %w", err)
		}
	}
	if err := c.tx.Commit(); err != nil {
		return fmt.Errorf("receiver: commit: %w", err)
	}
	return nil
}

func (c *sqlClaim) Abort() {
	if !c.done {
		c.done = true
		_ = c.tx.Rollback()
	}
}

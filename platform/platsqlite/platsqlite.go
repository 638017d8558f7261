package platsqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/internal/platsql"
	"github.com/courierlab/courier/store/sqlitestore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

var migrations = platsql.Migrations(migrationFS)

// Options configure Open; the zero value is the production setting.
type Options struct {
	// Now replaces the host's clock; tests pass one they control.
	Now func() time.Time
	// BusyTimeout is how long a call waits for the file's lock; 0 means 10s.
	BusyTimeout time.Duration
}

// Store is a platform.Store in a courier SQLite file. Close it.
type Store struct {
	*platsql.Core
	w, r *sql.DB
}

var _ platform.Store = (*Store)(nil)

// Open opens the platform's tables in the courier database at path,
// creating or migrating them.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("platsqlite: open %q: the path must be non-empty and hold no '?' or '#'", path)
	}
	if opt.BusyTimeout == 0 {
		opt.BusyTimeout = 10 * time.Second
	}
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)",
		path, opt.BusyTimeout.Milliseconds())
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("platsqlite: open %q: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("platsqlite: open %q: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s := &Store{w: w, r: r, Core: platsql.New(db{w: w, r: r}, dialect, opt.Now)}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("platsqlite: open %q: %w", path, err)
	}
	return s, nil
}

// migrate checks the file is courier's and brings the platform's tables
// to the latest version, under the write lock.
func (s *Store) migrate(ctx context.Context) error {
	t, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer t.Rollback()
	var app int64
	if err := t.QueryRowContext(ctx, `SELECT application_id FROM pragma_application_id`).Scan(&app); err != nil {
		return err
	}
	if app != sqlitestore.ApplicationID {
		return fmt.Errorf("not a courier database (application_id %#x): open it with sqlitestore first", app)
	}
	return platsql.Migrate(ctx, tx{t}, dialect, migrations)
}

// Close closes the database.
func (s *Store) Close() error { return errors.Join(s.r.Close(), s.w.Close()) }

var dialect = platsql.Dialect{
	NoRows: func(err error) bool { return errors.Is(err, sql.ErrNoRows) },
	Retry:  func(error) bool { return false }, // writes are serial
	Certain: func(err error) bool {
		var e *sqlite.Error
		return errors.Is(err, sql.ErrTxDone) || errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
	},
}

// db adapts database/sql to platsql.
type db struct{ w, r *sql.DB }

func (d db) Begin(ctx context.Context, write bool) (platsql.Tx, error) {
	pool := d.r
	if write {
		pool = d.w
	}
	t, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return tx{t}, nil
}

type tx struct{ t *sql.Tx }

// rebind turns platsql's $N placeholders into SQLite's ?N.
func rebind(q string) string { return strings.ReplaceAll(q, "$", "?") }

func (t tx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.t.ExecContext(ctx, rebind(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t tx) QueryRow(ctx context.Context, q string, args ...any) platsql.Row {
	return t.t.QueryRowContext(ctx, rebind(q), args...)
}

func (t tx) Query(ctx context.Context, q string, args ...any) (platsql.Rows, error) {
	rs, err := t.t.QueryContext(ctx, rebind(q), args...)
	if err != nil {
		return nil, err
	}
	return rows{rs}, nil
}

func (t tx) Commit(context.Context) error   { return t.t.Commit() }
func (t tx) Rollback(context.Context) error { return t.t.Rollback() }

type rows struct{ *sql.Rows }

func (r rows) Close() { _ = r.Rows.Close() }

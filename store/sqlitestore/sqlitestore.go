package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/internal/sqlcore"
)

// ApplicationID marks a SQLite file as courier's (PRAGMA application_id):
// "cour" in ASCII.
const ApplicationID = 0x636f7572

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the embedded migrations in version order: the
// migration for version v is migrations[v-1].
var migrations = sqlcore.Migrations(migrationFS)

// Options configure Open. The zero value is the production setting.
type Options struct {
	// Now replaces the store's clock (the host's); tests pass one they
	// control. It is read once per call.
	Now func() time.Time
	// BusyTimeout is how long a call waits for a lock held by another
	// connection or process; 0 means 10s.
	BusyTimeout time.Duration
	// Readers bounds the connections that serve reads; 0 means 4.
	Readers int
}

// Store is a store.Store in one SQLite file. Build it with Open; Close it.
type Store struct {
	*sqlcore.Core
	w, r           *sql.DB
	wStmts, rStmts *statements
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Pinger        = (*Store)(nil)
	_ store.BatchEnqueuer = (*Store)(nil)
	_ store.BatchSaver    = (*Store)(nil)
)

// Open opens the courier database at path, creating or migrating it as
// the package doc says, and refusing, unchanged, a file that is not one.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("sqlitestore: open %q: the path must be non-empty and hold no '?' or '#'", path)
	}
	if opt.BusyTimeout == 0 {
		opt.BusyTimeout = 10 * time.Second
	}
	if opt.Readers == 0 {
		opt.Readers = 4
	}
	if opt.BusyTimeout < 0 || opt.Readers < 0 {
		return nil, fmt.Errorf("sqlitestore: open %q: BusyTimeout %v and Readers %d must not be negative", path, opt.BusyTimeout, opt.Readers)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", opt.BusyTimeout.Milliseconds())
	if err := checkIdentity(ctx, path, busy); err != nil {
		return nil, err
	}
	dsn := "file:" + path + "?" + busy + "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)"
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %q: %w", path, err)
	}
	w.SetMaxOpenConns(1) // writes are serial in SQLite anyway; one connection makes them queue in Go
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlitestore: open %q: %w", path, err)
	}
	r.SetMaxOpenConns(opt.Readers)
	s := &Store{w: w, r: r}
	s.Core = sqlcore.New(s.db(), dialect, opt.Now)
	if err := migrate(ctx, w, path); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// db is the store's sqlcore.DB: its pools, each with its prepared
// statements.
func (s *Store) db() db {
	s.wStmts, s.rStmts = newStatements(s.w), newStatements(s.r)
	return db{w: s.w, r: s.r, wStmts: s.wStmts, rStmts: s.rStmts}
}

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	return errors.Join(s.rStmts.close(), s.wStmts.close(), s.r.Close(), s.w.Close())
}

// checkHeader refuses a file that exists, is not empty and is not SQLite,
// by its first bytes, before SQLite is let near it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: open %q: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if n == 0 {
		return nil // empty: SQLite treats it as a new database
	}
	if err != nil || !bytes.Equal(head, []byte("SQLite format 3\x00")) {
		return fmt.Errorf("sqlitestore: open %q: not a SQLite database; refusing to touch it", path)
	}
	return nil
}

// checkIdentity reads the file's application_id, schema version and
// tables through SQLite (which sees what is still in the WAL) without
// changing anything, and refuses a database that is not courier's or is
// newer than this binary.
func checkIdentity(ctx context.Context, path, busy string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?"+busy)
	if err != nil {
		return fmt.Errorf("sqlitestore: open %q: %w", path, err)
	}
	defer db.Close()
	var app, version, tables int64
	err = db.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)`).Scan(&app, &version, &tables)
	if err != nil {
		return fmt.Errorf("sqlitestore: open %q: reading the schema: %w", path, err)
	}
	latest := len(migrations)
	switch {
	case app == 0 && tables == 0:
		return nil // a new database
	case app != ApplicationID:
		return fmt.Errorf("sqlitestore: open %q: not a courier database (application_id %#x, %d schema objects); refusing to touch it", path, app, tables)
	case version > int64(latest):
		return fmt.Errorf("sqlitestore: open %q: schema version %d was written by a newer courier; this one knows versions up to %d", path, version, latest)
	}
	return nil
}

// migrate brings the database to the latest version, one transaction
// per version, each re-reading the version under the write lock so that
// several processes opening one file at once migrate it once.
func migrate(ctx context.Context, w *sql.DB, path string) error {
	return migrateTo(ctx, w, path, len(migrations))
}

func migrateTo(ctx context.Context, w *sql.DB, path string, target int) error {
	for {
		done, err := migrateOne(ctx, w, target)
		if err != nil {
			return fmt.Errorf("sqlitestore: open %q: migrating: %w", path, err)
		}
		if done {
			return nil
		}
	}
}

func migrateOne(ctx context.Context, w *sql.DB, target int) (done bool, err error) {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var app, version int64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version)`).Scan(&app, &version); err != nil {
		return false, err
	}
	switch {
	case version >= int64(target):
		return true, nil
	case version > 0 && app != ApplicationID:
		return false, fmt.Errorf("application_id %#x is not courier's", app)
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("version %d: %w", version+1, err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", ApplicationID, version+1)); err != nil {
		return false, fmt.Errorf("version %d: %w", version+1, err)
	}
	return false, tx.Commit()
}

var dialect = sqlcore.Dialect{
	Now:        "", // the host's clock
	Lock:       "", // write transactions are serial
	SkipLocked: "",
	NextToken:  `UPDATE tokens SET last = last + 1 WHERE one = 1 RETURNING last`,
	NoRows:     func(err error) bool { return errors.Is(err, sql.ErrNoRows) },
	Retry:      func(error) bool { return false },
	Certain: func(err error) bool {
		// A commit that found the transaction gone (its context ended) or
		// the database busy did not commit.
		var e *sqlite.Error
		return errors.Is(err, sql.ErrTxDone) || errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
	},
}

// db adapts database/sql to sqlcore.
type db struct {
	w, r           *sql.DB
	wStmts, rStmts *statements
}

func (d db) Begin(ctx context.Context, write bool) (sqlcore.Tx, error) {
	pool, stmts := d.r, d.rStmts
	if write {
		pool, stmts = d.w, d.wStmts
	}
	t, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &tx{t: t, stmts: stmts}, nil
}

// tx runs sqlcore's queries in one transaction, each as a statement its
// pool prepared, or as text the first time it is met (see statements).
type tx struct {
	t      *sql.Tx
	stmts  *statements
	missed []string // queries run as text, to prepare once the transaction ends
}

// rebind turns sqlcore's $N placeholders into SQLite's anonymous ?, and
// args into the order in which the placeholders appear (a $N met twice
// takes its argument twice). Not ?N: SQLite keeps ?N's names in a list
// that the driver searches from the start for every parameter it binds,
// so a batch's statement of n parameters cost n² steps to bind (a
// quarter of the CPU of a drain on SQLite); an anonymous ? has no name.
func rebind(q string, args []any) (string, []any) {
	var b strings.Builder
	b.Grow(len(q))
	ordered := make([]any, 0, len(args))
	for {
		i := strings.IndexByte(q, '$')
		if i < 0 {
			b.WriteString(q)
			return b.String(), ordered
		}
		j := i + 1
		for j < len(q) && '0' <= q[j] && q[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(q[i+1 : j])
		if err != nil || n < 1 || n > len(args) {
			// Not a placeholder of these args: left for SQLite to refuse.
			b.WriteString(q[:j])
			q = q[j:]
			continue
		}
		b.WriteString(q[:i])
		b.WriteByte('?')
		ordered = append(ordered, args[n-1])
		q = q[j:]
	}
}

// stmt returns q's prepared statement within the transaction, or nil
// when q is not prepared yet (and notes it to be).
func (t *tx) stmt(ctx context.Context, q string) *sql.Stmt {
	if st := t.stmts.lookup(q); st != nil {
		return t.t.StmtContext(ctx, st)
	}
	t.missed = append(t.missed, q)
	return nil
}

func (t *tx) Exec(ctx context.Context, q string, args ...any) error {
	q, args = rebind(q, args)
	var err error
	if st := t.stmt(ctx, q); st != nil {
		_, err = st.ExecContext(ctx, args...)
	} else {
		_, err = t.t.ExecContext(ctx, q, args...)
	}
	return err
}

func (t *tx) QueryRow(ctx context.Context, q string, args ...any) sqlcore.Row {
	q, args = rebind(q, args)
	if st := t.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.t.QueryRowContext(ctx, q, args...)
}

func (t *tx) Query(ctx context.Context, q string, args ...any) (sqlcore.Rows, error) {
	q, args = rebind(q, args)
	var rs *sql.Rows
	var err error
	if st := t.stmt(ctx, q); st != nil {
		rs, err = st.QueryContext(ctx, args...)
	} else {
		rs, err = t.t.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, err
	}
	return rows{rs}, nil
}

func (t *tx) Commit(context.Context) error {
	err := t.t.Commit()
	t.stmts.prepare(t.missed)
	return err
}

func (t *tx) Rollback(context.Context) error {
	err := t.t.Rollback()
	t.stmts.prepare(t.missed)
	return err
}

// statements are the queries a pool has prepared, by text: SQLite would
// otherwise parse every statement of every transaction again (about a
// third of courier serve's CPU on SQLite). sqlcore's queries are a fixed
// set of constants, so the map holds a few dozen. A query met for the
// first time runs as text and is prepared when its transaction has
// ended: preparing on the pool within the transaction would wait for the
// transaction's own connection (the writer pool has one).
type statements struct {
	pool *sql.DB
	mu   sync.Mutex
	m    map[string]*sql.Stmt
}

func newStatements(pool *sql.DB) *statements {
	return &statements{pool: pool, m: map[string]*sql.Stmt{}}
}

// lookup returns q's prepared statement, or nil.
func (s *statements) lookup(q string) *sql.Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[q]
}

// prepare prepares the queries of qs not prepared yet. One that fails to
// prepare (the pool closed, say) is left as text, to be tried again the
// next time it runs.
func (s *statements) prepare(qs []string) {
	for _, q := range qs {
		if s.lookup(q) != nil {
			continue
		}
		st, err := s.pool.Prepare(q)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if s.m[q] == nil {
			s.m[q], st = st, nil
		}
		s.mu.Unlock()
		if st != nil {
			st.Close() // another transaction prepared it meanwhile
		}
	}
}

// close closes every prepared statement.
func (s *statements) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for q, st := range s.m {
		errs = append(errs, st.Close())
		delete(s.m, q)
	}
	return errors.Join(errs...)
}

type rows struct{ *sql.Rows }

func (r rows) Close() { _ = r.Rows.Close() }

package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/internal/sqlcore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the embedded migrations in version order: the
// migration for version v is migrations[v-1].
var migrations = sqlcore.Migrations(migrationFS)

// Options configure Open.
type Options struct {
	// Schema is the PostgreSQL schema the store lives in; "" means
	// "courier". It must be a plain lower-case identifier.
	Schema string
	// Now replaces the store's clock (the database's); tests pass one
	// they control. It is read once per call, where the database's clock
	// would be.
	Now func() time.Time
	// MaxConns bounds the pool; 0 leaves pgxpool's default (or the
	// connection string's pool_max_conns).
	MaxConns int32
	// Tracer, if not nil, is told of every statement the store sends
	// alone (pgx's tracer: a counter, a log, an OpenTelemetry span). Most
	// go out in batches (a transaction's BEGIN and writes travel with the
	// query or the COMMIT that follows them): a Tracer that also
	// implements pgx.BatchTracer is told of those, BEGIN and COMMIT
	// included.
	Tracer pgx.QueryTracer
}

// Store is a store.Store in one PostgreSQL schema. Build it with Open;
// Close it.
type Store struct {
	*sqlcore.Core
	pool   *pgxpool.Pool
	schema string
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Pinger        = (*Store)(nil)
	_ store.BatchEnqueuer = (*Store)(nil)
	_ store.BatchSaver    = (*Store)(nil)
)

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at connString and opens the store in
// Options.Schema, creating or migrating it as the package doc says.
func Open(ctx context.Context, connString string, opt Options) (*Store, error) {
	if opt.Schema == "" {
		opt.Schema = "courier"
	}
	if !identifier.MatchString(opt.Schema) {
		return nil, fmt.Errorf("pgstore: open: schema %q is not a plain lower-case identifier", opt.Schema)
	}
	if opt.MaxConns < 0 {
		return nil, fmt.Errorf("pgstore: open: MaxConns %d is negative", opt.MaxConns)
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = opt.Schema
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if opt.Tracer != nil {
		cfg.ConnConfig.Tracer = opt.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	if err := checkEncoding(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	if err := migrate(ctx, pool, opt.Schema, len(migrations)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: open schema %q: %w", opt.Schema, err)
	}
	return &Store{pool: pool, schema: opt.Schema, Core: sqlcore.New(db{pool}, dialect, opt.Now)}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// checkEncoding refuses a database whose encoding is not UTF8. Names are
// any valid UTF-8 (store.CheckName); in another encoding the server
// would refuse some of them at the first write, and the call would fail
// as if the store were unavailable, for ever.
func checkEncoding(ctx context.Context, pool *pgxpool.Pool) error {
	var enc string
	if err := pool.QueryRow(ctx, `SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = current_database()`).Scan(&enc); err != nil {
		return err
	}
	if enc != "UTF8" {
		return fmt.Errorf("the database's encoding is %s; courier needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')", enc)
	}
	return nil
}

// migrate brings schema to version target in one transaction, under an
// advisory lock on the schema's name.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, target int) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('courier migrate ' || $1))`, schema); err != nil {
		return err
	}
	version, err := schemaVersion(ctx, tx, schema)
	if err != nil {
		return err
	}
	if version > len(migrations) {
		return fmt.Errorf("schema version %d was written by a newer courier; this one knows versions up to %d", version, len(migrations))
	}
	if version >= target {
		return tx.Commit(ctx)
	}
	if version == 0 {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema+`;
			CREATE TABLE `+schema+`.courier_schema (version integer NOT NULL); INSERT INTO `+schema+`.courier_schema VALUES (0)`); err != nil {
			return err
		}
	}
	for v := version; v < target; v++ {
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+schema+`; `+migrations[v]); err != nil {
			return fmt.Errorf("migrating to version %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE `+schema+`.courier_schema SET version = $1`, target); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// schemaVersion reads schema's courier version: 0 for a schema that does
// not exist or is empty, an error for one that holds tables but is not
// courier's.
func schemaVersion(ctx context.Context, tx pgx.Tx, schema string) (int, error) {
	var tables int
	var marked bool
	err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(table_name = 'courier_schema'), false)
		FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&tables, &marked)
	switch {
	case err != nil:
		return 0, err
	case tables == 0:
		return 0, nil
	case !marked:
		return 0, fmt.Errorf("not a courier schema: it holds %d tables and no courier_schema; refusing to touch it", tables)
	}
	var version int
	if err := tx.QueryRow(ctx, `SELECT version FROM `+schema+`.courier_schema`).Scan(&version); err != nil {
		return 0, err
	}
	return version, nil
}

var dialect = sqlcore.Dialect{
	Now:        `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`,
	Lock:       ` FOR UPDATE`,
	SkipLocked: ` FOR UPDATE SKIP LOCKED`,
	Int:        `::bigint`,
	NextToken:  `SELECT nextval('tokens')`,
	NoRows:     func(err error) bool { return errors.Is(err, pgx.ErrNoRows) },
	Retry: func(err error) bool {
		var e *pgconn.PgError
		return errors.As(err, &e) && (e.Code == "40001" || e.Code == "40P01" || e.Code == "23505")
	},
	Certain: func(err error) bool {
		// The server answered the commit with an error: it rolled back.
		// Not pgconn.SafeToRetry: pgx reports a COMMIT whose reply was
		// lost as "conn closed", which claims SafeToRetry although the
		// COMMIT was sent and may have committed (it did, in
		// TestLostCommitReplyIsUnknown).
		var e *pgconn.PgError
		return errors.As(err, &e) || errors.Is(err, pgx.ErrTxCommitRollback) || errors.Is(err, pgx.ErrTxClosed)
	},
}

// db adapts a pgx pool to sqlcore.
type db struct{ p *pgxpool.Pool }

// Begin takes a connection from the pool. Its BEGIN waits for the
// transaction's first query (see tx).
func (d db) Begin(ctx context.Context, write bool) (sqlcore.Tx, error) {
	conn, err := d.p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	t := &tx{conn: conn}
	if write {
		t.waiting.Queue(`BEGIN`)
	} else {
		// One snapshot for the lease check and the rows it guards.
		t.waiting.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	}
	return t, nil
}

// tx is one transaction on a connection of the pool. What needs no reply
// waits: the BEGIN, and every statement sent with Exec, go out with the
// next query or with the COMMIT, in one round trip (a pgx batch: one
// pipeline, one Sync, and the server skips what follows a failed
// statement up to it). With Queries (the streams' and the records' locks
// together) a Save is two round trips where it was six. An Exec's error
// is reported by the call that sends it.
type tx struct {
	conn    *pgxpool.Conn
	waiting pgx.Batch
	begun   bool // the BEGIN went out
}

func (t *tx) Exec(_ context.Context, q string, args ...any) error {
	t.waiting.Queue(q, args...)
	return nil
}

func (t *tx) QueryRow(ctx context.Context, q string, args ...any) sqlcore.Row {
	if t.waiting.Len() == 0 {
		return t.conn.QueryRow(ctx, q, args...)
	}
	br, err := t.sendWith(ctx, q, args)
	if err != nil {
		return failedRow{br.Close, err}
	}
	return batchRow{br.QueryRow(), br}
}

func (t *tx) Query(ctx context.Context, q string, args ...any) (sqlcore.Rows, error) {
	if t.waiting.Len() == 0 {
		return t.conn.Query(ctx, q, args...)
	}
	br, err := t.sendWith(ctx, q, args)
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			return &batchRows{Rows: rows, br: br}, nil
		}
	}
	br.Close()
	return nil, err
}

// Queries implements sqlcore.Pipeliner: the waiting statements and qs
// in one batch.
func (t *tx) Queries(ctx context.Context, qs []sqlcore.Query) error {
	if len(qs) == 0 {
		return nil
	}
	execs := t.waiting.Len()
	for _, q := range qs {
		t.waiting.Queue(q.SQL, q.Args...)
	}
	br := t.send(ctx)
	err := execReplies(br, execs)
	for _, q := range qs {
		if err != nil {
			break
		}
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			err = sqlcore.EachRow(rows, q.Each)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// sendWith sends the waiting statements and q after them, and reads the
// replies of the waiting ones: the first error among them, if any. q's
// reply is the next one br holds.
func (t *tx) sendWith(ctx context.Context, q string, args []any) (pgx.BatchResults, error) {
	execs := t.waiting.Len()
	t.waiting.Queue(q, args...)
	br := t.send(ctx)
	return br, execReplies(br, execs)
}

// execReplies reads the next n replies of br, which return no rows, and
// returns the first error.
func execReplies(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// send sends the waiting statements in one batch.
func (t *tx) send(ctx context.Context) pgx.BatchResults {
	b := t.waiting
	t.waiting = pgx.Batch{}
	t.begun = true
	return t.conn.SendBatch(ctx, &b)
}

// Commit sends the waiting writes with the COMMIT. A statement the
// server refused, or a COMMIT it answered with ROLLBACK, committed
// nothing; any other failure leaves the outcome unknown, as a lost
// COMMIT's reply does.
func (t *tx) Commit(ctx context.Context) error {
	if !t.begun && t.waiting.Len() == 1 {
		t.conn.Release() // only the BEGIN waits: nothing was asked
		return nil
	}
	br, err := t.sendWith(ctx, `COMMIT`, nil)
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback // the transaction had failed
	}
	if err != nil {
		return t.abandon(ctx, err)
	}
	t.conn.Release()
	return nil
}

// Rollback ends the transaction: there is nothing to roll back if its
// BEGIN never went out.
func (t *tx) Rollback(ctx context.Context) error {
	if !t.begun {
		t.conn.Release()
		return nil
	}
	return t.abandon(ctx, nil)
}

// abandon rolls back what the connection still holds open and gives the
// connection back (the pool closes one left in a transaction or
// broken). It returns err.
func (t *tx) abandon(ctx context.Context, err error) error {
	if pc := t.conn.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
	}
	t.conn.Release()
	return err
}

// batchRows are the rows of a batch's last query: closing them ends
// the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error // the batch's end
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is the row of a batch's last query: scanning it ends the
// batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// failedRow is a row whose batch failed before it: scanning it reports
// the failure.
type failedRow struct {
	close func() error
	err   error
}

func (r failedRow) Scan(...any) error {
	r.close()
	return r.err
}

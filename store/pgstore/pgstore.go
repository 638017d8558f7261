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
	// Tracer, if not nil, is told of every statement the store sends,
	// BEGIN and COMMIT included (pgx's tracer: a counter, a log, an
	// OpenTelemetry span).
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

func (d db) Begin(ctx context.Context, write bool) (sqlcore.Tx, error) {
	opts := pgx.TxOptions{}
	if !write {
		// One snapshot for the lease check and the rows it guards.
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	t, err := d.p.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tx{t}, nil
}

type tx struct{ t pgx.Tx }

func (t tx) Exec(ctx context.Context, q string, args ...any) error {
	_, err := t.t.Exec(ctx, q, args...)
	return err
}

func (t tx) QueryRow(ctx context.Context, q string, args ...any) sqlcore.Row {
	return t.t.QueryRow(ctx, q, args...)
}

func (t tx) Query(ctx context.Context, q string, args ...any) (sqlcore.Rows, error) {
	return t.t.Query(ctx, q, args...)
}

func (t tx) Commit(ctx context.Context) error   { return t.t.Commit(ctx) }
func (t tx) Rollback(ctx context.Context) error { return t.t.Rollback(ctx) }

package platpg

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

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/internal/platsql"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

var migrations = platsql.Migrations(migrationFS)

// Options configure Open.
type Options struct {
	// Schema is the delivery store's schema; "" means "courier".
	Schema string
	// Now replaces the host's clock; tests pass one they control.
	Now func() time.Time
	// MaxConns bounds the pool; 0 leaves pgxpool's default.
	MaxConns int32
}

// Store is a platform.Store in a courier PostgreSQL schema. Close it.
type Store struct {
	*platsql.Core
	pool *pgxpool.Pool
}

var _ platform.Store = (*Store)(nil)

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at connString and opens the platform's
// tables in Options.Schema, creating or migrating them.
func Open(ctx context.Context, connString string, opt Options) (*Store, error) {
	if opt.Schema == "" {
		opt.Schema = "courier"
	}
	if !identifier.MatchString(opt.Schema) || opt.MaxConns < 0 {
		return nil, fmt.Errorf("platpg: open: schema %q must be a plain lower-case identifier and MaxConns %d not negative", opt.Schema, opt.MaxConns)
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("platpg: open: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = opt.Schema
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("platpg: open: %w", err)
	}
	if err := migrate(ctx, pool, opt.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("platpg: open schema %q: %w", opt.Schema, err)
	}
	return &Store{pool: pool, Core: platsql.New(db{pool}, dialect, opt.Now)}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// migrate checks that schema is courier's and brings the platform's
// tables to the latest version, in one transaction under an advisory
// lock on the schema's name.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	t, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer t.Rollback(context.WithoutCancel(ctx))
	if _, err := t.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('courier platform migrate ' || $1))`, schema); err != nil {
		return err
	}
	var marked bool
	if err := t.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'courier_schema')`, schema).Scan(&marked); err != nil {
		return err
	}
	if !marked {
		return errors.New("not a courier schema (no courier_schema table): open it with pgstore first")
	}
	return platsql.Migrate(ctx, tx{t}, dialect, migrations)
}

var dialect = platsql.Dialect{
	Share:  ` FOR SHARE`,
	Update: ` FOR UPDATE`,
	NoRows: func(err error) bool { return errors.Is(err, pgx.ErrNoRows) },
	Retry: func(err error) bool {
		var e *pgconn.PgError
		return errors.As(err, &e) && (e.Code == "40001" || e.Code == "40P01" || e.Code == "23505")
	},
	Certain: func(err error) bool {
		// The server answered the commit with an error: it rolled back.
		// A lost reply ("conn closed") is not certain (see pgstore).
		var e *pgconn.PgError
		return errors.As(err, &e) || errors.Is(err, pgx.ErrTxCommitRollback) || errors.Is(err, pgx.ErrTxClosed)
	},
}

// db adapts a pgx pool to platsql.
type db struct{ p *pgxpool.Pool }

func (d db) Begin(ctx context.Context, write bool) (platsql.Tx, error) {
	opts := pgx.TxOptions{}
	if !write {
		// One snapshot for a message and its fan-out.
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	t, err := d.p.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return tx{t}, nil
}

type tx struct{ t pgx.Tx }

func (t tx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := t.t.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (t tx) QueryRow(ctx context.Context, q string, args ...any) platsql.Row {
	return t.t.QueryRow(ctx, q, args...)
}

func (t tx) Query(ctx context.Context, q string, args ...any) (platsql.Rows, error) {
	return t.t.Query(ctx, q, args...)
}

func (t tx) Commit(ctx context.Context) error   { return t.t.Commit(ctx) }
func (t tx) Rollback(ctx context.Context) error { return t.t.Rollback(ctx) }

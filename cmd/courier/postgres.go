package main

import (
	"context"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the pause table

	"github.com/courierlab/courier/platform/platpg"
	"github.com/courierlab/courier/store/pgstore"
)

// openPostgres opens the PostgreSQL store (schema "courier") that several
// courier serve processes, on several hosts, share through leases; the
// pause table and the platform's tables live in the same schema
// (postgres_schema, "courier" by default).
func openPostgres(ctx context.Context, dsn, schema string) (*backend, error) {
	st, err := pgstore.Open(ctx, dsn, pgstore.Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	p, err := openPauses(ctx, "pgx", dsn, schema+".")
	if err != nil {
		st.Close()
		return nil, err
	}
	ps, err := platpg.Open(ctx, dsn, platpg.Options{Schema: schema})
	if err != nil {
		p.Close()
		st.Close()
		return nil, err
	}
	return &backend{st: st, pauses: p, plat: ps, desc: "postgres", close: func() { ps.Close(); p.Close(); st.Close() }}, nil
}

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// poolSize is the connections each side's pool may open: the same for
// courier and River.
const poolSize = 8

var schemas atomic.Int64

// freshSchema names a schema no earlier run used; the side creates it.
func freshSchema() string {
	return fmt.Sprintf("riverbench_%d_%d", os.Getpid(), schemas.Add(1))
}

// dropSchema removes a shape's schema once it is measured.
func dropSchema(ctx context.Context, conn, schema string) error {
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	_, err = c.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	return err
}

// commits reads the database's count of committed transactions. Call it
// only after every pool of the phase it brackets is closed: a backend
// reports its counts when it exits (or after a second idle), so the
// short sleep lets the closed ones report.
func commits(ctx context.Context, conn string) (int64, error) {
	time.Sleep(300 * time.Millisecond)
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	var n int64
	err = c.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
	return n, err
}

// measured brackets phase with the database's commit count and returns
// phase's result with its transactions per delivered event. phase must
// close every pool it opens before it returns.
func measured(ctx context.Context, conn string, phase func() (result, error)) (result, error) {
	before, err := commits(ctx, conn)
	if err != nil {
		return result{}, err
	}
	r, err := phase()
	if err != nil {
		return result{}, err
	}
	after, err := commits(ctx, conn)
	if err != nil {
		return result{}, err
	}
	r.xacts = math.NaN()
	if r.delivered > 0 {
		// The count includes the read of "before" itself.
		r.xacts = float64(after-before-1) / float64(r.delivered)
	}
	return r, nil
}

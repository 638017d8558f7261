// This file proves the Core through the two real backends that wrap it:
// the storetest conformance suite on sqlitestore (a real file) and on
// pgstore (the real PostgreSQL named by COURIER_TEST_POSTGRES; skipped
// with a line naming the variable when it is unset).
//
// It is an external test package (sqlcore_test) so that it may import the
// backends, which import sqlcore: `go test ./store/internal/sqlcore`
// rebuilds them with this package's code, so the package's own tests
// judge every line of its SQL on both databases. The backends run the same
// suite in their own packages; this copy is what lets a tool that runs
// only a package's own tests (coverage per package, mutation testing with
// scripts/mutation) see the Core tested.
package sqlcore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/pgstore"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/store/storetest"
)

func openSQLite(t *testing.T, now func() time.Time) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "courier.db"), sqlitestore.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// envPostgres names the server the PostgreSQL tests run against.
const envPostgres = "COURIER_TEST_POSTGRES"

// postgres returns the connection string, or skips t with one line naming
// the variable.
func postgres(t *testing.T) string {
	t.Helper()
	conn := os.Getenv(envPostgres)
	if conn == "" {
		t.Skipf("sqlcore: %s is not set; set it to run the Core on PostgreSQL too (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", envPostgres, envPostgres)
	}
	return conn
}

// openPostgres opens a pgstore in a schema no other test uses, dropped
// when t ends.
func openPostgres(t *testing.T, now func() time.Time) *pgstore.Store {
	t.Helper()
	conn := postgres(t)
	schema := fmt.Sprintf("courier_sqlcore_%d_%08x", os.Getpid(), rand.Uint32())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, conn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	s, err := pgstore.Open(t.Context(), conn, pgstore.Options{Schema: schema, Now: now, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestConformanceOnSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store { return openSQLite(t, now) })
}

func TestConformanceOnPostgres(t *testing.T) {
	postgres(t)
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store { return openPostgres(t, now) })
}

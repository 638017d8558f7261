// This file proves that platpg passes the platformtest conformance suite
// on the real PostgreSQL, in a schema of its own per check beside the
// delivery store's tables, that it leaves the delivery store's version
// alone, and that it refuses a schema pgstore has not made courier's.
package platpg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platformtest"
	"github.com/courierlab/courier/store/pgstore"
)

// EnvVar names the server the tests run against.
const EnvVar = "COURIER_TEST_POSTGRES"

func server(t testing.TB) string {
	t.Helper()
	conn := os.Getenv(EnvVar)
	if conn == "" {
		t.Skipf("platpg: %s is not set; set it to run the PostgreSQL tests (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", EnvVar, EnvVar)
	}
	return conn
}

// freshSchema names a schema no other test uses and drops it when t ends.
func freshSchema(t testing.TB, conn string) string {
	t.Helper()
	schema := fmt.Sprintf("platform_test_%d_%08x", os.Getpid(), rand.Uint32())
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
	return schema
}

// open opens the delivery store in a fresh schema, then the platform's
// tables beside it.
func open(t *testing.T, now func() time.Time) (*Store, string) {
	t.Helper()
	conn := server(t)
	schema := freshSchema(t, conn)
	st, err := pgstore.Open(t.Context(), conn, pgstore.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ps, err := Open(t.Context(), conn, Options{Schema: schema, Now: now, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ps.Close)
	return ps, schema
}

func TestConformance(t *testing.T) {
	server(t)
	platformtest.Run(t, func(t *testing.T, now func() time.Time) platform.Store {
		s, _ := open(t, now)
		return s
	})
}

func TestBesideTheDeliveryStore(t *testing.T) {
	s, schema := open(t, nil)
	conn := server(t)
	again, err := Open(t.Context(), conn, Options{Schema: schema})
	if err != nil {
		t.Fatalf("a second Open (already migrated): %v", err)
	}
	again.Close()
	var courier, mine int
	if err := s.pool.QueryRow(t.Context(), `SELECT (SELECT version FROM courier_schema), (SELECT version FROM platform_schema)`).
		Scan(&courier, &mine); err != nil {
		t.Fatal(err)
	}
	if last := migrations[len(migrations)-1].Version; mine != last {
		t.Errorf("platform_schema version = %d; want %d", mine, last)
	}
	st, err := pgstore.Open(t.Context(), conn, pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatalf("pgstore after the platform's tables (courier_schema %d): %v", courier, err)
	}
	st.Close()
}

func TestRefusesASchemaNotCouriers(t *testing.T) {
	conn := server(t)
	schema := freshSchema(t, conn)
	_, err := Open(t.Context(), conn, Options{Schema: schema})
	if err == nil || !strings.Contains(err.Error(), "not a courier schema") {
		t.Fatalf("Open of an empty schema: %v; want a refusal", err)
	}
}

// This file proves that /readyz asks the store a real round trip: it
// answers 200 on a serve backed by PostgreSQL (whose text columns hold no
// NUL, which the old probe's ID had) and 503 once the store cannot
// answer, on SQLite and on PostgreSQL.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/pgstore"
	"github.com/courierlab/courier/store/sqlitestore"
)

// probe answers /readyz from an api over st alone.
func probe(t *testing.T, st store.Store) reply {
	t.Helper()
	a := &api{cfg: &Config{}, st: st, log: slog.New(slog.DiscardHandler)}
	rec := httptest.NewRecorder()
	a.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return reply{status: rec.Code}
}

// TestReadyzStoreGone: with its SQLite store open /readyz answers 200;
// closed, 503.
func TestReadyzStoreGone(t *testing.T) {
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "courier.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := probe(t, st); r.status != http.StatusOK {
		t.Errorf("/readyz on an open SQLite store = %d, want 200", r.status)
	}
	st.Close()
	if r := probe(t, st); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz on a closed SQLite store = %d, want 503", r.status)
	}
}

// TestReadyzOnPostgres: `courier serve` on PostgreSQL is ready (it
// answered 503 for ever while the probe read an ID with a NUL byte), and a
// closed pool makes /readyz answer 503.
func TestReadyzOnPostgres(t *testing.T) {
	dsn := os.Getenv("COURIER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("COURIER_TEST_POSTGRES is unset: set it to a PostgreSQL DSN to probe /readyz on PostgreSQL")
	}
	schema := fmt.Sprintf("readyz_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	c, err := ParseConfig(`api_tokens = ["` + token + `"]
postgres = "` + dsn + `"
postgres_schema = "` + schema + `"
shutdown_timeout = "2s"
`)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveConfig(ctx, c, slog.New(slog.DiscardHandler), ready, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-ready:
		if r := call(t, "GET", "http://"+addr+"/readyz", "", ""); r.status != http.StatusOK {
			t.Errorf("/readyz of serve on PostgreSQL = %d %v, want 200", r.status, r.body)
		}
	case err := <-done:
		t.Fatalf("serve ended at start: %v", err)
	}

	st, err := pgstore.Open(t.Context(), dsn, pgstore.Options{Schema: schema, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r := probe(t, st); r.status != http.StatusOK {
		t.Errorf("/readyz on an open pool = %d, want 200", r.status)
	}
	st.Close()
	if r := probe(t, st); r.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz on a closed pool = %d, want 503", r.status)
	}
}

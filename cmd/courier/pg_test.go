package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
)

// TestMain names the variable once, up front, when the PostgreSQL tests
// (two serve processes on one database, /readyz on PostgreSQL) will skip.
// go test shows it with -v, or run in this directory; given packages (go
// test ./...) it shows nothing of a passing package but its ok line,
// which no test can add to.
func TestMain(m *testing.M) {
	if os.Getenv("COURIER_TEST_POSTGRES") == "" {
		fmt.Println("courier: COURIER_TEST_POSTGRES is not set: the PostgreSQL tests skip (set it, e.g. COURIER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	os.Exit(m.Run())
}

// dropSchema removes a test's PostgreSQL schema.
func dropSchema(t *testing.T, dsn, schema string) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Log(err)
		return
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		t.Logf("dropping schema %s: %v", schema, err)
	}
}

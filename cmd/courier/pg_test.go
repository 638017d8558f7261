package main

import (
	"context"
	"database/sql"
	"testing"
)

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

// This file proves that a file at platform schema version 3 (before the
// endpoints' options, retry policy and bulk replay jobs) is brought to the
// latest version at Open with its rows kept: its
// endpoint reads back with the default retry and status policy, and a
// replay of missing messages finds its message.
package platsqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/webhook"
)

func TestUpgradesFromVersion3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "courier.db")
	st, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	app, ep, msg := platform.NewID(platform.AppKind, at), platform.NewID(platform.EndpointKind, at), platform.NewID(platform.MessageKind, at)
	qs := []string{`CREATE TABLE platform_schema (version integer NOT NULL)`, `INSERT INTO platform_schema VALUES (3)`}
	for _, m := range migrations[:3] {
		qs = append(qs, m.SQL)
	}
	qs = append(qs,
		`INSERT INTO platform_apps VALUES ('`+app+`', 'old', 1, 1)`,
		`INSERT INTO platform_endpoints VALUES ('`+ep+`', '`+app+`', 'https://example.com/', '', '[]', '["`+webhook.NewSecret()+`"]', 1, 'strict', 1, 1, 5, 0)`,
		`INSERT INTO platform_messages VALUES ('`+msg+`', '`+app+`', 't', '', X'7B7D', 1)`)
	for _, q := range qs {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var version int
	if err := s.w.QueryRowContext(t.Context(), `SELECT version FROM platform_schema`).Scan(&version); err != nil || version != migrations[len(migrations)-1].Version {
		t.Fatalf("platform_schema version = %d, %v; want %d", version, err, migrations[len(migrations)-1].Version)
	}
	e, err := s.GetEndpoint(t.Context(), ep)
	if err != nil || e.RateLimit != 5 || e.MaxAttempts != 0 || e.BaseBackoff != 0 || e.MaxBackoff != 0 || e.RejectStatuses != nil {
		t.Errorf("the upgraded endpoint = %+v, %v; want rate limit 5 kept, the default retry and status policy", e, err)
	}
	got, err := s.AddMissing(t.Context(), app, ep, time.UnixMicro(1), 10)
	if err != nil || len(got) != 1 || got[0].ID != msg || len(got[0].Fanout) != 1 {
		t.Errorf("AddMissing on the upgraded file = %+v, %v; want message %s with one entry", got, err, msg)
	}
}

// This file proves that a file at platform schema version 3 (before the
// endpoints' options, retry policy and bulk replay jobs) is brought to the
// latest version at Open with its rows kept: its
// endpoint reads back with the default retry and status policy, and a
// replay of missing messages finds its message.
package platsqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/webhook"
)

func TestUpgradesFromVersion3(t *testing.T) {
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	app, ep, msg := platform.NewID(platform.AppKind, at), platform.NewID(platform.EndpointKind, at), platform.NewID(platform.MessageKind, at)
	s := openUpgraded(t, 3,
		`INSERT INTO platform_apps VALUES ('`+app+`', 'old', 1, 1)`,
		`INSERT INTO platform_endpoints VALUES ('`+ep+`', '`+app+`', 'https://example.com/', '', '[]', '["`+webhook.NewSecret()+`"]', 1, 'strict', 1, 1, 5, 0)`,
		`INSERT INTO platform_messages VALUES ('`+msg+`', '`+app+`', 't', '', X'7B7D', 1)`)
	e, err := s.GetEndpoint(t.Context(), ep)
	if err != nil || e.RateLimit != 5 || e.MaxAttempts != 0 || e.BaseBackoff != 0 || e.MaxBackoff != 0 || e.RejectStatuses != nil {
		t.Errorf("the upgraded endpoint = %+v, %v; want rate limit 5 kept, the default retry and status policy", e, err)
	}
	got, err := s.AddMissing(t.Context(), app, ep, time.UnixMicro(1), 10)
	if err != nil || len(got) != 1 || got[0].ID != msg || len(got[0].Fanout) != 1 {
		t.Errorf("AddMissing on the upgraded file = %+v, %v; want message %s with one entry", got, err, msg)
	}
}

// openUpgraded makes a file at platform schema version, its tables as the
// first version migrations made them and rows in them, opens it with
// Open, which upgrades it, and checks that it is then at the latest
// version. The store is closed when the test ends.
func openUpgraded(t *testing.T, version int, rows ...string) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "courier.db")
	st, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	qs := []string{`CREATE TABLE platform_schema (version integer NOT NULL)`, fmt.Sprintf(`INSERT INTO platform_schema VALUES (%d)`, version)}
	for _, m := range migrations[:version] {
		qs = append(qs, m.SQL)
	}
	for _, q := range append(qs, rows...) {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var got int
	if err := s.w.QueryRowContext(t.Context(), `SELECT version FROM platform_schema`).Scan(&got); err != nil || got != migrations[len(migrations)-1].Version {
		t.Fatalf("platform_schema version = %d, %v; want %d", got, err, migrations[len(migrations)-1].Version)
	}
	return s
}

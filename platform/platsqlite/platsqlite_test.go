// This file proves that platsqlite passes the platformtest conformance
// suite on a real file shared with the delivery store, that its tables
// survive a reopen, that files of schema versions 1 and 3 are upgraded, and
// that it refuses a file the delivery store has not made courier's.
package platsqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platformtest"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/webhook"
)

// open opens a fresh courier file: the delivery store first, then the
// platform's tables.
func open(t *testing.T, path string, now func() time.Time) *Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ps, err := Open(t.Context(), path, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps
}

func TestConformance(t *testing.T) {
	platformtest.Run(t, func(t *testing.T, now func() time.Time) platform.Store {
		return open(t, filepath.Join(t.TempDir(), "courier.db"), now)
	})
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "courier.db")
	s := open(t, path, nil)
	a, err := s.CreateApp(t.Context(), platform.Application{ID: platform.NewID(platform.AppKind, time.Now()), Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	again, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, err := again.GetApp(t.Context(), a.ID)
	if err != nil || got != a {
		t.Errorf("after a reopen: %+v, %v; want %+v", got, err, a)
	}
	var user, mine int
	if err := again.w.QueryRowContext(t.Context(), `SELECT (SELECT user_version FROM pragma_user_version), (SELECT version FROM platform_schema)`).
		Scan(&user, &mine); err != nil {
		t.Fatal(err)
	}
	if last := migrations[len(migrations)-1].Version; mine != last {
		t.Errorf("platform_schema version = %d; want %d", mine, last)
	}
	// The delivery store still opens the file: its version is its own.
	st, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("sqlitestore after the platform's tables (user_version %d): %v", user, err)
	}
	st.Close()
}

func TestRefusesAFileNotCouriers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), "CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(t.Context(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a courier database") {
		t.Fatalf("Open of another application's file: %v; want a refusal", err)
	}
	db, _ = sql.Open("sqlite", "file:"+path)
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE name LIKE 'platform%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("platform tables in a refused file: %d, %v; want none", n, err)
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

// A file at platform schema version 1 (before the attempt log) is
// brought to the latest version at Open, its rows kept: its endpoint
// then takes attempts.
func TestUpgradesFromVersion1(t *testing.T) {
	at := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	app, ep, msg := platform.NewID(platform.AppKind, at), platform.NewID(platform.EndpointKind, at), platform.NewID(platform.MessageKind, at)
	s := openUpgraded(t, 1,
		`INSERT INTO platform_apps VALUES ('`+app+`', 'old', 1, 1)`,
		`INSERT INTO platform_endpoints VALUES ('`+ep+`', '`+app+`', 'https://example.com/', '', '[]', '["`+webhook.NewSecret()+`"]', 1, 'strict', 1, 1)`,
		`INSERT INTO platform_messages VALUES ('`+msg+`', '`+app+`', 't', '', X'7B7D', 1)`)
	h, err := s.RecordAttempt(t.Context(), platform.Attempt{ID: platform.NewID(platform.AttemptKind, at), AppID: app, MessageID: msg,
		EndpointID: ep, DeliveryID: platform.DeliveryID(msg, ep), At: at, Status: 503, Outcome: platform.OutcomeFailed})
	if err != nil || h.Streak != 1 {
		t.Errorf("RecordAttempt on the upgraded file = %+v, %v; want a streak of 1", h, err)
	}
}

// A file at platform schema version 3 (before the endpoints' options,
// retry policy and bulk replay jobs) is brought to the latest version at
// Open with its rows kept: its endpoint reads back with the default retry
// and status policy, and a replay of missing messages finds its message.
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

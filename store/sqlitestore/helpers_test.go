package sqlitestore

import (
	"database/sql"
	"testing"

	"github.com/courierlab/courier/store/internal/sqlcore"
)

// openAt opens path migrated only up to version target.
func openAt(t *testing.T, path string, target int) *Store {
	t.Helper()
	w, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	if err := migrateTo(t.Context(), w, path, target); err != nil {
		t.Fatal(err)
	}
	s := &Store{w: w, r: w}
	s.Core = sqlcore.New(s.db(), dialect, nil)
	return s
}

func userVersion(t *testing.T, s *Store) int {
	t.Helper()
	var v int
	if err := s.w.QueryRowContext(t.Context(), "PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// writeForeign creates a SQLite file as another application would.
func writeForeign(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "PRAGMA application_id = 42; CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')"); err != nil {
		t.Fatal(err)
	}
}

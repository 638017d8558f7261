// This file proves that sqlitestore passes the storetest conformance
// suite on real files, and that opening refuses what is not a courier
// database without touching it, migrates an older schema and refuses a
// newer one.
package sqlitestore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "courier.db"), Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestRefusesForeignFiles: a file that is not SQLite, and a SQLite file
// of another application, are refused with an error that says so, and
// their bytes are unchanged.
func TestRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("shopping list: milk, eggs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another application's SQLite file: a table of its own, its own id,
	// written with the raw driver as that application would.
	foreign := filepath.Join(dir, "foreign.db")
	writeForeign(t, foreign)

	for _, c := range []struct{ path, want string }{
		{text, "not a SQLite database"},
		{foreign, "not a courier database"},
	} {
		before, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Open(t.Context(), c.path, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%s) = %v, want an error saying %q", filepath.Base(c.path), err, c.want)
		}
		after, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("Open(%s) changed the file it refused", filepath.Base(c.path))
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if fi, err := os.Stat(c.path + suffix); err == nil && fi.Size() > 0 {
				t.Errorf("Open(%s) left a non-empty %s", filepath.Base(c.path), suffix)
			}
		}
	}
}

// TestMigratesOlderSchema: a file at schema version 1 with records in it
// opens at the latest version with the records intact and each stream's
// due instant filled in (schema 3), so that ClaimDue grants them in due
// order; a file claiming a version above the latest is refused, naming
// both versions.
func TestMigratesOlderSchema(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "courier.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Rebuild it as a version 1 file.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	s = openAt(t, path, 1)
	// As a version 1 binary wrote them: s pending since 2000 µs, r in
	// retry due at 1000 µs, p parked with a NextAt far off.
	if _, err := s.w.ExecContext(ctx, `INSERT INTO streams (name, last_seq) VALUES ('s', 1), ('r', 1), ('p', 1);
		INSERT INTO events (id, stream, seq, payload, accepted_at) VALUES ('e1', 's', 1, X'70', 2000), ('r1', 'r', 1, X'70', 10), ('p1', 'p', 1, X'70', 10);
		INSERT INTO deliveries (id, stream, seq, state, attempts, next_at, budget_from) VALUES
			('e1', 's', 1, 1, 0, 2000, 2000), ('r1', 'r', 1, 2, 1, 1000, 10), ('p1', 'p', 1, 3, 1, 9000000000000000, 10)`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open of a version 1 file: %v", err)
	}
	if v := userVersion(t, s); v != len(migrations) {
		t.Errorf("user_version after Open = %d, want %d", v, len(migrations))
	}
	if r, err := s.Get(ctx, "e1"); err != nil || r.State != machine.Pending || string(r.Payload) != "p" {
		t.Errorf("e1 after migration = %+v, %v", r, err)
	}
	ls, err := s.ClaimDue(ctx, "w", time.Minute, 10)
	var got []string
	for _, l := range ls {
		got = append(got, l.Stream)
	}
	if want := []string{"p", "r", "s"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ClaimDue after migration = %v, %v; want %v (parked, then by NextAt)", got, err, want)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path, Options{})
	if err == nil || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a version 99 file = %v, want an error naming version 99 as newer", err)
	}
}

// TestPingClosed: Ping answers nil on an open store and ErrUnavailable
// once it is closed, so a readiness probe fails.
func TestPingClosed(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "courier.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	s.Close()
	if err := s.Ping(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping after Close: %v, want %v", err, store.ErrUnavailable)
	}
}

// TestStatementsPreparedOnce: a workload prepares each query it runs
// once; running it again prepares nothing more, so the cache holds
// sqlcore's fixed set of queries and no more.
func TestStatementsPreparedOnce(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "c.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	work := func(round int) {
		for i := range 3 {
			id := fmt.Sprintf("r%d-e%d", round, i)
			if _, _, err := s.Enqueue(ctx, "s", id, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		l, err := s.Acquire(ctx, "s", "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := s.Pending(ctx, l, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, state := range []machine.State{machine.Pending, machine.Delivered} {
			ups := make([]store.Update, len(recs))
			for i, r := range recs {
				r.Attempts, r.State = 1, state // the attempt, then its success
				ups[i] = store.UpdateOf(r)
			}
			if err := s.Save(ctx, l, ups); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	work(1)
	w, r := len(s.wStmts.m), len(s.rStmts.m)
	if w == 0 {
		t.Fatal("no write statement was prepared")
	}
	work(2)
	if len(s.wStmts.m) != w || len(s.rStmts.m) != r {
		t.Errorf("a second round prepared more: %d+%d statements, then %d+%d", w, r, len(s.wStmts.m), len(s.rStmts.m))
	}
}

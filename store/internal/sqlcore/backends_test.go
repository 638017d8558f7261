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
// scripts/mutation) see the Core tested. TestSaveMovesTheDueInstant
// checks what the suite leaves implicit: a Save, not only a Release,
// moves the stream's due instant.
package sqlcore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/courierlab/courier/machine"
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

// TestClockWithoutNow: a store opened without Options.Now reads a clock
// of its own (the host's for SQLite, the database's for PostgreSQL; both
// run on this machine here), so a lease taken for an hour expires an hour
// from the real now, give or take the call.
func TestClockWithoutNow(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store { return openSQLite(t, nil) }},
		{"postgres", func(t *testing.T) store.Store { return openPostgres(t, nil) }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			const ttl = time.Hour
			before := time.Now()
			l, err := s.Acquire(t.Context(), "s", "w", ttl)
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			const slack = time.Second // clock reading and microsecond rounding
			if l.Expires.Before(before.Add(ttl-slack)) || l.Expires.After(after.Add(ttl+slack)) {
				t.Errorf("lease expires %v, want within a second of %v..%v", l.Expires, before.Add(ttl), after.Add(ttl))
			}
		})
	}
}

// TestClaimDueTakesMaxOne: max 1 is the smallest claim, not a misuse.
func TestClaimDueTakesMaxOne(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := openSQLite(t, clock.Now)
	for _, stream := range []string{"a", "b"} {
		if _, _, err := s.Enqueue(t.Context(), stream, stream+"1", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	leases, err := s.ClaimDue(t.Context(), "w", time.Minute, 1)
	if err != nil || len(leases) != 1 {
		t.Fatalf("ClaimDue(max 1) = %d leases, %v; want 1", len(leases), err)
	}
	if _, err := s.ClaimDue(t.Context(), "w", time.Minute, 0); !errors.Is(err, store.ErrBadArgument) {
		t.Errorf("ClaimDue(max 0) = %v, want ErrBadArgument", err)
	}
}

// TestSaveMovesTheDueInstant: a Save changes the stream's due instant in
// its own transaction, so a stream whose lease runs out (no Release to
// recompute it) is due by what its records say now. Here a's event has
// an attempt in flight until an hour later, and b's was delivered: once
// the leases run out, neither is due, and a is due again when its
// attempt times out.
func TestSaveMovesTheDueInstant(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T, now func() time.Time) store.Store
	}{
		{"sqlite", func(t *testing.T, now func() time.Time) store.Store { return openSQLite(t, now) }},
		{"postgres", func(t *testing.T, now func() time.Time) store.Store { return openPostgres(t, now) }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			clock := storetest.NewClock(start)
			s, ctx := b.open(t, clock.Now), t.Context()
			// save enqueues stream's one event and saves each edit of it in
			// turn, as an owner would.
			save := func(stream string, edits ...func(*machine.Record)) {
				t.Helper()
				rec, _, err := s.Enqueue(ctx, stream, stream+"1", []byte("x"))
				if err != nil {
					t.Fatal(err)
				}
				l, err := s.Acquire(ctx, stream, "w", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				r := rec.Machine()
				for _, edit := range edits {
					edit(&r)
					if err := s.Save(ctx, l, store.UpdatesOf([]machine.Record{r})); err != nil {
						t.Fatal(err)
					}
				}
			}
			save("a", func(r *machine.Record) { r.Attempts, r.NextAt = 1, start.Add(time.Hour) })
			save("b", func(r *machine.Record) { r.Attempts = 1 }, func(r *machine.Record) { r.State = machine.Delivered })
			claim := func() (streams []string) {
				t.Helper()
				leases, err := s.ClaimDue(ctx, "w2", time.Minute, 10)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range leases {
					streams = append(streams, l.Stream)
				}
				return streams
			}
			clock.Advance(2 * time.Minute) // both leases ran out
			if got := claim(); len(got) != 0 {
				t.Errorf("ClaimDue after the leases ran out granted %v; want nothing due before a's attempt times out", got)
			}
			clock.Advance(time.Hour)
			if got := claim(); len(got) != 1 || got[0] != "a" {
				t.Errorf("ClaimDue after a's attempt timed out granted %v; want [a]", got)
			}
		})
	}
}

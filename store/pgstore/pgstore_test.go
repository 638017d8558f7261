// This file proves that pgstore passes the storetest conformance suite
// on the real PostgreSQL (one schema per check), that production judges
// leases by the database's clock, and that opening refuses a schema that
// is not courier's or is newer.
package pgstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/storetest"
)

// EnvVar names the server the tests run against.
const EnvVar = "COURIER_TEST_POSTGRES"

// server returns the connection string, or skips t with one line naming
// the variable.
func server(t testing.TB) string {
	t.Helper()
	conn := os.Getenv(EnvVar)
	if conn == "" {
		t.Skipf("pgstore: %s is not set; set it to run the PostgreSQL tests (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", EnvVar, EnvVar)
	}
	return conn
}

// freshSchema names a schema no other test uses and drops it when t ends.
func freshSchema(t testing.TB, conn string) string {
	t.Helper()
	schema := fmt.Sprintf("courier_test_%d_%08x", os.Getpid(), rand.Uint32())
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

func open(t testing.TB, now func() time.Time) *Store {
	t.Helper()
	conn := server(t)
	s, err := Open(context.Background(), conn, Options{Schema: freshSchema(t, conn), Now: now, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	server(t)
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store { return open(t, now) })
}

// TestDatabaseClockDecides: with no Options.Now, a lease expires at the
// database's now plus its ttl, whatever the host's clock says.
func TestDatabaseClockDecides(t *testing.T) {
	s := open(t, nil)
	ctx := t.Context()
	dbNow := func() time.Time {
		var us int64
		if err := s.pool.QueryRow(ctx, "SELECT "+dialect.Now).Scan(&us); err != nil {
			t.Fatal(err)
		}
		return time.UnixMicro(us)
	}
	const ttl = time.Hour
	before := dbNow()
	l, err := s.Acquire(ctx, "s", "w", ttl)
	if err != nil {
		t.Fatal(err)
	}
	after := dbNow()
	if l.Expires.Before(before.Add(ttl)) || l.Expires.After(after.Add(ttl)) {
		t.Errorf("lease expires %v, want between %v and %v (the database's now + ttl)", l.Expires, before.Add(ttl), after.Add(ttl))
	}
}

// TestSaveReadsDatabaseClock: with no Options.Now, Save judges the lease
// by the database's clock, which it reads in the statement that locks
// the stream: valid before Expires, stale once the database's now has
// passed it.
func TestSaveReadsDatabaseClock(t *testing.T) {
	s := open(t, nil)
	ctx := t.Context()
	l, err := s.Acquire(ctx, "s", "w", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, l, nil); err != nil {
		t.Fatalf("Save under a fresh lease: %v", err)
	}
	for {
		var expired bool
		if err := s.pool.QueryRow(ctx, "SELECT "+dialect.Now+" >= $1", l.Expires.UnixMicro()).Scan(&expired); err != nil {
			t.Fatal(err)
		}
		if expired {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Save(ctx, l, nil); !errors.Is(err, store.ErrStaleLease) {
		t.Errorf("Save once the database's now passed Expires: error = %v, want %v", err, store.ErrStaleLease)
	}
}

// TestRefusesForeignSchema: a schema holding another application's
// tables is refused and left as it was; a newer courier schema is
// refused by version.
func TestRefusesForeignSchema(t *testing.T) {
	conn := server(t)
	ctx := t.Context()
	schema := freshSchema(t, conn)
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+schema+".notes (body text); INSERT INTO "+schema+".notes VALUES ('keep me')"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, conn, Options{Schema: schema})
	if err == nil || !strings.Contains(err.Error(), "not a courier schema") {
		t.Errorf("Open of a foreign schema = %v, want 'not a courier schema'", err)
	}
	var tables int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&tables); err != nil || tables != 1 {
		t.Errorf("the foreign schema holds %d tables after the refused Open (%v), want its 1", tables, err)
	}

	newer := freshSchema(t, conn)
	s, err := Open(ctx, conn, Options{Schema: newer})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := c.Exec(ctx, "UPDATE "+newer+".courier_schema SET version = 99"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, conn, Options{Schema: newer})
	if err == nil || !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a version 99 schema = %v, want an error naming version 99 as newer", err)
	}
}

// TestMigratesOlderSchema: a schema at version 1 with a record opens at
// the latest version with the record intact.
func TestMigratesOlderSchema(t *testing.T) {
	s := open(t, nil)
	ctx := t.Context()
	if _, _, err := s.Enqueue(ctx, "s", "e1", []byte("p")); err != nil {
		t.Fatal(err)
	}
	// Undo versions 3 and 2 by hand, as a binary of version 1 would have
	// left it.
	if _, err := s.pool.Exec(ctx, `DROP INDEX streams_due; DROP INDEX deliveries_waiting; DROP INDEX deliveries_parked;
		ALTER TABLE streams DROP COLUMN due, DROP COLUMN release_until;
		DROP INDEX deliveries_due; DROP INDEX deliveries_settled; UPDATE courier_schema SET version = 1`); err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, s.pool, s.schema, len(migrations)); err != nil {
		t.Fatal(err)
	}
	var version int
	if err := s.pool.QueryRow(ctx, "SELECT version FROM courier_schema").Scan(&version); err != nil || version != len(migrations) {
		t.Errorf("version after migrating = %d (%v), want %d", version, err, len(migrations))
	}
	if r, err := s.Get(ctx, "e1"); err != nil || string(r.Payload) != "p" {
		t.Errorf("e1 after migrating = %+v, %v", r, err)
	}
	// Schema 3 filled in the stream's due instant from its record.
	if ls, err := s.ClaimDue(ctx, "w", time.Minute, 10); err != nil || len(ls) != 1 || ls[0].Stream != "s" {
		t.Errorf("ClaimDue after migrating = %+v, %v; want the stream s", ls, err)
	}
}

// TestMain: every test here needs the server. Without EnvVar each would
// skip, and go test, given packages (go test ./...), shows nothing of a
// passing package but its ok line, however the tests print: so none is
// run, and testing's "no tests to run" makes that line end in
// "[no tests to run]" rather than claim the PostgreSQL tests passed. The
// line naming the variable shows with -v and when go test runs in this
// directory.
func TestMain(m *testing.M) {
	if os.Getenv(EnvVar) == "" {
		flag.Parse()
		if err := flag.Set("test.run", "^$"); err != nil {
			panic(err) // the testing package's own flag is always there
		}
		fmt.Printf("pgstore: %s is not set: the PostgreSQL tests are not run (set it, e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)\n", EnvVar, EnvVar)
	}
	os.Exit(m.Run())
}

// TestPingClosed: Ping answers nil through the pool and ErrUnavailable
// once the pool is closed, so a readiness probe fails.
func TestPingClosed(t *testing.T) {
	conn := server(t)
	s, err := Open(t.Context(), conn, Options{Schema: freshSchema(t, conn)})
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

// TestRefusesNonUTF8Database: a database in another encoding than UTF8
// (here LATIN1, which holds no "日本") is refused at Open with an error
// that names the encoding, before any schema is created in it.
func TestRefusesNonUTF8Database(t *testing.T) {
	conn := server(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) }) // after the drop below: cleanups run last first
	name := fmt.Sprintf("courier_latin1_%d_%08x", os.Getpid(), rand.Uint32())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	cfg, err := pgx.ParseConfig(conn)
	if err != nil {
		t.Fatal(err)
	}
	latin := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", cfg.Host, cfg.Port, cfg.User, name)
	s, err := Open(ctx, latin, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a LATIN1 database succeeded, want it refused")
	}
	if !strings.Contains(err.Error(), "LATIN1") || !strings.Contains(err.Error(), "UTF8") {
		t.Errorf("Open of a LATIN1 database: %v, want an error naming LATIN1 and UTF8", err)
	}
	c, err := pgx.Connect(ctx, latin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	var schemas int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'courier'`).Scan(&schemas); err != nil || schemas != 0 {
		t.Errorf("schema courier in the refused database: %d (%v), want none", schemas, err)
	}
}

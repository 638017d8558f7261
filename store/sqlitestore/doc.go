// Package sqlitestore is the embedded store.Store: one SQLite file, no
// server, courier's default. It runs on modernc.org/sqlite (pure Go, no
// cgo) and passes storetest under -race.
//
// # Using it
//
//	s, err := sqlitestore.Open(ctx, "/var/lib/courier/courier.db", sqlitestore.Options{})
//	defer s.Close()
//
// The file is opened in WAL mode with synchronous=FULL, so that a call
// that returned nil survives a crash of the process or the machine, and a
// busy timeout, so that callers wait for each other instead of failing.
// Writes go through one connection and are serial (BEGIN IMMEDIATE);
// reads use a small pool of their own and run beside them. Every method
// is safe for many goroutines; several processes may share the file on
// one host (SQLite's locks), though one process per file is the intended
// use.
//
// # The store's clock
//
// The host's clock, read once per call; Options.Now replaces it (tests
// pass storetest's clock). Times are kept to the microsecond.
//
// # Schema versions
//
// The schema is created and migrated by migrations embedded in the
// binary (migrations/NNNN_*.sql), each applied in one transaction that
// also records the version in the file's user_version, under courier's
// application_id. Open decides before it changes anything:
//
//   - a missing or empty file becomes a courier database at the latest
//     version;
//   - a courier database of an older version is migrated;
//   - a courier database of a newer version is refused with an error
//     naming both versions (an older binary must not write a newer
//     schema);
//   - anything else (not SQLite at all, or SQLite with another
//     application's tables) is refused with an error, and the file is
//     left exactly as it was.
//
// The shared logic is package store/internal/sqlcore; this package holds
// the SQLite specifics: opening, migrations, error classes.
package sqlitestore

// Package pgstore is the store.Store for many workers on many hosts: one
// PostgreSQL schema, shared through a pgx connection pool
// (github.com/jackc/pgx/v5). It passes storetest under -race.
//
// # Using it
//
//	s, err := pgstore.Open(ctx, "postgres://courier@db/courier", pgstore.Options{Schema: "courier"})
//	defer s.Close()
//
// # Leases and fencing in SQL
//
// Every call is one transaction. It reads the database's clock first
// (clock_timestamp(), in microseconds; a Save reads it in the statement
// that locks the stream's row, one round trip fewer) and judges
// everything by that one instant: the worker's clock never enters. Every write then locks the
// stream's row (SELECT ... FOR UPDATE) and decides with it in hand, so
// two calls on one stream are ordered by that lock:
//
//   - tokens come from a sequence, drawn after the stream's row is locked,
//     so on one stream each grant's token is above every earlier one's;
//     and a grant that starts after another returned draws a larger one;
//   - ClaimDue picks free streams with due work with FOR UPDATE SKIP
//     LOCKED, so concurrent claimers split the streams instead of queueing
//     or double-granting (a row another claimer holds is skipped, and one
//     it has just granted is re-checked after the lock and found leased);
//   - Save locks the stream, checks the lease's token, owner and expiry
//     against that row, locks and checks each record, and writes, all in
//     one transaction: either the lease was valid and every update is in,
//     or nothing is.
//
// # Round trips
//
// A transaction's BEGIN, and every statement that returns no rows, wait
// on the client and go to the server with the next query or with the
// COMMIT, as one pgx batch (one pipeline and one Sync: the server skips
// whatever follows a failed statement); queries that do not depend on
// each other's answers go together too (sqlcore.Pipeliner). A Save is
// two round trips (BEGIN, the streams' lock and the records' lock; the
// writes and the COMMIT) and so is an enqueue to streams that exist
// (BEGIN, the streams' lock and the IDs already taken; the inserts, the
// streams' last Seq and the COMMIT), however many streams and records
// the batch holds.
//
// A failed statement rolls the transaction back and is reported as
// store.ErrUnavailable; serialization failures, deadlocks and
// unique-key races are retried a few times first. A commit whose reply
// never came (the connection broke, the context ended) is reported as
// store.ErrUnknown, and so is a batch carrying the COMMIT that broke
// off before its replies came; a commit the server refused is
// ErrUnavailable.
//
// # Text, bytes and the database's encoding
//
// Names (streams, IDs, owners, operators) and outcome details are text
// columns, payloads bytea. store.CheckName refuses, before any query, a
// name PostgreSQL text cannot hold (a NUL byte, invalid UTF-8), and
// details are cleaned (store.CleanDetail), so the server never refuses
// one. Any valid UTF-8 must then fit, so Open refuses a database whose
// encoding is not UTF8, naming it.
//
// # Schemas and migrations
//
// The store lives in one schema (Options.Schema), created if missing and
// migrated by the embedded migrations (migrations/NNNN_*.sql) under an
// advisory lock, so that many hosts starting at once migrate it once. The
// version is kept in the schema's courier_schema table. A schema holding
// tables but no courier_schema is not courier's and is refused untouched;
// a version newer than this binary knows is refused by name.
//
// # Tests
//
// The tests need a server: set COURIER_TEST_POSTGRES to a connection
// string (postgres://postgres@127.0.0.1:5432/test?sslmode=disable).
// Without it none runs: go test ./... reports the package "ok ...
// [no tests to run]", and -v prints one line naming the variable. Each
// test gets its own schema and drops it.
package pgstore

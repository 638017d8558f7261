// Package sqlcore is the store.Store contract written once in SQL, for
// the SQL backends (sqlitestore, pgstore) to share: every method is one
// transaction that reads the store's now once, locks what it decides on,
// checks it with the rules of package store, and writes. A backend gives
// it a way to begin transactions and a Dialect: how to lock rows, how to
// draw a token, where now comes from, and which errors mean "try again"
// or "outcome unknown".
//
// # Tables
//
// Both backends create the same tables (their migrations differ only in
// types and syntax): streams (one row per stream: the last Seq assigned
// and the current lease), events (the immutable part, written once by
// Enqueue), deliveries (the delivery state Save writes, with the last
// outcome, when it settled and when its budget started) and actions (the
// operator history). Times are integers, microseconds since the Unix
// epoch, 0 for the zero time, so that both backends compare them alike.
//
// # Locking
//
// Every write locks the stream's row first (Dialect.Lock; SQLite needs
// none, its write transactions are serial) and decides with that row in
// hand, so that two calls on one stream are ordered by that lock whatever
// their instants. ClaimDue skips streams another claimer has locked
// (Dialect.SkipLocked), so claimers never queue behind each other.
package sqlcore

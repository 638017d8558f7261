// Package platsql is the platform.Store contract written once in SQL,
// for platsqlite and platpg to share, the way store/internal/sqlcore is
// shared by the delivery stores: every method is one transaction; a
// backend gives it a way to begin transactions and a Dialect (how to
// lock a row, which errors mean "try again" or "the commit may have
// happened").
//
// # Tables
//
// Both backends create the same tables, beside the delivery store's, in
// steps of their own (their migrations differ only in types), versioned
// in a table of their own, platform_schema: platform_apps,
// platform_endpoints (event types and secrets as JSON arrays of text),
// platform_event_types, platform_messages (the payload as bytes; an
// idempotency key unique within its application) and platform_fanout
// (one row per delivery of a message, with its state). Times are
// integers, microseconds since the Unix epoch, by the host's clock (or
// the one a test gives).
//
// # Locking
//
// A write that depends on an application existing reads its row with
// Dialect.Share (FOR SHARE on PostgreSQL), and deleting an application
// locks it with Dialect.Update, so that no endpoint or message is added
// to an application being deleted. SQLite needs neither: its write
// transactions are serial. A unique-key race (two creates of one
// idempotency key) rolls one back; Dialect.Retry runs it again, and it
// then finds the other's row.
package platsql

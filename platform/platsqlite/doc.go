// Package platsqlite is the platform.Store in the delivery store's
// SQLite file (store/sqlitestore), in tables of its own.
//
//	st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{}) // first: it makes the file courier's
//	ps, err := platsqlite.Open(ctx, path, platsqlite.Options{})
//
// Open refuses a file that is not a courier database (its application_id
// is not sqlitestore.ApplicationID), so the delivery store must have
// opened it first. Its tables (platform_*) are created and migrated by
// its own embedded steps, versioned in platform_schema, never in the
// file's user_version, which belongs to the delivery store. Like
// sqlitestore it opens the file in WAL mode with synchronous=FULL, writes
// through one connection (BEGIN IMMEDIATE) and reads through a small
// pool; a call that returned nil survives a crash.
package platsqlite

// Package platpg is the platform.Store in the delivery store's
// PostgreSQL schema (store/pgstore), in tables of its own.
//
//	st, err := pgstore.Open(ctx, dsn, pgstore.Options{Schema: "courier"}) // first: it makes the schema courier's
//	ps, err := platpg.Open(ctx, dsn, platpg.Options{Schema: "courier"})
//
// Open refuses a schema that holds no courier_schema table (the delivery
// store's mark), so pgstore must have opened it first. Its tables
// (platform_*) are created and migrated by its own embedded steps under
// an advisory lock, versioned in platform_schema, never in the delivery
// store's courier_schema.
//
// # Tests
//
// The tests need a server: set COURIER_TEST_POSTGRES (for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). Without it
// none runs, and -v prints one line naming the variable. Each test gets
// its own schema and drops it.
package platpg

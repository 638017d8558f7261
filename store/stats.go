package store

import (
	"context"
	"time"
)

// Stats is what a store holds over every stream, whoever owns them: what
// monitoring asks, since a worker sees only the streams it leases.
type Stats struct {
	// At is the store's now when it counted: ages are judged at it, by
	// the store's clock, like every other instant of the store.
	At time.Time
	// Backlog counts the records still to deliver: pending, retry or
	// parked, in every stream. Dead letters are not in it.
	Backlog int
	// Oldest is the earliest BudgetFrom among them (the acceptance, or
	// the latest replay): At minus Oldest is how long the longest
	// waiting event has waited in its current budget. Zero when Backlog
	// is 0.
	Oldest time.Time
}

// StatsReader is a Store that can count its backlog. It is optional:
// the runtime does not need it to deliver; the shell exports it as
// metrics when the Store has it. memstore, sqlitestore and pgstore
// implement it, with one read whose cost grows with the backlog, not
// with the settled history.
type StatsReader interface {
	// Stats counts the backlog at one instant of the store's clock. A
	// context already done returns ctx.Err().
	Stats(ctx context.Context) (Stats, error)
}

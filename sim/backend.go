package sim

import (
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// Store is the store a run's workers share, as the simulator needs it:
// the contract the workers call, and what the simulator reads of it
// whoever holds the streams (to see whether the run has settled, which
// state a fault met, and the final records the checker judges).
// memstore.Store is one; Options.Store supplies another, such as a real
// SQLite store (package sim/sqlsim).
type Store interface {
	store.Store
	// Records returns every record of stream, in Seq order, in the
	// machine's form.
	Records(stream string) []machine.Record
	// StateCounts returns how many records of stream are in each state.
	StateCounts(stream string) [machine.Dead + 1]int
	// State returns the state of the record with id, false if none.
	State(id string) (machine.State, bool)
	// SetUnavailable installs the outage injector: while f returns true
	// every write fails with store.ErrUnavailable and changes nothing;
	// reads keep working (memstore.Store.SetUnavailable).
	SetUnavailable(f func() bool)
}

// A Store that keeps instants coarser than the virtual clock's
// nanoseconds says so with a method Resolution() time.Duration: a worker
// that rebuilds from it reads each NextAt up to that much early, which
// the checker allows as it allows a clock that much behind (Run.Skew).

// NewStore makes the store of one run on the virtual clock now. A store
// it returns that has a Close method is closed when the run ends.
type NewStore func(now func() time.Time) (Store, error)

var _ Store = (*memstore.Store)(nil)

// newMemstore is the default NewStore: memstore, the contract's
// reference.
func newMemstore(now func() time.Time) (Store, error) { return memstore.New(now), nil }

// Package sqlsim runs the simulator on the real SQLite store: New gives
// sim.Options.Store a fresh database file per run (store/sqlitestore, on
// the run's virtual clock), deleted when the run ends.
//
// What the simulator reads of the store besides the contract (each
// stream's records and state counts, whoever holds the streams) it reads
// from the same file through a read-only connection of its own, as an
// operator's query would, so nothing is added to sqlitestore for it.
// Store outages (World.Cluster.StoreOutages) are injected in front of the
// store, refusing each write before it reaches SQLite, as memstore's
// SetUnavailable does.
//
// A run on SQLite is the same world under the same faults as on
// memstore, but its trace hash may differ: SQLite keeps instants to the
// microsecond (the store contract allows it) where memstore keeps the
// virtual clock's nanoseconds, so records, lease expiries and whatever
// the workers compute from them differ below the microsecond. The
// invariants must hold the same.
package sqlsim

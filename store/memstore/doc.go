// Package memstore is an in-memory store.Store: the store the simulator
// runs courier against, and the reference every other backend's behaviour
// is compared with through package storetest.
//
// # Using it
//
// Build one with New, passing the clock the store judges by:
//
//	s := memstore.New(clock.Now)
//
// That clock is the store's authoritative clock (see package store): lease
// expiry, what is due and every acceptance time are read from it, once per
// call, under the store's lock. Workers' clocks never enter. A simulator
// passes its virtual clock; it must never go backwards.
//
// Nothing is durable beyond the process: "durable" here means visible to
// every later call on the same Store. Every method is safe for concurrent
// use; one mutex serialises them, which is what makes Acquire, ClaimDue and
// Save atomic.
//
// # Beyond the contract
//
// These methods exist for the simulator and for tests, not for courier's
// runtime:
//
//   - SetUnavailable injects transient backend failures: while its
//     function returns true, every write (Enqueue, ClaimDue, Acquire, Renew,
//     Release, Save) fails with store.ErrUnavailable and changes nothing;
//     reads keep working.
//   - Records and Streams read everything the store holds, lease or no
//     lease, so a checker can compare it with what was observed.
//   - StateCounts and State read only the states (of a stream's records,
//     of one record), copying nothing: for a caller that asks often.
//
// # Planted bug
//
// With plant.SkipFencing active, every lease check (Save, Renew, Pending,
// Release) accepts any lease on the stream, as a store that does not fence
// would: a zombie owner renews, reads and writes as if it still owned the
// stream. It exists only to prove that the invariant checker catches a
// store that does not fence.
package memstore

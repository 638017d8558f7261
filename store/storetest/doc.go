// Package storetest is the conformance suite of the store.Store contract:
// a backend that passes Run behaves, as far as courier can tell, like
// every other backend that passes it, and courier's guarantees (nothing
// lost, bounded sends, order, dead letters kept) rest on exactly these
// behaviours.
//
// # Running it
//
// A backend runs the suite from one test of its own, with a constructor
// that builds a fresh, empty store judged by the clock it is given:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
//			return memstore.New(now)
//		})
//	}
//
// The factory is called once per check, so each check starts empty. A
// backend with external state (a database) creates a fresh schema or
// database per call and drops it with t.Cleanup.
//
// # Time under the test's control
//
// The store must read time only from now: the suite drives that clock
// itself (a Clock it advances in steps no finer than a microsecond), which
// is how it tests expiry, due work and retention without sleeping. A SQL
// backend passes now as the clock that replaces the database's now()
// (its Options.Now); see "Time under test" in package store for why that
// tests the same statements production runs. Run the suite with -race:
// some checks call the store from many goroutines.
//
// # What it proves
//
// Each check is a subtest named for the rule it proves; its function's
// comment says how. In short:
//
//   - enqueue is idempotent by ID in every state, keeps the first
//     payload, refuses an ID that belongs to another stream, treats IDs as
//     case-sensitive, and numbers each stream 1, 2, 3 on its own;
//   - a lease is exclusive (of many concurrent Acquire or ClaimDue calls
//     exactly one wins a stream), its token grows with every grant, and
//     only due work is claimed, earliest due first, ties in stream-name
//     order, at most max; the due instant follows Enqueue and Save, and a
//     stream released until an instant (ReleaseUntil) is not claimed
//     before it, unless a Replay lifts the hold;
//   - fencing: a forged (token or owner), expired, replaced, released or
//     replay-revoked lease can neither write, renew, release nor read, and
//     its attempts change nothing; a released lease is stale at once;
//   - renewal keeps the token and never shortens the lease;
//   - Save is atomic, never touches the event, and refuses every write no
//     machine could make (ErrInvalidWrite): history rewritten, any field
//     of a terminal record changed, a result without an attempt behind it
//     or in the same write as a new attempt, an outcome of an attempt
//     never made or older than the last;
//   - a batch of saves (store.SaveEach, and SaveBatch where the store is
//     a store.BatchSaver) gives each save the outcome it would have
//     alone, in batch order: a stale lease or an invalid write fails its
//     own save, which writes nothing, and its neighbours are made, their
//     streams' due instants moved; a cancelled batch changes nothing;
//   - the last outcome is kept with the record and stamped by the store,
//     its detail cleaned into bounded text (never refused) the same way
//     by every backend;
//   - names (streams, IDs, owners, operators) that are not valid UTF-8
//     or hold a NUL are refused with ErrBadArgument by every method and
//     change nothing; names in any script round-trip exactly; payloads
//     are kept byte for byte, whatever the bytes;
//   - Pending and DeadLetters page by Seq with a limit;
//   - a retry's schedule is durable; delivered and dead records are
//     terminal, never claimed, and stay readable with their reason;
//   - replay gives a dead letter a fresh budget, is recorded and fenced;
//     discard settles it; operator actions on anything else are refused;
//   - retention deletes settled records once old enough, never an
//     undiscarded dead letter, and never reuses a Seq;
//   - a cancelled context changes nothing, in every method;
//   - a store.Pinger answers Ping and changes nothing.
//
// It does not prove durability across a process crash, which no
// in-process test can, nor the ErrUnknown outcome of a lost reply: each
// SQL backend proves durability with its own kill loop, and pgstore the
// lost commit reply through a proxy that cuts it (unknown_test.go).
package storetest

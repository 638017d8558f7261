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
// backend with external state (a database) should create a fresh schema
// or database per call and drop it with t.Cleanup. The store must read
// time only from now: the suite drives that clock itself (a fake clock it
// advances), which is how it tests expiry and due work without sleeping.
// Run it with -race: some checks call the store from many goroutines.
//
// # What it proves
//
// Each check is a subtest named for the property it proves:
//
//   - enqueue is idempotent by ID in every state, keeps the first
//     payload, refuses an ID that belongs to another stream, treats IDs as
//     case-sensitive, and numbers each stream 1, 2, 3 on its own;
//   - a lease is exclusive (of many concurrent Acquire or ClaimDue calls
//     exactly one wins a stream), its token grows with every grant, and
//     only due work is claimed, in stream-name order, at most max;
//   - fencing: a forged, expired, replaced or released lease can neither
//     write, renew, release nor read, and its attempts change nothing;
//   - renewal keeps the token and never shortens the lease;
//   - Save is atomic and refuses to rewrite history (ErrInvalidWrite);
//   - a retry's schedule is durable; delivered and dead records are
//     terminal, never claimed, and stay readable with their reason;
//   - a cancelled context changes nothing, in every method.
//
// It does not prove durability across a process crash, which no
// in-process test can; a backend must argue that on its own.
package storetest

// Package store defines the contract between courier and the durable
// storage that several workers share: idempotent enqueue by stable ID,
// ownership of a stream by an expiring lease with a fencing token, writes
// checked at the storage boundary, the last outcome kept with each record,
// retention of settled records, and dead-letter replay. Package storetest
// is its conformance suite; memstore (in memory, the simulator's),
// sqlitestore (embedded) and pgstore (many hosts) implement it.
//
// # Why a lease per stream
//
// The lease is taken on a whole stream, not on single due events, because
// strict order needs one decider per stream: the owner's machine is the
// only one that may send, so it alone decides which event goes next. A
// per-event claim would let two workers send consecutive events of one
// stream at once. Streams are the unit of parallelism: many streams spread
// over many workers.
//
// # The event and its delivery
//
// A Record is an immutable Event (stream, ID, Seq, payload, acceptance
// time), written once by Enqueue, and its Delivery (state, attempts, next
// attempt, dead reason), which Save rewrites. Save takes Updates, which
// carry no event: a Save cannot change a payload, and a store never
// compares one. With the state a Save may record the Outcome of the
// attempt that led to it (a status code and a short, bounded text, never
// a payload or a secret), kept as the record's Last, so that an operator
// can see why an event is retrying or why it died.
//
// # Names are text, payloads are bytes
//
// Stream names, event IDs, owners and operators travel beyond the store:
// in HTTP headers (an event's ID is its webhook-id), in JSON bodies and
// logs, and in PostgreSQL text columns, which hold no NUL byte and only
// valid UTF-8. So every backend takes them as text only: valid UTF-8
// with no NUL byte, checked by one shared rule (CheckName, CheckLease)
// before the call reads or writes anything, and refused with
// ErrBadArgument naming the argument. Were it left to the storage, one
// backend would accept such a name and another fail the call as
// unavailable, and a producer that follows the error table would try
// again for ever. Any valid UTF-8 is kept and compared byte for byte.
//
// A payload is bytes: every backend keeps it exactly (a blob, bytea),
// NUL and invalid UTF-8 included, and returns it exactly.
//
// An outcome's detail is free text from a receiver or a channel, which
// courier does not control, so it never makes a Save fail: every backend
// keeps it as CleanDetail makes it (each run of bytes that is not UTF-8
// and each NUL becomes U+FFFD, cut to MaxDetailBytes on a rune boundary),
// the same on all of them. The store is where this is done because every
// path that records an outcome writes through it.
//
// # Which clock decides
//
// The store's. A lease's expiry, what is due, every acceptance, settling
// and operator action time are read from the store's clock, once per
// call, and every decision of that call is judged at that instant. A
// worker's clock may be skewed; its own idea of how long it still owns a
// stream is only a hint. A worker renews well before expiry (at a third
// of the ttl, say) and treats ErrStaleLease as final.
//
// For pgstore the store's clock is PostgreSQL's (now() of the call's
// transaction), whichever host the worker runs on; for sqlitestore it is
// the clock of the host that holds the file; for memstore it is the
// function passed to New.
//
// # Time under test
//
// Every backend runs the same suite with time under the test's control.
// storetest hands each backend's factory a clock function that only the
// test moves (storetest.Clock). Each backend has exactly one place that
// reads "now" for a call: memstore calls its clock function; the SQL
// backends read now from the database in the call's transaction unless
// their Options.Now is set, in which case its value is bound as a
// parameter in the very place the database's now would be. Every rule
// about time is then written once, in SQL, against that one value, so the
// suite checks the same statements that production runs; only the source
// of the instant differs. pgstore's own tests also check the production
// path: with no Options.Now, a lease expires at the database's now plus
// its ttl.
//
// # Which stream is claimed next
//
// ClaimDue grants the streams that are due, earliest due instant first,
// ties by name: under contention the stream that has waited longest is
// served first, however many streams there are. A stream's due instant
// is kept in the store, by the call that changes it and in that call's
// transaction: Enqueue lowers it, Save recomputes it from the stream's
// waiting records, Replay makes it now, Release and ReleaseUntil raise
// it to the instant they name. So ClaimDue reads the due streams from an
// index (SQL) or a heap (memstore), never every stream. An owner that
// knows its stream's next work is far off (a long backoff, a probe owed
// later) gives it up with ReleaseUntil, and the stream is claimed again
// when that instant comes, not before, even if events are enqueued
// meanwhile (in strict order they wait behind the head anyway). A parked
// record's probe instant is the owner's to know, not the store's: a
// parked stream is due as soon as its last release allows.
//
// # What an error means
//
// Every error but one means the call changed nothing. A networked store
// has a third outcome besides done and not done: it sent a write, and the
// reply was lost (the connection broke, or the context ended, while the
// commit was in flight). The write may have committed or not, entirely or
// not at all, never in part. The store returns ErrUnknown then, never nil
// and never ErrUnavailable, which promises that nothing changed. Reads
// never return ErrUnknown. What the runtime does:
//
//	error            changed?      the runtime
//	---------------  ------------  ----------------------------------------------------------------
//	nil              all of it     acts on the result
//	ErrStaleLease    nothing       drops the stream's machine, sends nothing more on the stream
//	ErrLeaseHeld     nothing       leaves the stream to its owner
//	ErrInvalidWrite  nothing       a bug: drops the machine, logs, rebuilds from the store
//	ErrBadArgument   nothing       a bug or bad input: reports it to the caller
//	ErrNotFound      nothing       (reads, operator calls) reports it
//	ErrUnavailable   nothing       backs off and tries again; after Save, acts on nothing of the batch
//	ErrUnknown       maybe         re-reads before acting, as below
//	ctx.Err()        nothing       (only when ctx was done before the call) stops
//
// After ErrUnknown:
//
//   - Save: nothing of the batch may be acted on (no acknowledgement, no
//     send): the worker drops the stream's machine and rebuilds it from
//     Pending, which holds either the old state or the new one. A
//     persisted attempt that was never sent costs that attempt, as a
//     crash would.
//   - Enqueue: the producer is not acknowledged; it offers the event
//     again with the same ID, and idempotence makes that safe.
//   - Acquire, ClaimDue: a lease may have been granted that the caller
//     does not know; it expires by itself. That costs the stream one
//     lease of delay, never a second owner.
//   - Renew: the lease is good until the Expires the caller last knew,
//     not the new one; renew again (the token is the same either way).
//   - Release, ReleaseUntil: release again; ErrStaleLease then means
//     it was done.
//   - Replay, Discard: Get the record; its History says whether it
//     happened. ErrInvalidWrite on a retry also means it did.
//   - DeleteSettled: call it again.
//
// A context cancelled before the call returns ctx.Err() and changes
// nothing; one cancelled while the commit is in flight returns an error
// that is both ErrUnknown and ctx.Err(). Empty results may be nil or empty
// slices; callers must not tell them apart.
//
// # Rebuilding in pages
//
// Pending returns at most limit records. An owner taking over a stream
// with a million waiting events reads them page by page (after = the last
// Seq of the previous page) rather than all at once; the machine itself
// still holds every waiting event of the streams it owns.
//
// # Retention and dead letters
//
// Records are not kept forever. A delivered record is settled when it is
// saved; DeleteSettled removes settled records once they are older than
// the retention the runtime is configured with. That retention must be
// longer than any producer may resend an event: a deleted ID enqueued
// again is a new event and is delivered again. A dead letter is kept,
// with its reason, last outcome and history, until an operator acts on
// it: Replay re-drives it with a fresh budget (attempts from zero, MaxAge
// from the replay; the send's attempt numbers restart at 1, so a receiver
// deduplicates by ID, as it must anyway), and Discard settles it for
// retention to delete. Each action is recorded with who and when, and a
// replay is fenced: it takes a fresh token, so no earlier owner can write
// over it.
//
// # Who is responsible for what
//
//	courier                                         the application
//	-----------------------------------------------  -----------------------------------------------
//	the protocol: enqueue, lease, attempt, transition durable, atomic storage that passes storetest
//	  (machine + runtime)                              and keeps what it acknowledged across a crash
//	                                                  (storetest cannot prove that; the SQL stores'
//	                                                  kill loops, store/internal/killtest, do)
//	retry policy, breaker, bounds, dead letters     choosing the policy, the bounds and the retention;
//	  kept with their reason and last outcome         operating the dead letters (replay, discard)
//	the fencing check at the storage boundary       a store clock all workers' leases are judged by
//	stable IDs and idempotent enqueue               stable IDs that name one event for one receiver;
//	                                                  an idempotent receiver (the effect once)
//	the stream sequence on every send               a receiver that fences on it, if order matters
//	                                                  across lost replies
//	the invariant checker and the simulator         running them (go test) against their own store
//
// # The send bound with many workers
//
// An owner persists an attempt (Save) before it sends it. If it then
// stalls past its lease (a long pause) and wakes, its next Save fails, so
// it can send nothing new, but the attempt it had already persisted may
// still go out, late, after the next owner has moved on. Every send still
// carries a distinct attempt number that was durable before the send, so
// an event is sent at most MaxAttempts times per budget in all, counting
// every owner; a zombie's late send can land after the event was settled,
// and is then absorbed by the receiver's deduplication and sequence fence.
package store

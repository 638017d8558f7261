// Package store defines the contract between courier and the durable
// storage that several workers share: idempotent enqueue by stable ID,
// ownership of a stream by an expiring lease with a fencing token, and
// writes checked at the storage boundary. Package storetest is its
// conformance suite; package memstore is the in-memory implementation the
// simulator uses. A SQL store only has to pass storetest.
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
// # Which clock decides
//
// The store's. A lease's expiry, what is due, and every acceptance time
// are read from the store's clock; a worker's clock may be skewed, and its
// own idea of how long it still owns a stream is only a hint. A worker
// renews well before expiry (at half the ttl, say) and treats ErrStaleLease
// as final.
//
// # What is durable when a call returns
//
// Everything the call changed. Save is atomic: all of a batch or none of
// it. A call that fails changed nothing, including on a cancelled context
// (checked before any visible change) and on a backend failure
// (ErrUnavailable, never reported as success).
//
// A networked backend can lose the reply to a write it did commit. It
// must then return an error (never nil), and the caller must treat any
// error from Save as "maybe written": a worker drops its machine and
// rebuilds it from the store, which is right either way, because nothing
// of the batch was acted on. Enqueue retried with the same ID is
// idempotent. Acquire retried after a lost reply finds its own lease held
// (ErrLeaseHeld) until it expires; that costs one lease of delay, never a
// second owner.
//
// Empty results may be nil or empty slices; callers must not tell them
// apart.
//
// # Who is responsible for what
//
//	courier                                         the application
//	-----------------------------------------------  -----------------------------------------------
//	the protocol: enqueue, lease, attempt, transition durable, atomic storage that passes storetest
//	  (machine + runtime)
//	retry policy, breaker, bounds, dead letters     choosing the policy and the bounds; operating
//	  kept with their reason                          the dead letters, and any replay of them
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
// an event is sent at most MaxAttempts times in all, counting every
// owner; a zombie's late send can land after the event was settled, and
// is then absorbed by the receiver's deduplication and sequence fence.
package store

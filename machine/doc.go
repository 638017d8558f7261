// Package machine is courier's delivery core: a pure state machine that
// decides, for the events of one stream bound for one downstream channel,
// what to persist, what to send, when to retry, when to stop sending and
// park, and when to give up.
//
// It does no I/O, reads no clock, starts no goroutine and draws no random
// number: the caller brings the clock (every input carries its reading),
// the durable store (it persists what a Batch says) and the channel (it
// performs the Sends and Probes and reports their outcomes). The same seed,
// config and inputs give the same batches, in this package or in a port.
//
// # Using it
//
// Build a machine with New (a new stream) or Recover (after a restart, or
// when a worker takes a stream over, from the store's records). Feed every
// input to Step: Accept (a producer's event), Adopt (an event a shared
// store accepted and numbered), Tick, Result, ProbeResult. Each Step
// returns a Batch; honour it in the order its doc gives: persist, then
// acknowledge, then send and probe, then tick at WakeAt. An error from
// Step changes nothing. ErrQueueFull is back-pressure, not misuse:
// MaxQueued events are waiting, the Accept was refused and not
// acknowledged, and the producer offers it again later. Every other error
// means the input was misuse (time went backwards, a malformed input such
// as an Accept at the zero time, an attempt never sent).
//
// # States
//
//	pending   accepted, waiting for an attempt
//	retry     the last attempt failed; waiting for backoff to pass
//	parked    the circuit is open; waiting for a healthy probe
//	delivered confirmed by the channel (terminal)
//	dead      given up: exhausted, expired or rejected (terminal, kept)
//
// An attempt in flight does not change the state; the attempt count does,
// and it is persisted before the send. While in flight, NextAt is the
// instant the attempt times out.
//
// # Retries
//
// After failed attempt n, the next attempt waits Config.Backoff(id, n):
// BaseBackoff doubled per failure up to MaxBackoff, less a deterministic
// jitter derived from Seed, the ID and n. A Retry-After hint may postpone
// it further, never beyond MaxRetryAfter. After MaxAttempts attempts the
// event is dead (exhausted); if its next attempt would come after MaxAge
// since acceptance, it is dead (expired) at once; a parked or waiting
// event is dead (expired) when MaxAge passes. A Refused outcome makes it
// dead (rejected). An attempt with no Result within AttemptTimeout counts
// as timed out.
//
// # Circuit breaker and poison events
//
// BreakerThreshold consecutive retryable failures (timeouts included, of
// any events) move the circuit from closed to checking: sending stops and
// one probe goes out. A healthy probe closes it again: the channel works,
// so whatever kept failing is at fault itself (a poison event). It goes on
// with its own backoff and budget (MaxAttempts, MaxAge) and then dies; it
// never opens the circuit, and in strict order it holds the stream no
// longer than that budget. Its failures keep counting, so a poison event
// costs a probe every BreakerThreshold failures; that is what lets the
// breaker still trip if the channel really does go down meanwhile. A
// failed (or timed-out) probe opens the circuit: every event not in flight
// is persisted as parked, new events are accepted as parked, and probes
// repeat after Config.ProbeBackoff. The first healthy probe closes the
// circuit and releases the backlog, which drains in acceptance order. The
// circuit closes half-open: one probe proves little on a flapping link, so
// the first failure after it checks again at once.
//
// The failure streak lives in memory. Recover therefore starts the circuit
// open if any record is parked, and checking (a probe at once, no send
// until it answers) if any waiting record has an attempt behind it: a
// sender restarting in a loop during an outage would otherwise never trip
// the breaker and would burn its events' attempts.
//
// # Ordering
//
// Strict: one attempt in flight at most; the earliest non-terminal event
// goes first and holds the others until it is delivered or dead. Every
// Send carries the event's Seq; a receiver that applies only sequences
// above the last it applied cannot apply a late attempt out of order.
// Independent: up to Window attempts in flight, due events picked in
// acceptance order.
//
// # Rate limit
//
// Config.RateLimit and RatePer bound how fast a stream starts attempts:
// at most RateLimit starts in any interval of RatePer, so attempt
// k+RateLimit of the stream starts no earlier than RatePer after attempt
// k (a sliding window; a burst of RateLimit may go at once). The machine
// remembers its last RateLimit starts; a start the limit holds back
// waits, in its place in the order (in strict order the head holds the
// rest, as ever), and WakeAt is the instant the oldest of those starts
// leaves the window. No start waits longer than that. Probes do not
// count: they carry no event, one at most is out, and ProbeBackoff
// spaces them. Recover cannot know when the old machine started its
// attempts, so it counts a full window of starts at its own instant: a
// recovered stream starts nothing for RatePer. Attempts in flight are
// bounded by Window. Zero RateLimit sets no limit.
//
// # Late, stale and duplicate inputs
//
// Only the Result of the attempt in flight counts. A Result for an earlier
// attempt (it timed out, or the machine was recovered since), a second
// Result for the same attempt, one for a terminal event and one for an
// unknown ID change nothing: Batch.Ignored says why. Acting on them could
// only send twice or move a state backwards; ignoring one costs at most a
// redundant attempt, which the receiver's deduplication absorbs. A
// ProbeResult for any probe but the one in flight is ignored the same way,
// including one numbered past this machine's probes: probe numbers are not
// persisted and start again with each machine, so a runtime that rebuilds
// its machine in-process should drop the old machine's probe replies with
// its connections (a stale healthy reply that matched a new probe's number
// could at worst close the circuit early, half-open, at the cost of one
// attempt). A Result naming an attempt that was never sent is misuse
// (ErrNoSuchAttempt): attempts are persisted, so no machine can meet one.
// An input is applied before the work its instant makes due: a Result
// that arrives at or after its attempt's timeout, with no Tick between,
// still counts. Accepting a known ID changes nothing, not even the
// payload, and acknowledges again (Ack.Duplicate).
//
// # Cost
//
// A step costs O(log n) in the events the stream holds, not O(n): the
// machine indexes what each step looks for (attempts in flight by
// timeout, waiting events by deadline and by due time, the head of a
// strict stream), and WakeAt comes from those indexes. Only what the
// caller must persist scales with the backlog: a circuit that opens parks
// every waiting event, and one that closes releases them all. Each Batch
// is allocated fresh and is the caller's to keep, as raft's Ready is: the
// machine keeps no reference to its lists, and the payloads it holds are
// its own copies, never written.
//
// The indexes are the machine's only performance machinery. A change for
// speed must gain at least 5% on a benchmark a user would notice (the
// simulator's sweep, a scenario, BenchmarkCycle...) and must not lend
// memory, pool it or add a second code path for one rule.
//
// # Idempotency window
//
// Accepting an ID the machine holds changes nothing and is acknowledged
// as a duplicate. It holds every event that is not settled, and the
// settled ones in its idempotency window: a settled record stays while it
// is among the last Config.KeepSettled to settle and less than
// Config.KeepSettledFor has passed since it settled (each bound applies
// only when set; a record is forgotten by the first step after it leaves
// the window, after that step's input). A producer that offers an ID again after
// its record left the window makes a new event: it is accepted with a new
// Seq, persisted as a new record (the store must let it replace the old
// one or sit beside it), acknowledged as new and delivered again. Only the
// receiver's deduplication by ID then keeps it from taking effect twice,
// so choose a window longer than producers resend. Zero for both keeps
// every settled record: memory then grows with history. DefaultConfig
// keeps the last 100,000.
//
// With a shared store the store answers for idempotency (it enqueues by
// ID), so a machine with a window forgets a record it took over with
// Adopt as soon as that record settles. Adopt of a forgotten ID is then
// refused like any record whose Seq is not above the last one (the store
// hands over only records above it), and a late Result for it is ignored
// as one for an unknown event.
//
// Records returns what the machine holds. The store keeps every record:
// a forgotten one is no less durable, and Recover takes the window's
// newest back from the settled records it is given.
//
// # Planted bugs
//
// The simulator proves its invariant checker by switching deliberate bugs
// into the code (internal/plant). Seven of them need the machine's insides
// (retry limits, the poison hold, the drain order, the open circuit, the
// window, the rate limit) and live here, as the unexported faults of a
// Machine, fixed when it is made. Only a build with the tag plant can set them
// (faults_plant.go, the machine's one import of the module, and only in
// that build); in a normal build faults_off.go sets none, so no input,
// flag or file can switch one on in a shipped binary. The hooks are plain
// field tests on paths the bugs bend, not a second machine. The bugs a
// runtime could cause from outside (a shortened MaxAge, records lost on
// recovery) are the worker's instead: it hands the machine a bent config
// or bent records.
package machine

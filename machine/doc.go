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
// store accepted and numbered), Tick, Result, ProbeResult. Each Step returns a Batch; honour it in the order its doc
// gives: persist, then acknowledge, then send and probe, then tick at
// WakeAt. An error from Step means the input was misuse (time went
// backwards, a malformed input, an attempt never sent) and nothing changed.
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
// # Limits
//
// The machine remembers every ID it accepted, so that acceptance stays
// idempotent; memory grows with history. A long-lived runtime keeps
// terminal records in its store for as long as producers may resend and
// rebuilds the machine from them with Recover.
package machine

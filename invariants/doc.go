// Package invariants judges a run of courier by what was observed, not by
// what the machine believes: it reads an observation log (Run: what the
// producer was told, what the store persisted, what was sent, what the
// receiver applied or discarded, the circuit, restarts) and the store's
// final content, and reports every broken guarantee as a Violation naming
// the invariant, the event and the step.
//
// It is separate from the machine on purpose: it does not import the
// simulator and does not call the machine, so the same checker judges the
// simulator's runs today and a real runtime's recorded runs later.
//
// # The invariants
//
//   - nothing-lost: acknowledged only after persisted; every accepted event
//     stays in the store and ends applied or dead (delivered in the store
//     means applied by the receiver).
//   - applied-once: no ID applied twice; nothing applied that was never
//     accepted; a known ID never becomes a new event.
//   - order: in strict mode, an attempt of event s starts only when every
//     earlier event is terminal, and the receiver applies in increasing
//     sequence. A dead event may have been applied (its reply was lost),
//     but never out of order.
//   - bounded-sends: at most MaxAttempts sends per event across restarts
//     and owners; each attempt persisted before it is sent, and no attempt
//     number sent twice; at most Window attempts in flight (one in strict
//     order), an attempt counting from its persist to its reply or
//     AttemptTimeout; no send after terminal, except the late send of a
//     fenced-off owner (one whose lease token a newer lease superseded);
//     only probes while that worker's circuit is checking or open.
//   - dead-kept: a dead event stays dead, with its reason, in the store,
//     until an operator discards it (DeadDiscarded) and retention deletes
//     it (Deleted).
//   - operator actions: only a dead letter may be discarded, and only a
//     settled record (delivered, or a discarded dead letter) deleted by
//     retention; a record rightly deleted is not lost. Anything else is
//     nothing-lost (dead-kept for an undiscarded dead letter). Only an
//     undiscarded dead letter may be replayed (Replayed), and the store
//     hands it back pending with no attempts; anything else is monotonic.
//     A replay starts a fresh budget: from it, sends, attempt numbers,
//     dead-deserved, age and liveness count as for a new acceptance at
//     the replay's instant, and a send under a lease the replay fenced
//     off counts against the old budget. It is no fresh effect: the
//     receiver still applies the event at most once (applied-once), and
//     in strict order it keeps its place.
//   - dead-deserved: a dead letter's reason is true of its history:
//     exhausted only after MaxAttempts sends, expired only once MaxAge
//     has passed (or the next attempt would come after it), rejected only
//     after the receiver refused it or when its payload is over
//     MaxPayloadBytes (an adopted record that can never be sent).
//   - monotonic: terminal states never change; attempt counts never fall;
//     no owner writes against a record's history (the store refused it).
//   - liveness: every event settles by MaxAge+AttemptTimeout (+Run.Slack
//     for lease handovers and clock skew) after its acceptance, and within
//     Run.LivenessBound of the faults healing.
//   - owner-wait: no stream with due work (a pending or retry record
//     whose NextAt has come; a parked record once the instant its last
//     release held the stream until has come) waits for an owner longer
//     than Run.OwnerWait plus Run.Slack, from the end of its last lease
//     (released, revoked, or run out) to the next grant (ownerwait.go).
//     Checker.OwnerWaits returns the waits it judged.
//   - pause: while an operator has the stream paused (Paused until
//     Resumed), nothing is sent under a lease granted in the pause (a
//     grant within Run.Stall of the resume excepted); the owner the pause
//     found may finish what it holds. Availability is liveness's: Slack
//     counts each pause (and a poll to claim the stream after it), so an
//     event that waited on a pause is late by no more than the pause.
//   - lease-kept: a worker gives a lease up of its own accord
//     (LeaseDropped) only when the store told it the lease ends within
//     Run.ClockMargin + 2*Run.Skew: a refused renewal or a store outage
//     shorter than the lease must not cost the stream, since a prompt
//     retry would keep it. A renewal whose reply was lost (ReplyLost)
//     does not count: the worker could not know of it.
//
// The platform's rules judge a platform's fan-out, from the log's own
// reading of which endpoints wanted each message (Fanned) and of its
// bulk replays (BulkReplay); see fanout.go:
//
//   - fanout-once: every delivery an endpoint wanted is enqueued in its
//     stream and ends applied or dead (applied-once holds it to once).
//   - fanout-only-subscribed: a delivery an endpoint did not want (its
//     filter, or disabled when the message was published) is never
//     enqueued, sent or applied.
//   - disabled-gets-nothing: the pause rule, for an endpoint disabled.
//   - replay-since: a bulk replay since T replays, once, every undiscarded
//     dead letter whose budget began at or after T, and none that died
//     before T.
//   - replay-missing: a replay of missing messages since T gives an
//     endpoint each message published since T that its filter takes and
//     it missed (created later, or disabled), and nothing it missed
//     before every T asked.
//
// # The policy rules
//
// The machine's documented policy (machine/doc.go), judged from the log
// with the policy's numbers (Run.Policy) and never the machine's code:
//
//   - retry-timing: the NextAt persisted with a failed attempt n lies
//     between the least and greatest delay the policy allows after the
//     failure (the jittered backoff, a Retry-After hint capped at
//     MaxRetryAfter, no hint when the cap is 0); the same owner never
//     starts attempt n+1 before it, and a single sender starts it then
//     when its circuit is closed, its window cannot be full and its rate
//     limit cannot hold it.
//   - breaker: after BreakerThreshold consecutive retryable failures, or
//     one right after a half-open close, the next thing sent is a probe;
//     no attempt while a probe is unanswered.
//   - parking: once the circuit opens, every waiting record is persisted
//     parked before the next send or probe.
//   - recovery: a rebuild from a store with a parked record starts open,
//     one with an attempt behind it does not start closed, and either
//     probes first; no attempt n+1 before the NextAt persisted with
//     attempt n, across restarts and owners.
//   - age: no attempt starts at or after acceptance + MaxAge.
//   - leases: tokens grow; a renewal keeps the token, comes before the
//     lease expired and never moves Expires earlier; every write is under
//     the newest, unexpired lease.
//   - producers: a re-offer of an acknowledged ID is acknowledged again
//     with its sequence, even with the queue full, and changes nothing.
//   - rate-limit: with Policy.RateLimit set, no RatePer holds more than
//     RateLimit attempt starts of the stream, by any owner, an attempt
//     starting when it is persisted (a pause before its send may delay
//     it further); probes do not count. Slack: 2*Run.Skew.
//
// The only slack is Run.Skew, the largest clock offset of a worker: a
// worker judges time by its own clock, the log by the run's.
//
// # What the observer must guarantee
//
// Entries are in the order things happened; Persisted entries are written
// when the store has made the write durable; Applied and Discarded come
// from the receiver itself.
package invariants

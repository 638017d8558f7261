// Package receiver is the receiving half of effect-once delivery: an
// http.Handler middleware that puts a webhook through every check before
// the application sees it, and lets each event reach the application
// once.
//
// courier delivers at least once: a lost reply makes it send again, so
// duplicates are normal. Effect once needs the receiver to apply each
// webhook-id at most once, for longer than the sender may retry. Most
// receivers get this wrong in one of three ways: they check the ID and
// record it in two steps (two concurrent deliveries both pass the check),
// they record the ID before the application succeeds (a failure then
// loses the event), or they record it apart from the application's effect
// (a crash in between applies it twice or never). This package does
// neither.
//
// # What the middleware answers
//
//	HEAD                                   204, the probe: the path is up
//	not POST                               405
//	body over MaxBodyBytes                 413
//	headers missing or malformed           400
//	bad signature, stale or future stamp   401
//	ID applied within Window               200 "duplicate", app not called
//	strict: sequence not above the last    409, app not called (a late
//	  applied on its stream                  attempt of an event the sender
//	                                         has already given up)
//	dedup store unavailable                503 with Retry-After
//	otherwise                              the application's answer
//
// None of the 4xx reach the application. While one delivery of an ID is
// being applied, another delivery of the same ID waits for it, then gets
// 200 as a duplicate (or is applied, if the first failed). The ID is
// recorded only if the application answers 2xx; its response is held back
// until the record is committed, so the sender never hears 2xx for an
// event that was not recorded. A panic in the application releases the
// claim.
//
// # Stores
//
// NewMemory keeps IDs in memory: right for tests and for applications
// whose effects are in memory too. NewSQL keeps them in a database
// through database/sql (SQLite or PostgreSQL) and runs each claim in a
// transaction; the application gets it from Tx(r.Context()) and should do
// its writes there, so that its effect and the record of the ID commit
// together or not at all: effect once even across a crash.
//
// # Strict streams
//
// With Config.Strict, each request must carry courier-stream and
// courier-sequence, and an event is applied only if its sequence is above
// the last applied on its stream. Those headers are not signed (Standard
// Webhooks signs id, timestamp and body only); if an attacker able to
// replay signed requests could hurt you by reordering, carry the sequence
// in the body and check it there too.
package receiver

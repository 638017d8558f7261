// Package webhook signs and verifies webhooks by the Standard Webhooks
// scheme: three headers, webhook-id (the event's ID, the same on every
// attempt), webhook-timestamp (Unix seconds) and webhook-signature
// ("v1," + base64 HMAC-SHA256 of id "." timestamp "." body), with secrets
// written "whsec_" + base64. It interoperates with the scheme's reference
// library both ways, and signs the spec's published vector exactly.
//
// # Sending
//
// ParseSecret each secret, NewSigner with all the active ones, and
// SetHeaders on each request. With several secrets each request carries
// one signature per secret, space-separated: to rotate, add the new secret,
// give it to the receiver, then drop the old one; no valid webhook fails
// in between.
//
// # Receiving
//
// Verify (or a Verifier) checks that the three headers are there and well
// formed, that the timestamp is within the tolerance of the receiver's
// clock (5 minutes by default, either way), and that one v1 signature is
// the MAC under one of the receiver's secrets, compared in constant time.
// Its errors wrap ErrMalformed (answer 400) or ErrTooOld, ErrTooNew,
// ErrNoSignature (answer 401). Verification is not deduplication: a replay
// within the tolerance verifies again, and a retry is a replay. The
// receiver package adds deduplication by webhook-id and sequence fencing.
//
// courier adds three headers of its own: courier-stream, courier-sequence
// (the event's place in its stream, for strict order) and courier-attempt.
// They are not signed (the scheme signs the body only); a receiver that
// fences on the sequence and needs it authenticated should also carry it
// in the body.
//
// A Secret never shows its key in String, %#v or slog; Text is the one
// method that does, for storing it.
package webhook

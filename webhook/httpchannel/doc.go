// Package httpchannel is courier's HTTP webhook transport: a
// channel.Channel that POSTs each attempt, signed by the Standard Webhooks
// scheme (package webhook), and turns the answer into the machine's
// verdict.
//
// # Outcomes
//
//	2xx                           delivered
//	408, 425, 429, 5xx            failed (retryable), with Retry-After
//	                              (seconds or HTTP-date) passed on
//	3xx                           refused: redirects are not followed; the
//	                              Location is in Outcome.Detail
//	any other status              refused for good
//	connection, DNS or TLS error  failed (retryable)
//	attempt timeout or caller's   timed out (the receiver may have applied
//	context ends first            the event)
//	SSRF policy refuses the       refused (retrying would only knock on the
//	address                       same door)
//
// A probe (HEAD to the endpoint by default; Config.ProbeMethod and
// ProbePath change it) follows the same table; it is unsigned, carries no
// event and has the courier-probe header.
//
// # What every request carries
//
// webhook-id (the event's ID, the same on every attempt), webhook-timestamp
// and webhook-signature (one signature per configured secret);
// courier-stream, courier-sequence (the event's Seq, for a receiver that
// fences a strict stream) and courier-attempt; a User-Agent naming courier
// and its version. No cookies are kept or sent, no redirect is followed,
// no proxy is used unless Config.ProxyFromEnvironment, and every address
// dialled is checked at connect time by package ssrf (Config.AllowAddrs is
// the opt-in, logged exception for loopback in development and tests).
//
// # Limits
//
// Config.AttemptTimeout bounds each attempt from dial to last byte.
// Config.MaxBodyBytes (1 MiB by default) bounds the payload: call
// Channel.Check when accepting an event, so an event the channel could
// never send is refused to its producer with a clear error rather than
// dead-lettered later. Only Config.MaxResponseBytes of a response body are
// read, and then discarded.
//
// Invalid config is rejected by New with an error naming the field.
// Outcome.Detail never holds the payload, a secret, or the endpoint URL
// (which may carry a token); it may hold a redirect's Location.
package httpchannel

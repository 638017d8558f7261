// Package httpchannel is courier's HTTP webhook transport: a
// channel.Channel that POSTs each attempt, signed by the Standard Webhooks
// scheme (package webhook), and turns the answer into the machine's
// verdict.
//
// # Outcomes
//
//	2xx                           delivered
//	a status in the policy's      refused: the event goes dead at once, a
//	RejectOn (default: 410 Gone)  dead letter to replay
//	any other status (1xx, 3xx,   failed (retryable), with Retry-After
//	4xx, 5xx)                     (seconds or HTTP-date) passed on
//	connection, DNS or TLS error  failed (retryable)
//	attempt timeout or caller's   timed out (the receiver may have applied
//	context ends first            the event)
//	SSRF policy refuses the       refused (retrying would only knock on the
//	address                       same door)
//
// Redirects are never followed (the target would escape the endpoint the
// operator chose, and the SSRF policy with it): a 3xx is classified like
// any other status, by default a failure, its Location in Outcome.Detail.
//
// # Status policy
//
// Config.StatusPolicy lists the statuses that reject an event at once;
// nil means DefaultStatusPolicy, which lists only 410 Gone, the answer by
// which Standard Webhooks lets a receiver say "stop sending here". Every
// other non-2xx is retried with backoff until the event's budget
// (machine.Config MaxAttempts, MaxAge) runs out, as Svix does: a receiver
// answering 404 or 401 is most often being deployed or reconfigured, and
// an event that waits for it is better than a dead letter to replay by
// hand. A receiver whose 4xx really means "never" (say 422 for a payload
// it will never accept) is given its own list, such as
// StatusPolicy{RejectOn: []int{410, 422}}; an empty list rejects nothing.
//
// A retried 4xx counts as a failure toward the machine's circuit breaker,
// like a 5xx: after BreakerThreshold in a row the stream stops sending
// and probes. A receiver that answers 404 to everything during a deploy
// then answers the probe with a 404 too, so the circuit opens and events
// wait, parked, without spending their attempts; the first 2xx probe
// releases them. A receiver that refuses only some events answers the
// probe with a 2xx, the circuit closes at once, and each such event runs
// out its own budget as a poison event (see package machine). The probe
// must therefore reach something that answers 2xx while the receiver is
// up: the kit (package receiver) answers HEAD with 204; for another
// receiver set ProbeMethod and ProbePath to a health check.
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
// and its version; and Config.Headers, under these (a configured header
// of the same name loses). No cookies are kept or sent, no redirect is followed,
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

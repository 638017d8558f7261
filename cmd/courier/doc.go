// Command courier runs courier as a service: an HTTP/JSON ingest API in
// front of the runtime, delivering each declared stream to its webhook.
//
//	courier serve [-config FILE] [-listen ADDR] [-db FILE] [-postgres DSN]
//	courier demo [-events N] [-seed S]     a real run, judged by invariants.Check
//	courier receive -secret whsec_...      a development receiver built with the kit
//
// With no flags, serve opens (or creates) ./courier.db with SQLite and
// listens on 127.0.0.1:8080. The config file (TOML; an unknown field is an
// error) declares the API tokens and, per stream, the endpoint URL, the
// signing secrets (several during a rotation), the ordering and the
// delivery policy:
//
//	api_tokens = ["a-long-random-token"]
//
//	[streams.orders]
//	url = "https://example.com/hooks/orders"
//	secrets = ["whsec_..."]
//	ordering = "independent" # or "strict" (the default)
//	window = 8
//	max_attempts = 8
//	max_age = "24h"
//	reject_statuses = [410, 422] # optional; the default is [410]
//
// # What the receiver's answer does
//
// A 2xx delivers the event. A status listed in the stream's
// reject_statuses makes it a dead letter at once (dead_reason
// "rejected"), kept to replay. Any other status (3xx, 4xx, 5xx) is a
// failure, retried with backoff until max_attempts or max_age runs out;
// its Retry-After is honoured up to max_retry_after. Redirects are never
// followed (they would escape the SSRF policy). Without reject_statuses
// only 410 Gone rejects: Standard Webhooks gives it the meaning "stop
// sending here", and retrying everything else is what receivers built
// for Svix expect, so that a receiver answering 404 or 401 during a deploy
// or a secret rotation gets its events once it is fixed instead of
// leaving dead letters to replay one by one. List the statuses by which
// your receiver means "never" (a 422 for a payload it will not accept,
// say); reject_statuses = [] retries even 410. A status outside 100..599
// or a 2xx in the list stops the start, naming the field.
//
// A retried 4xx counts toward the circuit breaker like a 5xx: after
// breaker_threshold failures in a row the stream probes (HEAD to the URL,
// or to probe_path). A receiver down for a deploy fails the probe too, so
// its events wait parked without spending attempts; one that refuses only
// some events passes the probe, and each such event spends its own
// attempts (in strict order it holds the stream meanwhile). The probe must
// be answered 2xx while the receiver is up: the receiver kit answers HEAD
// with 204; point probe_path at a health check otherwise.
//
// # API
//
// Every /v1 call needs "Authorization: Bearer TOKEN" (the scheme in any
// case, the token exactly); errors are JSON {"error": "..."} with a 4xx
// (the caller's fault, nothing changed) or 503 (try again).
//
//	POST /v1/streams/{stream}/events  {"id": "...", "payload": <JSON>}  201, or 200 for a resend
//	GET  /v1/events/{id}                                                state, attempts, last outcome, dead reason
//	GET  /v1/streams/{stream}/dead?after=SEQ&limit=N                    dead letters
//	POST /v1/events/{id}/replay                                         re-drive a dead letter
//	POST /v1/streams/{stream}/pause   and  /resume
//	GET  /healthz  /readyz  /metrics  /openapi.json                     no token
//
// The webhook platform (package platform) adds applications, their
// endpoints (URL, secrets, a filter of event types, enabled, ordering,
// rate_limit, max_in_flight, attempt_timeout, custom headers), event
// types, messages and application tokens, kept in the same
// database and used without a restart; openapi.json (served at
// /openapi.json) describes every route:
//
//	POST /v1/apps  GET /v1/apps  GET|PATCH|DELETE /v1/apps/{app}
//	POST /v1/apps/{app}/endpoints  GET .../endpoints  GET|PATCH|DELETE .../endpoints/{endpoint}  GET .../secrets
//	POST /v1/event-types  GET /v1/event-types
//	POST /v1/apps/{app}/messages  {"event_type": "...", "payload": <JSON>, "idempotency_key": "..."}  fan-out
//	GET  /v1/apps/{app}/messages?event_type=&endpoint_id=&before=&after=&cursor=  newest first, filtered
//	GET  /v1/apps/{app}/messages/{message}                              each delivery's state
//	GET  /v1/apps/{app}/messages/{message}/attempts                     its HTTP attempts, newest first
//	GET  /v1/apps/{app}/endpoints/{endpoint}/attempts                   the endpoint's, newest first
//	GET  /v1/apps/{app}/endpoints/{endpoint}/health                     last success, failing streak, disabling
//	GET  /v1/apps/{app}/endpoints/{endpoint}/deliveries?state=dead       its deliveries in a state (dead, retry, ...)
//	POST /v1/apps/{app}/endpoints/{endpoint}/replay  {"since": "..."}   bulk replay of its dead letters: a job, 202
//	GET  /v1/apps/{app}/endpoints/{endpoint}/replay/{job}               the job's progress (kept: a restart resumes it)
//	POST /v1/apps/{app}/endpoints/{endpoint}/replay/{job}/cancel        stop a running job
//	GET  /v1/apps/{app}/endpoints/{endpoint}/replays                    its jobs, newest first
//	POST /v1/apps/{app}/endpoints/{endpoint}/replay-missing  {"since": "..."}  older messages it missed, once
//	POST /v1/apps/{app}/endpoints/{endpoint}/secret/rotate              a new secret; the old signs until it expires
//	POST /v1/apps/{app}/tokens  GET .../tokens  DELETE .../tokens/{token}   application tokens (ctk_...)
//
// An application token reaches only its own application's routes (the
// table appAccess): another application's answer 404, as one that does
// not exist, and the admin routes 403.
//
// A message becomes one event per enabled endpoint whose filter matches,
// on the endpoint's stream (its ID), with the ID message.endpoint (the
// webhook-id); GET /v1/events/{id}, the dead letters of the endpoint's
// stream, replay and pause work on it as on any event. A bad input is a
// 400 whose JSON names it: {"error": "...", "field": "url"}. The config
// may declare no stream at all.
//
// An event ID names one event in the whole store, whatever its stream. A
// publish of an ID the store holds is answered by what it holds:
//
//	same stream, same payload byte for byte   200, "duplicate": true (a retry; nothing changes)
//	same stream, another payload              409 "event ID x was already accepted with a different payload"
//	another stream                            409 "event ID x belongs to another stream, y"
//
// The stored event is never changed by a resend. The payload is compared
// as sent, so the same JSON spelt with other spacing or key order is
// another payload: a producer retries with the bytes it sent first.
//
// A publish body is JSON in UTF-8, uncompressed: a Content-Encoding other
// than identity is refused with 415 (and Accept-Encoding: identity), a
// Content-Type other than application/json or application/*+json, or
// with a charset other than UTF-8, with 415; no Content-Type is taken as
// JSON. A Content-Length over max_request_bytes is refused with 413
// before any of the body is read. A key that appears twice in one
// object, at any depth of the body, payload included, is refused with
// 400 naming it (the top-level "id" and "payload" are matched ignoring
// case, as "ID" would fill "id"). A page of dead letters takes after from
// 0 to 9223372036854775807 (a Seq is a signed 64-bit number in the
// store); anything else is a 400. A known path with the wrong method is
// a 405 with Allow; an unknown path a 404.
//
// GET /ui/ is the operator page (ui.go): applications, endpoint health,
// attempts, dead letters, replay. Loading it needs no token; it asks for
// one and calls the routes above with it.
//
// A publish is answered only once the event is durable. See pauses.go for
// what a pause does when several processes share a database.
//
// # Metrics and traces
//
// /metrics serves the runtime's metrics (package courier lists them)
// in Prometheus form, with courier_api_requests_total counting API
// requests by method, route pattern (never the raw path) and status code.
// Every metric and span carries service.name "courier" (and
// service.version in a released build); OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override it. The stream label is bounded:
//
//	[metrics]
//	stream_labels = 100 # the declared streams, by name, get theirs first; the rest are "other"
//
// Traces are off unless the standard variables ask for them:
// OTEL_TRACES_EXPORTER (otlp, console, none) or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), with
// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by default, or grpc),
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_TRACES_SAMPLER as usual. Each API
// request has a server span that continues the caller's traceparent;
// a publish and each attempt have theirs, joined by the event's ID
// (courier.event.id). The webhooks carry no trace context.
//
// # Signals
//
// SIGTERM or SIGINT: stop accepting, let attempts in flight finish for up
// to shutdown_timeout, release the leases, exit 0. A second signal exits
// at once.
package main

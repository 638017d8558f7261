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
//
// # API
//
// Every /v1 call needs "Authorization: Bearer TOKEN"; errors are JSON
// {"error": "..."} with a 4xx (the caller's fault, nothing changed) or 503
// (try again).
//
//	POST /v1/streams/{stream}/events  {"id": "...", "payload": <JSON>}  201, or 200 for a resend
//	GET  /v1/events/{id}                                                state, attempts, last outcome, dead reason
//	GET  /v1/streams/{stream}/dead?after=SEQ&limit=N                    dead letters
//	POST /v1/events/{id}/replay                                         re-drive a dead letter
//	POST /v1/streams/{stream}/pause   and  /resume
//	GET  /healthz  /readyz  /metrics                                    no token
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

// Package platform is courier as a webhook platform: applications
// (tenants), their endpoints and the event types they subscribe to, kept
// in a store and changed by API while courier runs, and messages fanned
// out to the endpoints that want them.
//
// It is a room above the delivery engine. A message published to an
// application becomes one delivery per enabled endpoint whose filter
// matches its event type; each delivery is one event of the delivery
// store (store.Store), on the endpoint's own stream (StreamOf: the
// endpoint's ID), with a stable ID (DeliveryID: the message's ID and the
// endpoint's), so a webhook-id stays the same across attempts. From there
// the worker delivers it as it delivers any event.
//
// # Fan-out and crashes
//
// The delivery store enqueues one event per call; it cannot enqueue a
// message's deliveries on several streams in one transaction. So a
// publish happens in two steps, each durable on its own:
//
//  1. Store.CreateMessage records the message and its fan-out list (one
//     entry per chosen endpoint, each Pending) in one transaction of the
//     platform store. The list is decided then: an endpoint created,
//     disabled or refiltered later does not change it, but for an entry
//     added on request by Store.AddMissing (below).
//  2. Each pending entry is enqueued in the delivery store (idempotent by
//     its delivery ID), then marked Enqueued (Store.SetFanout).
//
// A crash between the two steps, or between an enqueue and its mark,
// leaves entries Pending. Service.Redrive, run when the Service starts
// and every Config.RedriveEvery after, finds every message with a
// pending entry (Store.Unfinished) and does step 2 again: an entry
// already enqueued is a duplicate there and changes nothing, so no
// delivery is lost and none is doubled. Publishing again with the same
// idempotency key re-drives the message too.
//
// Publish answers once step 1 is durable and step 2 has been tried for
// every entry. Message.Complete says whether every entry is enqueued; if
// not, the message is durable and the re-drive finishes it.
//
// Store.ListMessages lists an application's messages newest first, a
// page at a time, with their fan-out, filtered by a MessageFilter: an
// event type and creation-time bounds.
//
// An endpoint created after a message was published does not receive it
// unasked. Service.ReplayMissing sends it, on request, every message
// since an instant that its filter takes and that it has no entry of
// (Svix's "replay missing"): Store.AddMissing adds the missing entries
// to the messages' fan-out lists, Pending, a page per transaction, and
// step 2 enqueues them as it does a publish's, so a delivery's identity
// stays (message, endpoint) and a crash between the steps is re-driven
// the same way. A message with an entry for the endpoint is left alone,
// so asking twice adds nothing. Replaying an endpoint's dead letters in
// bulk (Svix's "recover") replays events of the delivery store, a page at
// a time (ReplayDeadPage, choosing by Chosen): courier serve runs it as a
// job (POST /v1/apps/{app}/endpoints/{endpoint}/replay), kept in the
// store (ReplayJobStore: its cursor, counts and claim, so that a restart
// resumes it, through ResumeDeadPage), the simulator's operator as an
// action.
//
// StreamPolicy is the Policy of an endpoint's stream, as courier serve's
// workers and the simulator's ask it: the endpoint's ordering, rate limit
// and retry policy (EndpointPolicy), ErrDisabled while it is disabled.
//
// # Rate limit, attempts in flight and attempt timeout
//
// Endpoint.RateLimit is the most attempts per second the endpoint's
// stream starts (0: no limit), and Endpoint.MaxInFlight the most it has
// in flight at once (0: the ordering's default). The platform only keeps
// them: the runtime gives the endpoint's stream StreamPolicy, a
// machine.Config with RateLimit per RatePer of one second and
// MaxInFlight as its Window, and
// the machine holds back the starts beyond them (see "Rate limit" in
// package machine). Endpoint.AttemptTimeout (1 s to 5 min, 0 for 30 s)
// is the same policy's AttemptTimeout, and bounds the HTTP attempt.
//
// # Retry and status policy
//
// Endpoint.MaxAttempts, BaseBackoff and MaxBackoff are the retry policy
// of the endpoint's stream, and Endpoint.RejectStatuses the HTTP
// statuses that make a delivery a dead letter at once. Each rule stays
// where it is enforced: StreamPolicy builds the stream's machine.Config
// (the machine counts attempts and computes backoff), StatusPolicy the
// HTTP channel's httpchannel.StatusPolicy (the channel classifies an
// answer: a 2xx delivered, a listed status rejected, any other retried).
// The platform keeps the values and checks their bounds.
//
// # Attempt log and endpoint health
//
// Every HTTP attempt to an endpoint can be kept (Attempt: status,
// duration, outcome, the first bytes of the receiver's answer) and
// listed per message or per endpoint, newest first
// (Store.ListMessageAttempts, Store.ListEndpointAttempts), until a
// retention prunes it (Store.DeleteAttemptsBefore). Recording an
// attempt also notes it in the endpoint's EndpointHealth, in the same
// transaction: the last success, and the failing streak since.
//
// A Recorder does this off the delivery path: the sender hands it each
// attempt (Recorder.Record never blocks; a full queue drops the attempt
// and counts it), and Recorder.Run writes them, then disables an
// endpoint whose health says so (DisableReason: a 410 Gone at once,
// "gone"; failing with no success for RecorderConfig.DisableAfter,
// default 5 days as Svix, "failing") through Store.DisableEndpoint, which
// is the Enabled=false of an update, so the endpoint is left out of
// fan-out and its stream waits. Enabling it again by UpdateEndpoint
// clears its failing streak. Recorder.Write is one attempt's write, which
// Run calls and the simulator calls synchronously (sim.Platform's
// DisableAfter), so both run the same health code.
//
// # Custom headers
//
// Endpoint.Headers are set on every request to the endpoint, under the
// sender's own (which win). CheckHeaders bounds them and refuses the
// names courier or the transport set (ReservedHeader).
//
// # Secret rotation
//
// Rotate gives an endpoint a new secret and keeps its current ones as
// OldSecrets, each signing until its expiry (DefaultOldSecretFor unless
// asked, MaxOldSecretFor at most): SigningSecrets is the set that signs
// at an instant, and when it next changes, so a sender rebuilds its
// channel then.
//
// # Application tokens
//
// An AppToken lets its holder reach one application's routes (the API
// decides which). The store keeps HashToken of the token, never the
// token (NewToken, "ctk_..."), and finds it by that hash
// (Store.TokenByHash); deleting the application deletes its tokens.
//
// # Stores
//
// Store is the contract; platformtest is its conformance suite. platmem
// keeps everything in memory, platsqlite and platpg keep it in the same
// SQLite file or PostgreSQL schema as the delivery store, in tables of
// their own (platform_*) migrated by their own steps (platform_schema),
// sharing their SQL in platform/internal/platsql.
//
// Names and IDs: an application's ID is "app_" and 26 lower-case base32
// characters, an endpoint's "ep_", a message's "msg_" and a token's
// "tok_" likewise (NewID);
// the first ten characters encode the creation time in milliseconds, so
// ID order is creation order, to the millisecond.
package platform

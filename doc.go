// Package courier runs courier in production: a Service is the thin shell
// of goroutines, timers and telemetry around the one worker (package
// worker) that the simulator also drives.
//
// It lives at the module's root because it is what an application
// imports: courier.New, Service.Run, Service.Publish. The parts it is
// made of are packages of their own, so a program that only needs one of
// them (a producer that only enqueues, a port of the machine) pays for
// nothing else: machine (the pure core), worker (the step-by-step
// worker), store (the contract) and its backends, channel (the seam to
// the transports).
//
// # Using it
//
//	svc, err := courier.New(courier.Config{
//		Worker: worker.Config{
//			Owner:      "host-1/" + strconv.Itoa(os.Getpid()),
//			Store:      st, // a store.Store: memstore, or a durable backend
//			Policy:     func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
//			MaxStreams: 256,
//			LeaseTTL:   30 * time.Second,
//			Poll:       time.Second,
//		},
//		Channel: ch, // a channel.Channel: the HTTP webhook channel, say
//	})
//	go svc.Run(ctx) // returns after a graceful shutdown once ctx ends
//	_, err = svc.Publish(ctx, "orders", "order-42:created", body) // durable once it returns nil
//
// examples/quickstart is a complete program.
//
// # What runs where
//
// One goroutine, the loop, owns the worker and so every machine: it makes
// the store calls, steps the machines and sleeps until the worker's Next,
// a reply or a local Publish. Each send and probe runs on a goroutine of
// its own, under a bound shared by all streams (MaxInFlight), within the
// attempt's timeout, and hands its outcome back to the loop. A send is
// never started at or after the lease's end by this worker's clock; see
// package worker for the bound this gives receivers.
//
// # Shutting down
//
// When Run's context ends, the Service claims and starts nothing more,
// lets the attempts in flight finish for up to ShutdownTimeout (their
// outcomes are persisted), cancels what is left, releases its leases and
// returns. No goroutine it started outlives Run.
//
// # Observability
//
// Logs go to a log/slog Logger; metrics and spans go to OpenTelemetry
// (the meter and tracer are named "github.com/courierlab/courier"):
//
//	courier.attempt.duration   histogram  seconds the channel took over an attempt, by outcome and stream (5ms to 60s buckets)
//	courier.deliveries         counter    attempt outcomes, by outcome and stream
//	courier.attempts           counter    attempts started, by stream
//	courier.publishes          counter    Publish calls, by result (accepted, duplicate, refused, failed) and stream
//	courier.events.settled     counter    events delivered or dead, by state, reason and stream
//	courier.events.queued      gauge      events not yet settled, per owned stream
//	courier.events.in_flight   gauge      attempts awaiting an outcome, per owned stream
//	courier.circuit.state      gauge      0 closed, 1 checking, 2 open, per owned stream (the worst of "other")
//	courier.streams.owned      gauge      streams this worker holds
//	courier.backlog.events     gauge      events not yet delivered or dead in the whole store
//	courier.backlog.oldest_age gauge      seconds the longest-waiting of them has waited, by the store's clock
//	courier.leases             counter    granted, lost, released
//	courier.store.errors       counter    failed store calls, by operation
//
// The stream label is bounded (Metrics.StreamLabels, 100 by default):
// the streams of Metrics.Streams, then the first this process meets, get
// their name; the others are labelled "other". The backlog gauges read
// the whole store, every worker's streams, when the Store is a
// store.StatsReader (memstore, sqlitestore and pgstore are), at each
// collection within Metrics.StatsTimeout; while that call fails they
// record nothing and one warning is logged.
//
// Each Publish has a span (courier.publish, a child of the caller's
// context) and each attempt one (courier.attempt); both carry the
// event's ID as courier.event.id, which is what joins them: the attempt
// runs later, maybe in another process, and the store keeps no trace
// context with an event, so the attempt span has no link to the publish.
// No trace context is sent to the receiver.
//
// No payload, and no secret, is ever written to a log line, a metric label
// or a span: they carry stream names, event IDs, sequence and attempt
// numbers, states, outcomes, status codes and the channel's bounded
// operator detail.
package courier

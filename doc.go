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
// Logs go to a log/slog Logger; metrics and one span per attempt go to
// OpenTelemetry (the meter and tracer are named
// "github.com/courierlab/courier"):
//
//	courier.deliveries       counter  attempt outcomes, by outcome
//	courier.attempts         counter  attempts started
//	courier.events.settled   counter  events delivered or dead, by state and reason
//	courier.events.queued    gauge    events not yet settled, per owned stream
//	courier.events.in_flight gauge    attempts awaiting an outcome, per owned stream
//	courier.circuit.state    gauge    0 closed, 1 checking, 2 open, per owned stream
//	courier.streams.owned    gauge    streams this worker holds
//	courier.leases           counter  granted, lost, released
//	courier.store.errors     counter  failed store calls, by operation
//
// No payload, and no secret, is ever written to a log line, a metric label
// or a span: they carry stream names, event IDs, sequence and attempt
// numbers, states, outcomes, status codes and the channel's bounded
// operator detail.
package courier

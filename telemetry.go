package courier

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
)

// instrumentation is the name the meter and the tracer carry.
const instrumentation = "github.com/courierlab/courier"

// telemetry turns the worker's events into logs, metrics and spans. It
// sees payloads (Persisted carries records) and never emits one: logs,
// labels and span attributes carry stream names, IDs, sequence numbers,
// attempt numbers, states, outcomes, status codes and the channel's
// bounded operator detail, nothing else.
type telemetry struct {
	log    *slog.Logger
	tracer trace.Tracer
	next   worker.Observer

	streams *streamLabels

	deliveries, attempts, settled, leases, storeErrors, publishes metric.Int64Counter
	attemptDuration                                               metric.Float64Histogram

	mu    sync.Mutex
	snaps [][]worker.Status // each worker's latest status, by shard

	// paused holds, per stream whose takeover a pause refused, when it
	// was last refused. Only Observe, which the Service calls one event
	// at a time, touches it.
	paused map[string]time.Time
}

// attemptBuckets are the attempt-duration histogram's bounds, in
// seconds: from a receiver on the same network (5ms) to the longest
// attempt timeout worth waiting for (60s).
var attemptBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// pauseQuiet is how long after a stream's last refused takeover another
// refusal is the same pause, not logged again. Refusals come every poll
// while the stream waits; a longer gap means it was away (resumed and
// taken by another worker, or this one had no room to claim it).
const pauseQuiet = time.Minute

// newTelemetry builds the instruments from cfg, whose defaults are set.
func newTelemetry(cfg Config) (*telemetry, error) {
	mc, err := cfg.Metrics.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &telemetry{log: cfg.Logger, tracer: cfg.TracerProvider.Tracer(instrumentation), next: cfg.Worker.Observer,
		streams: newStreamLabels(mc), paused: map[string]time.Time{}, snaps: make([][]worker.Status, cfg.Workers)}
	m := cfg.MeterProvider.Meter(instrumentation)
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, e := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err == nil {
			err = e
		}
		return c
	}
	t.deliveries = counter("courier.deliveries", "{reply}", "Outcomes of attempts that reached their machine, by outcome and stream.")
	t.attempts = counter("courier.attempts", "{attempt}", "Attempts started (persisted and handed to the channel), by stream.")
	t.settled = counter("courier.events.settled", "{event}", "Events that reached a terminal state, by state, dead reason and stream.")
	t.leases = counter("courier.leases", "{lease}", "Lease events: granted, lost, released.")
	t.storeErrors = counter("courier.store.errors", "{error}", "Failed store calls, by operation.")
	t.publishes = counter("courier.publishes", "{event}", "Publish calls, by result (accepted, duplicate, refused, failed) and stream.")
	if err != nil {
		return nil, err
	}
	t.attemptDuration, err = m.Float64Histogram("courier.attempt.duration", metric.WithUnit("s"),
		metric.WithDescription("How long the channel took over an attempt, by outcome and stream."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...))
	if err != nil {
		return nil, err
	}
	if sr, ok := cfg.Worker.Store.(store.StatsReader); ok {
		b := &backlog{st: sr, timeout: mc.StatsTimeout, log: t.log, errs: t.storeErrors}
		if err := registerBacklog(m, b); err != nil {
			return nil, err
		}
	}
	queued, err := m.Int64ObservableGauge("courier.events.queued", metric.WithUnit("{event}"),
		metric.WithDescription("Events not yet delivered or dead, per owned stream."))
	if err != nil {
		return nil, err
	}
	inFlight, err := m.Int64ObservableGauge("courier.events.in_flight", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts awaiting an outcome, per owned stream."))
	if err != nil {
		return nil, err
	}
	circuit, err := m.Int64ObservableGauge("courier.circuit.state",
		metric.WithDescription("Circuit state per owned stream: 0 closed, 1 checking, 2 open."))
	if err != nil {
		return nil, err
	}
	owned, err := m.Int64ObservableGauge("courier.streams.owned", metric.WithUnit("{stream}"),
		metric.WithDescription("Streams this worker holds a lease on."))
	if err != nil {
		return nil, err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		n := 0
		for _, snap := range t.snaps {
			n += len(snap)
		}
		o.ObserveInt64(owned, int64(n))
		for label, g := range t.foldStreams() {
			attrs := metric.WithAttributes(attribute.String("stream", label))
			o.ObserveInt64(queued, g.queued, attrs)
			o.ObserveInt64(inFlight, g.inFlight, attrs)
			o.ObserveInt64(circuit, g.circuit, attrs)
		}
		return nil
	}, queued, inFlight, circuit, owned)
	return t, err
}

// streamGauges are the per-stream gauges of one stream label.
type streamGauges struct{ queued, inFlight, circuit int64 }

// foldStreams sums the snapshot by stream label: the streams folded into
// "other" add up their queues and flights, and show the worst circuit.
// t.mu is held.
func (t *telemetry) foldStreams() map[string]streamGauges {
	out := map[string]streamGauges{}
	for _, snap := range t.snaps {
		for _, s := range snap {
			label := t.streams.of(s.Stream)
			g := out[label]
			g.queued += int64(s.Queued)
			g.inFlight += int64(s.InFlight)
			g.circuit = max(g.circuit, circuitValue(s.Circuit))
			out[label] = g
		}
	}
	return out
}

func circuitValue(c machine.Circuit) int64 {
	switch c {
	case machine.Checking:
		return 1
	case machine.Open:
		return 2
	}
	return 0
}

// snapshot copies shard k's worker's stream status for the gauges; a
// worker is only touched from its loop, so the gauges read this copy.
func (t *telemetry) snapshot(k int, w *worker.Worker) {
	s := w.Streams()
	t.mu.Lock()
	t.snaps[k] = s
	t.mu.Unlock()
}

// Observe implements worker.Observer.
func (t *telemetry) Observe(e worker.Event) {
	ctx := context.Background()
	stream := slog.String("stream", e.Stream)
	switch e.Kind {
	case worker.LeaseGranted:
		t.leases.Add(ctx, 1, metric.WithAttributes(attribute.String("event", "granted")))
		// DEBUG: a grant a pause refuses at every poll is no news; a
		// takeover shows at INFO as its machine's rebuild.
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: lease granted", stream, slog.Uint64("token", e.Token))
	case worker.LeaseLost:
		t.leases.Add(ctx, 1, metric.WithAttributes(attribute.String("event", "lost")))
		if errors.Is(e.Err, store.ErrReplayed) {
			t.log.LogAttrs(ctx, slog.LevelInfo, "courier: an operator's replay took the stream", stream, slog.Uint64("token", e.Token))
			break
		}
		t.log.LogAttrs(ctx, slog.LevelWarn, "courier: lease lost", stream, slog.Uint64("token", e.Token), slog.String("why", e.Detail))
	case worker.LeaseReleased:
		t.leases.Add(ctx, 1, metric.WithAttributes(attribute.String("event", "released")))
		t.log.LogAttrs(ctx, slog.LevelInfo, "courier: lease released", stream, slog.Uint64("token", e.Token), slog.String("why", e.Detail))
	case worker.LeaseRenewed:
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: lease renewed", stream, slog.Uint64("token", e.Token))
	case worker.Rebuilt:
		if _, ok := t.paused[e.Stream]; ok {
			delete(t.paused, e.Stream)
			t.log.LogAttrs(ctx, slog.LevelInfo, "courier: stream resumed", stream)
		}
		t.log.LogAttrs(ctx, slog.LevelInfo, "courier: machine rebuilt from the store", stream, slog.Uint64("token", e.Token),
			slog.Int("records", len(e.Records)), slog.String("circuit", e.Circuit.String()))
	case worker.Persisted:
		t.persisted(ctx, e)
	case worker.CircuitChanged:
		level := slog.LevelInfo
		if e.Circuit != machine.Closed {
			level = slog.LevelWarn
		}
		t.log.LogAttrs(ctx, level, "courier: circuit changed", stream, slog.String("circuit", e.Circuit.String()))
	case worker.Sent:
		t.attempts.Add(ctx, 1, metric.WithAttributes(t.streams.attr(e.Stream)))
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: attempt started", stream,
			slog.String("id", e.ID), slog.Uint64("seq", e.Seq), slog.Int("attempt", e.Attempt))
	case worker.Probed:
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: probe started", stream, slog.String("probe", e.Detail))
	case worker.Replied:
		t.deliveries.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", e.Outcome.Result.String()), t.streams.attr(e.Stream)))
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: attempt outcome", stream,
			slog.String("id", e.ID), slog.Int("attempt", e.Attempt), slog.String("outcome", e.Outcome.Result.String()),
			slog.Int("status", e.Outcome.Status), slog.String("detail", e.Outcome.Detail))
	case worker.ReplyDropped:
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: reply dropped", stream, slog.String("id", e.ID), slog.Int("attempt", e.Attempt))
	case worker.StoreFailed:
		t.storeFailed(ctx, e.Op, e.Err)
	case worker.Purged:
		t.log.LogAttrs(ctx, slog.LevelInfo, "courier: settled records deleted past the retention", slog.Int("records", e.Count))
	case worker.Faulted:
		if errors.Is(e.Err, ErrPaused) {
			t.refused(ctx, e)
			break
		}
		if errors.Is(e.Err, worker.ErrPolicyChanged) { // an operator's change (an endpoint's limits), no fault
			t.log.LogAttrs(ctx, slog.LevelInfo, "courier: stream's policy changed; giving it back to rebuild its machine", stream)
			break
		}
		t.log.LogAttrs(ctx, slog.LevelError, "courier: worker fault", stream, slog.String("error", e.Err.Error()))
	}
	if t.next != nil {
		t.next.Observe(e)
	}
}

// refused logs a takeover that a pause refused: at INFO when the pause
// takes effect, at DEBUG while it lasts. An operator's action is no fault.
func (t *telemetry) refused(ctx context.Context, e worker.Event) {
	level := slog.LevelDebug
	if last, ok := t.paused[e.Stream]; !ok || e.At.Sub(last) > pauseQuiet {
		level = slog.LevelInfo
	}
	t.paused[e.Stream] = e.At
	t.log.LogAttrs(ctx, level, "courier: stream paused by operator", slog.String("stream", e.Stream))
}

func (t *telemetry) persisted(ctx context.Context, e worker.Event) {
	for _, r := range e.Records {
		if !r.State.Terminal() {
			continue
		}
		t.settled.Add(ctx, 1, metric.WithAttributes(attribute.String("state", r.State.String()), attribute.String("reason", r.Reason.String()),
			t.streams.attr(e.Stream)))
		level := slog.LevelDebug
		if r.State == machine.Dead {
			level = slog.LevelWarn
		}
		t.log.LogAttrs(ctx, level, "courier: event settled", slog.String("stream", e.Stream), slog.String("id", r.ID),
			slog.Uint64("seq", r.Seq), slog.String("state", r.State.String()), slog.String("reason", r.Reason.String()),
			slog.Int("attempts", r.Attempts))
	}
}

func (t *telemetry) storeFailed(ctx context.Context, op string, err error) {
	t.storeErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
	t.log.LogAttrs(ctx, slog.LevelWarn, "courier: store call failed", slog.String("op", op), slog.String("error", err.Error()))
}

func (t *telemetry) notSent(ctx context.Context, x worker.Send) {
	t.log.LogAttrs(ctx, slog.LevelWarn, "courier: attempt not sent: the lease may have run out by this worker's clock",
		slog.String("stream", x.Stream), slog.String("id", x.ID), slog.Int("attempt", x.Attempt.Attempt))
}

// attempt is one attempt's span and start, from startAttempt to
// endAttempt.
type attempt struct {
	span   trace.Span
	start  time.Time
	stream string
}

// startAttempt opens the span of one attempt and starts its clock. The
// span carries the event's ID, as the publish span does: the store keeps
// no trace context with an event, so the ID is what joins an event's
// publish to its attempts, which may run in another process, later.
func (t *telemetry) startAttempt(ctx context.Context, x worker.Send) (context.Context, attempt) {
	ctx, span := t.tracer.Start(ctx, "courier.attempt", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("courier.stream", x.Stream),
		attribute.String("courier.event.id", x.ID),
		attribute.Int64("courier.event.seq", int64(x.Seq)),
		attribute.Int("courier.attempt", x.Attempt.Attempt),
		attribute.Int64("courier.lease.token", int64(x.Token)),
	))
	return ctx, attempt{span: span, start: time.Now(), stream: x.Stream}
}

// endAttempt records the attempt's duration and closes its span with the
// outcome.
func (t *telemetry) endAttempt(ctx context.Context, a attempt, out channel.Outcome) {
	t.attemptDuration.Record(ctx, time.Since(a.start).Seconds(), metric.WithAttributes(
		attribute.String("outcome", out.Result.String()), t.streams.attr(a.stream)))
	a.span.SetAttributes(attribute.String("courier.outcome", out.Result.String()))
	if out.Status != 0 {
		a.span.SetAttributes(attribute.Int("http.response.status_code", out.Status))
	}
	if out.Result != machine.OutcomeDelivered {
		a.span.SetStatus(codes.Error, out.Detail)
	}
	a.span.End()
}

// What a Publish call came to, as the publishes counter labels it.
const (
	publishAccepted  = "accepted"  // stored: a new event
	publishDuplicate = "duplicate" // its ID was stored already; nothing changed
	publishRefused   = "refused"   // the channel's Check refused it; nothing stored
	publishFailed    = "failed"    // the store failed; it may or may not be stored
)

// startPublish opens the span of one Publish call, a child of the
// caller's (the API request's, in courier serve).
func (t *telemetry) startPublish(ctx context.Context, stream, id string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "courier.publish", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attribute.String("courier.stream", stream),
		attribute.String("courier.event.id", id),
	))
}

// endPublish counts the call by result and closes its span. err is the
// error Publish returns (it names the stream and ID, never the payload).
func (t *telemetry) endPublish(ctx context.Context, span trace.Span, stream, result string, seq uint64, err error) {
	t.publishes.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result), t.streams.attr(stream)))
	span.SetAttributes(attribute.String("courier.publish.result", result))
	if seq != 0 {
		span.SetAttributes(attribute.Int64("courier.event.seq", int64(seq)))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

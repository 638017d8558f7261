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

	deliveries, attempts, settled, leases, storeErrors metric.Int64Counter

	mu     sync.Mutex
	snap   []worker.Status
	snapAt time.Time

	// paused holds, per stream whose takeover a pause refused, when it
	// was last refused. Only Observe, on the loop, touches it.
	paused map[string]time.Time
}

// pauseQuiet is how long after a stream's last refused takeover another
// refusal is the same pause, not logged again. Refusals come every poll
// while the stream waits; a longer gap means it was away (resumed and
// taken by another worker, or this one had no room to claim it).
const pauseQuiet = time.Minute

func newTelemetry(log *slog.Logger, mp metric.MeterProvider, tp trace.TracerProvider, next worker.Observer) (*telemetry, error) {
	t := &telemetry{log: log, tracer: tp.Tracer(instrumentation), next: next, paused: map[string]time.Time{}}
	m := mp.Meter(instrumentation)
	var err error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, e := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err == nil {
			err = e
		}
		return c
	}
	t.deliveries = counter("courier.deliveries", "{reply}", "Outcomes of attempts that reached their machine, by outcome.")
	t.attempts = counter("courier.attempts", "{attempt}", "Attempts started (persisted and handed to the channel).")
	t.settled = counter("courier.events.settled", "{event}", "Events that reached a terminal state, by state and dead reason.")
	t.leases = counter("courier.leases", "{lease}", "Lease events: granted, lost, released.")
	t.storeErrors = counter("courier.store.errors", "{error}", "Failed store calls, by operation.")
	if err != nil {
		return nil, err
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
		o.ObserveInt64(owned, int64(len(t.snap)))
		for _, s := range t.snap {
			attrs := metric.WithAttributes(attribute.String("stream", s.Stream))
			o.ObserveInt64(queued, int64(s.Queued), attrs)
			o.ObserveInt64(inFlight, int64(s.InFlight), attrs)
			o.ObserveInt64(circuit, circuitValue(s.Circuit), attrs)
		}
		return nil
	}, queued, inFlight, circuit, owned)
	return t, err
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

// snapshot copies the worker's stream status for the gauges; the worker
// is only touched from the loop, so the gauges read this copy.
func (t *telemetry) snapshot(w *worker.Worker) {
	s := w.Streams()
	t.mu.Lock()
	t.snap = s
	t.mu.Unlock()
}

// snapshotEvery refreshes the snapshot at most once a second.
func (t *telemetry) snapshotEvery(w *worker.Worker, now time.Time) {
	if now.Sub(t.snapAt) < time.Second {
		return
	}
	t.snapAt = now
	t.snapshot(w)
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
		t.attempts.Add(ctx, 1)
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: attempt started", stream,
			slog.String("id", e.ID), slog.Uint64("seq", e.Seq), slog.Int("attempt", e.Attempt))
	case worker.Probed:
		t.log.LogAttrs(ctx, slog.LevelDebug, "courier: probe started", stream, slog.String("probe", e.Detail))
	case worker.Replied:
		t.deliveries.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", e.Outcome.Result.String())))
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
		t.settled.Add(ctx, 1, metric.WithAttributes(attribute.String("state", r.State.String()), attribute.String("reason", r.Reason.String())))
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

// startAttempt opens the span of one attempt.
func (t *telemetry) startAttempt(ctx context.Context, x worker.Send) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "courier.attempt", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("courier.stream", x.Stream),
		attribute.String("courier.event.id", x.ID),
		attribute.Int64("courier.event.seq", int64(x.Seq)),
		attribute.Int("courier.attempt", x.Attempt.Attempt),
		attribute.Int64("courier.lease.token", int64(x.Token)),
	))
}

// endAttempt closes it with the outcome.
func (t *telemetry) endAttempt(span trace.Span, out channel.Outcome) {
	span.SetAttributes(attribute.String("courier.outcome", out.Result.String()))
	if out.Status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", out.Status))
	}
	if out.Result != machine.OutcomeDelivered {
		span.SetStatus(codes.Error, out.Detail)
	}
	span.End()
}

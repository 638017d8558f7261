// Tests that the shell's logs, metrics and spans report what happened
// (deliveries by outcome, attempts, settled events, circuit state per
// stream, leases, store errors, a span per attempt and per publish), read through the
// OpenTelemetry SDK's ManualReader and SpanRecorder, and that no payload
// reaches any of them: a recognisable payload is planted and every log
// line, metric and span is scanned for it.
package courier_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

// planted is in every payload; it must appear nowhere but the receiver.
const planted = "PLANTED-PAYLOAD-7c1e55e"

func TestTelemetryReportsAndNeverLeaksPayloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := &faults{
			rnd:        rand.New(rand.NewPCG(7, 7)),
			end:        start.Add(time.Minute),
			outages:    []window{{start, start.Add(30 * time.Second)}},
			storeDown:  []window{{start.Add(40 * time.Second), start.Add(45 * time.Second)}},
			maxLatency: 50 * time.Millisecond,
		}
		rec := &recorder{}
		st := newFaultStore(rec, f)
		ch := newFakeChannel(rec, f, st, true)

		var logs bytes.Buffer
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		pol := shellPolicy(machine.Strict)
		svc, err := courier.New(courier.Config{
			Worker: worker.Config{
				Owner: "w1", Store: st, MaxStreams: 4, LeaseTTL: shellLeaseTTL, Poll: shellPoll,
				Policy: func(string) (machine.Config, error) { return pol, nil },
			},
			Channel:        ch,
			Logger:         slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			MeterProvider:  mp,
			TracerProvider: tp,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = svc.Run(ctx) }()

		const events = 10
		for i := range events {
			payload := fmt.Appendf(nil, `{"card":%q,"n":%d}`, planted, i)
			if _, err := svc.Publish(ctx, "orders", fmt.Sprintf("order-%d", i), payload); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Second) // in the outage: the circuit is open
		var mid metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &mid); err != nil {
			t.Fatal(err)
		}
		if got := gauge(mid, "courier.circuit.state", "stream", "orders"); got != 2 {
			t.Errorf("circuit gauge for the stream is %d during the outage, want 2 (open)", got)
		}
		if got := gauge(mid, "courier.events.queued", "stream", "orders"); got != events {
			t.Errorf("queued gauge is %d during the outage, want %d", got, events)
		}
		for !settled(st.Store, []string{"orders"}) {
			time.Sleep(time.Second)
		}
		// An event published while the store refuses writes fails, and
		// says so in the store-error metric.
		time.Sleep(time.Until(start.Add(41 * time.Second)))
		if _, err := svc.Publish(ctx, "orders", "late", []byte(planted)); err == nil {
			t.Error("a publish while the store is down succeeded")
		}
		cancel()
		await(t, "Run after its context ended", done, runLimit)

		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		checks := []struct {
			name, key, value string
			atLeast          int64
		}{
			{"courier.deliveries", "outcome", "delivered", events},
			{"courier.deliveries", "outcome", "failed", 1},
			{"courier.attempts", "", "", events + 1},
			{"courier.events.settled", "state", "delivered", events},
			{"courier.leases", "event", "granted", 1},
			{"courier.leases", "event", "released", 1},
			{"courier.store.errors", "op", "Enqueue", 1},
		}
		for _, c := range checks {
			if got := sum(rm, c.name, c.key, c.value); got < c.atLeast {
				t.Errorf("%s{%s=%s} = %d, want at least %d", c.name, c.key, c.value, got, c.atLeast)
			}
		}
		delivered, attemptSpans, publishSpans := 0, 0, 0
		for _, s := range spans.Ended() {
			switch s.Name() {
			case "courier.attempt":
				attemptSpans++
			case "courier.publish":
				publishSpans++
			default:
				t.Errorf("unexpected span %q", s.Name())
			}
			for _, a := range s.Attributes() {
				if a.Key == "courier.outcome" && a.Value.AsString() == "delivered" {
					delivered++
				}
			}
		}
		if delivered < events {
			t.Errorf("%d spans say delivered, want at least %d", delivered, events)
		}
		if got, want := int64(attemptSpans), sum(rm, "courier.attempts", "", ""); got != want || got == 0 {
			t.Errorf("%d attempt spans for %d attempts", got, want)
		}
		if publishSpans != events+1 {
			t.Errorf("%d publish spans for %d publishes", publishSpans, events+1)
		}

		// The scan: every log line, every metric with its labels, every
		// span with its attributes, events and status.
		var all strings.Builder
		all.Write(logs.Bytes())
		fmt.Fprintf(&all, "%+v\n%+v\n", mid, rm)
		for _, s := range spans.Ended() {
			fmt.Fprintf(&all, "%s %v %v %+v %+v\n", s.Name(), s.Attributes(), s.Events(), s.Status(), s.Links())
		}
		text := all.String()
		if !strings.Contains(text, "order-3") || !strings.Contains(text, "courier.deliveries") {
			t.Fatal("the scan sees neither event IDs nor metrics: it would prove nothing")
		}
		if strings.Contains(text, planted) {
			i := strings.Index(text, planted)
			t.Errorf("the payload leaked into the telemetry: ...%s...", text[max(0, i-200):min(len(text), i+50)])
		}
	})
}

// sum adds up an Int64 counter's points whose attribute key has value
// (every point when key is empty).
func sum(rm metricdata.ResourceMetrics, name, key, value string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					if v, ok := p.Attributes.Value(attrKey(key)); key == "" || ok && v.AsString() == value {
						n += p.Value
					}
				}
			}
		}
	}
	return n
}

// gauge reads an Int64 gauge's point whose attribute key has value; -1 if
// there is none.
func gauge(rm metricdata.ResourceMetrics, name, key, value string) int64 {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
				for _, p := range g.DataPoints {
					if v, ok := p.Attributes.Value(attrKey(key)); ok && v.AsString() == value {
						return p.Value
					}
				}
			}
		}
	}
	return -1
}

func attrKey(k string) attribute.Key { return attribute.Key(k) }

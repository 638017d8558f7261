// Tests the metrics and spans of a real run, read through the
// OpenTelemetry SDK's ManualReader and SpanRecorder: a Service on a real
// SQLite file publishes to three streams and delivers over a channel that
// takes a known time, while another stream of the same file is leased by
// another worker. The attempt histogram counts every attempt in seconds,
// the publish counter counts by result, the stream label stops at its
// bound, the backlog gauges read the whole store (the other worker's
// stream included), and every attempt has a span carrying its event's ID,
// as its publish span does. Then the backlog gauges on a failing store:
// nothing recorded, one warning. And the per-stream gauges of the
// streams beyond the label bound add up under "other".
package courier_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

// timedChannel delivers everything after delay, and refuses at Check any
// payload that says "refuse".
type timedChannel struct{ delay time.Duration }

func (c timedChannel) Send(ctx context.Context, _ channel.Attempt) channel.Outcome {
	select {
	case <-time.After(c.delay):
		return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
	case <-ctx.Done():
		return channel.Outcome{Result: machine.OutcomeTimedOut}
	}
}

func (timedChannel) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (timedChannel) Check(_, _ string, payload []byte) error {
	if string(payload) == "refuse" {
		return errors.New("the test refuses it")
	}
	return nil
}

func TestMetricsAndSpansOfARealRun(t *testing.T) {
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "courier.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// Another worker's stream: its three events stay in the backlog.
	before := time.Now()
	for i := range 3 {
		if _, _, err := st.Enqueue(ctx, "elsewhere", fmt.Sprintf("x%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now()
	if _, err := st.Acquire(ctx, "elsewhere", "another-worker", time.Hour); err != nil {
		t.Fatal(err)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	const delay = 30 * time.Millisecond
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "w1", Store: st, MaxStreams: 8, LeaseTTL: 3 * time.Second, Poll: 50 * time.Millisecond,
			Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
		},
		Channel:        timedChannel{delay: delay},
		Logger:         slog.New(slog.DiscardHandler),
		MeterProvider:  mp,
		TracerProvider: tp,
		Metrics:        courier.Metrics{StreamLabels: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(runCtx) }()

	// a and b are met first and get labels; c is beyond the bound of 2.
	var ids []string
	for i := range 4 {
		for _, s := range []string{"a", "b", "c"} {
			id := fmt.Sprintf("%s-%d", s, i)
			if _, err := svc.Publish(ctx, s, id, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	if r, err := svc.Publish(ctx, "a", "a-0", []byte(`{}`)); err != nil || !r.Duplicate {
		t.Fatalf("republishing a-0 = %+v, %v; want a duplicate", r, err)
	}
	if _, err := svc.Publish(ctx, "c", "c-refused", []byte("refuse")); !errors.Is(err, courier.ErrRefused) {
		t.Fatalf("the channel's Check refusal: %v, want an error wrapping courier.ErrRefused", err)
	}
	waitDelivered(t, st, ids)
	cancel()
	<-done

	c0 := time.Now()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	c1 := time.Now()

	attempts := sum(rm, "courier.attempts", "", "")
	if attempts < int64(len(ids)) {
		t.Fatalf("courier.attempts = %d, want at least %d", attempts, len(ids))
	}
	h := histogram(t, rm, "courier.attempt.duration")
	if h.Count != uint64(attempts) {
		t.Errorf("the attempt histogram has %d observations for %d attempts", h.Count, attempts)
	}
	// In seconds: each took the channel's delay, far less than a second.
	if mean := h.Sum / float64(h.Count); mean < delay.Seconds() || mean >= 1 {
		t.Errorf("mean attempt duration %v, want at least %v and under 1 (seconds)", mean, delay.Seconds())
	}
	if !slices.Equal(h.Bounds, []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}) {
		t.Errorf("histogram bounds %v, want 5ms to 60s", h.Bounds)
	}

	for _, c := range []struct {
		key, value string
		want       int64
	}{
		{"result", "accepted", int64(len(ids))},
		{"result", "duplicate", 1},
		{"result", "refused", 1},
		{"stream", "a", 5},
		{"stream", "b", 4},
		{"stream", "other", 5}, // c's four and its refused one
		{"stream", "c", 0},
	} {
		if got := sum(rm, "courier.publishes", c.key, c.value); got != c.want {
			t.Errorf("courier.publishes{%s=%q} = %d, want %d", c.key, c.value, got, c.want)
		}
	}
	if got := sum(rm, "courier.deliveries", "stream", "c"); got != 0 {
		t.Errorf("courier.deliveries has %d points labelled c, beyond the bound", got)
	}
	if got := sum(rm, "courier.deliveries", "stream", "other"); got != 4 {
		t.Errorf("courier.deliveries{stream=other} = %d, want c's 4", got)
	}

	stats, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Backlog != 3 {
		t.Fatalf("the store's backlog is %d, want the other worker's 3", stats.Backlog)
	}
	if got := gaugeValue(rm, "courier.backlog.events"); got != 3 {
		t.Errorf("courier.backlog.events = %v, want the store's 3", got)
	}
	lo, hi := c0.Sub(after).Seconds()-1e-3, c1.Sub(before).Seconds()+1e-3
	if got := gaugeValue(rm, "courier.backlog.oldest_age"); got < lo || got > hi {
		t.Errorf("courier.backlog.oldest_age = %v s, want between %v and %v", got, lo, hi)
	}

	// One span per attempt, each naming its event, as its publish does.
	published, attempted := map[string]int{}, map[string]int{}
	for _, s := range spans.Ended() {
		id := ""
		for _, a := range s.Attributes() {
			if a.Key == "courier.event.id" {
				id = a.Value.AsString()
			}
		}
		switch s.Name() {
		case "courier.publish":
			published[id]++
		case "courier.attempt":
			attempted[id]++
		}
	}
	if n := sumOf(attempted); int64(n) != attempts {
		t.Errorf("%d attempt spans for %d attempts", n, attempts)
	}
	for _, id := range ids {
		if attempted[id] < 1 || published[id] < 1 {
			t.Errorf("event %s: %d publish spans and %d attempt spans with its ID, want at least 1 each", id, published[id], attempted[id])
		}
	}
}

// waitDelivered waits until every id is delivered in st.
func waitDelivered(t *testing.T, st store.Store, ids []string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, id := range ids {
		for {
			r, err := st.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if r.State == machine.Delivered {
				break
			}
			if r.State.Terminal() || time.Now().After(deadline) {
				t.Fatalf("%s is %s with %d attempts; want delivered", id, r.State, r.Attempts)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// failingStats is a memstore whose Stats fails while fail is set, by
// waiting for its context to end: the gauge's timeout must end it.
type failingStats struct {
	*memstore.Store
	fail bool
}

func (s *failingStats) Stats(ctx context.Context) (store.Stats, error) {
	if s.fail {
		<-ctx.Done()
		return store.Stats{}, ctx.Err()
	}
	return s.Store.Stats(ctx)
}

func TestBacklogGaugesOnAFailingStore(t *testing.T) {
	st := &failingStats{Store: memstore.New(time.Now), fail: true}
	if _, _, err := st.Enqueue(t.Context(), "s", "e1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	reader := sdkmetric.NewManualReader()
	_, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "w1", Store: st, MaxStreams: 1, LeaseTTL: time.Second, Poll: time.Second,
			Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
		},
		Channel:       timedChannel{},
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Metrics:       courier.Metrics{StatsTimeout: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	collect := func() metricdata.ResourceMetrics {
		var rm metricdata.ResourceMetrics
		start := time.Now()
		if err := reader.Collect(t.Context(), &rm); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("a collection took %v: the store call is not bounded", d)
		}
		return rm
	}
	for range 3 {
		rm := collect()
		if got := gaugeValue(rm, "courier.backlog.events"); got != -1 {
			t.Errorf("courier.backlog.events = %v while the store fails, want no point", got)
		}
		if got := sum(rm, "courier.store.errors", "op", "Stats"); got < 1 {
			t.Errorf("courier.store.errors{op=Stats} = %d while the store fails", got)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings over three failing scrapes, want 1:\n%s", n, logs.String())
	}
	st.fail = false
	if got := gaugeValue(collect(), "courier.backlog.events"); got != 1 {
		t.Errorf("courier.backlog.events = %v once the store answers, want 1", got)
	}
	if n := strings.Count(logs.String(), "level=INFO"); n != 1 {
		t.Errorf("%d info lines once the store answers, want 1:\n%s", n, logs.String())
	}
}

// histogram reads the one point of a float64 histogram.
func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var out metricdata.HistogramDataPoint[float64]
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range h.DataPoints {
					if found {
						out.Count += p.Count
						out.Sum += p.Sum
						continue
					}
					out, found = p, true
				}
			}
		}
	}
	if !found {
		t.Fatalf("no histogram %s", name)
	}
	return out
}

// gaugeValue reads an unlabelled gauge, int64 or float64; -1 if it has
// no point.
func gaugeValue(rm metricdata.ResourceMetrics, name string) float64 {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch g := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range g.DataPoints {
					return float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range g.DataPoints {
					return p.Value
				}
			}
		}
	}
	return -1
}

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// blockingChannel holds every attempt until its context ends.
type blockingChannel struct{}

func (blockingChannel) Send(ctx context.Context, _ channel.Attempt) channel.Outcome {
	<-ctx.Done()
	return channel.Outcome{Result: machine.OutcomeTimedOut}
}

func (blockingChannel) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

// The per-stream gauges of the streams beyond the label bound add up
// under "other".
func TestOwnedStreamGaugesFoldIntoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		svc, err := courier.New(courier.Config{
			Worker: worker.Config{
				Owner: "w1", Store: memstore.New(time.Now), MaxStreams: 8, LeaseTTL: time.Minute, Poll: 100 * time.Millisecond,
				Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
			},
			Channel:       blockingChannel{},
			Logger:        slog.New(slog.DiscardHandler),
			MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
			Metrics:       courier.Metrics{StreamLabels: 1, Streams: []string{"a"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); _ = svc.Run(ctx) }()
		for _, e := range []struct{ stream, id string }{{"b", "b-0"}, {"a", "a-0"}, {"b", "b-1"}, {"c", "c-0"}} {
			if _, err := svc.Publish(ctx, e.stream, e.id, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(3 * time.Second) // the loop snapshots its streams once a second
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
		for _, c := range []struct {
			name, stream string
			want         int64
		}{
			{"courier.events.queued", "a", 1},
			{"courier.events.queued", "other", 3}, // b's two and c's one
			{"courier.events.in_flight", "a", 1},
			{"courier.events.in_flight", "other", 2}, // strict order: one of b's, c's one
			{"courier.events.queued", "b", -1},
		} {
			if got := gauge(rm, c.name, "stream", c.stream); got != c.want {
				t.Errorf("%s{stream=%s} = %d, want %d", c.name, c.stream, got, c.want)
			}
		}
	})
}

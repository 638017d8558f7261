package courier

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
)

// Metrics tunes what the Service's metrics label and how they read the
// store.
type Metrics struct {
	// StreamLabels bounds how many distinct values the "stream" label
	// takes, so that a store with many streams cannot grow the series of
	// every metric without bound. The streams of Streams get a label
	// first, in their order, then the first streams this process meets,
	// up to StreamLabels in all; every other stream is labelled "other"
	// (a stream named "other" shares that label). Zero means 100.
	StreamLabels int
	// Streams are the streams labelled first, whatever this process
	// meets first: with them, which streams have a label does not depend
	// on the order events come in. courier serve passes its declared
	// streams, sorted.
	Streams []string
	// StatsTimeout bounds the store call behind the backlog gauges, made
	// at each collection (each Prometheus scrape) when the Store is a
	// store.StatsReader. Zero means 2s.
	StatsTimeout time.Duration
}

// otherStreams labels the streams beyond Metrics.StreamLabels.
const otherStreams = "other"

// withDefaults checks m and fills in its zero fields.
func (m Metrics) withDefaults() (Metrics, error) {
	switch {
	case m.StreamLabels < 0:
		return m, fmt.Errorf("%w: Metrics.StreamLabels is %d; must not be negative", worker.ErrInvalidConfig, m.StreamLabels)
	case m.StatsTimeout < 0:
		return m, fmt.Errorf("%w: Metrics.StatsTimeout is %v; must not be negative", worker.ErrInvalidConfig, m.StatsTimeout)
	}
	if m.StreamLabels == 0 {
		m.StreamLabels = 100
	}
	if m.StatsTimeout == 0 {
		m.StatsTimeout = 2 * time.Second
	}
	return m, nil
}

// streamLabels gives each stream its label value: its own name while
// fewer than max streams have one, "other" after that. A stream that got
// its name keeps it for the life of the process.
type streamLabels struct {
	max   int
	mu    sync.Mutex
	named map[string]struct{}
}

func newStreamLabels(m Metrics) *streamLabels {
	l := &streamLabels{max: m.StreamLabels, named: make(map[string]struct{}, min(m.StreamLabels, 1024))}
	for _, s := range m.Streams {
		l.of(s)
	}
	return l
}

// of returns stream's label value.
func (l *streamLabels) of(stream string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.named[stream]; ok {
		return stream
	}
	if len(l.named) < l.max {
		l.named[stream] = struct{}{}
		return stream
	}
	return otherStreams
}

// attr is the stream attribute of stream.
func (l *streamLabels) attr(stream string) attribute.KeyValue {
	return attribute.String("stream", l.of(stream))
}

// backlog exports a store.StatsReader's count as gauges: the backlog of
// the whole store, not only of the streams this process owns, so that
// one scrape of any process shows what every worker has left to do.
type backlog struct {
	st      store.StatsReader
	timeout time.Duration
	log     *slog.Logger
	errs    metric.Int64Counter
	events  metric.Int64ObservableGauge
	age     metric.Float64ObservableGauge
	// failing is set while the store's Stats fails: the warning is
	// logged when it starts failing, not at every scrape.
	failing atomic.Bool
}

func registerBacklog(m metric.Meter, b *backlog) error {
	var err error
	b.events, err = m.Int64ObservableGauge("courier.backlog.events", metric.WithUnit("{event}"),
		metric.WithDescription("Events not yet delivered or dead in the whole store, whoever owns their stream."))
	if err != nil {
		return err
	}
	b.age, err = m.Float64ObservableGauge("courier.backlog.oldest_age", metric.WithUnit("s"),
		metric.WithDescription("How long the longest-waiting event of the backlog has waited since its acceptance or latest replay, by the store's clock; 0 when the backlog is empty."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(b.observe, b.events, b.age)
	return err
}

// observe asks the store, within the timeout. On an error it records
// nothing (a gauge that says 0 would say the backlog is empty) and
// returns nil: an error returned here would be reported by the SDK at
// every scrape.
func (b *backlog) observe(ctx context.Context, o metric.Observer) error {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	s, err := b.st.Stats(ctx)
	if err != nil {
		b.errs.Add(ctx, 1, metric.WithAttributes(attribute.String("op", "Stats")))
		if !b.failing.Swap(true) {
			b.log.LogAttrs(ctx, slog.LevelWarn, "courier: the store's stats failed; the backlog gauges record nothing until it answers",
				slog.String("error", err.Error()))
		}
		return nil
	}
	if b.failing.Swap(false) {
		b.log.LogAttrs(ctx, slog.LevelInfo, "courier: the store's stats answer again; the backlog gauges record")
	}
	age := 0.0
	if s.Backlog > 0 {
		age = max(0, s.At.Sub(s.Oldest).Seconds())
	}
	o.ObserveInt64(b.events, int64(s.Backlog))
	o.ObserveFloat64(b.age, age)
	return nil
}

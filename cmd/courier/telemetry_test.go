// This file proves courier serve's telemetry on a real run: a real SQLite
// file, a real receiver, the Prometheus handler at /metrics read over
// HTTP, and traces sent by OTLP/HTTP to a collector on loopback that the
// test decodes, all set up through the OTEL_* variables as an operator
// would. The metrics count attempts in seconds, publishes by result and
// API requests by route pattern (never the path); the stream label stops
// at metrics.stream_labels; the backlog gauge is the store's, the streams
// no worker here owns included; service.name is "courier". The traces
// continue the caller's traceparent into the publish, and each attempt's
// span names its event; no trace context goes out to the receiver.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/sqlitestore"
)

// collector is an OTLP/HTTP trace receiver: it keeps every span it is
// sent, with its resource's attributes.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []collected
}

type collected struct {
	span     *tracepb.Span
	resource map[string]string
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			res := map[string]string{}
			for _, a := range rs.GetResource().GetAttributes() {
				res[a.Key] = a.Value.GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, collected{span: s, resource: res})
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) all() []collected {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]collected(nil), c.spans...)
}

// attr is a span's string attribute.
func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// serveOn runs serveConfig on db with the config text; stop ends it and
// waits for its exit (which flushes the traces).
func serveOn(t *testing.T, db, text string) (base string, stop func()) {
	t.Helper()
	c, err := ParseConfig(text)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen, c.Database = "127.0.0.1:0", db
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveConfig(ctx, c, slog.New(slog.DiscardHandler), ready, nil) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case addr := <-ready:
		return "http://" + addr, stop
	case err := <-done:
		t.Fatalf("serve ended at start: %v", err)
	}
	return "", nil
}

// scrape reads /metrics as Prometheus would.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// series returns the metrics of family name whose labels include want.
func series(fams map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// total adds up the counters, gauges or histogram counts of the series.
func total(ms []*dto.Metric) float64 {
	n := 0.0
	for _, m := range ms {
		switch {
		case m.Counter != nil:
			n += m.Counter.GetValue()
		case m.Gauge != nil:
			n += m.Gauge.GetValue()
		case m.Histogram != nil:
			n += float64(m.Histogram.GetSampleCount())
		}
	}
	return n
}

func TestServeExportsMetricsAndTraces(t *testing.T) {
	col := newCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", col.srv.URL+"/v1/traces")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")

	var mu sync.Mutex
	var outboundTrace []string
	s := newSinkWrapped(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			outboundTrace = append(outboundTrace, r.Header.Get("traceparent"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	db := filepath.Join(t.TempDir(), "courier.db")
	st, err := sqlitestore.Open(t.Context(), db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A stream this config does not declare: no worker here takes it, and
	// its events stay in the store's backlog.
	for _, id := range []string{"g-1", "g-2", "g-3"} {
		if _, _, err := st.Enqueue(t.Context(), "ghost", id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	stream := func(name string) string {
		return "[streams." + name + "]\nurl = \"" + s.srv.URL + "/" + name + "\"\nsecrets = [\"" + secret + "\"]\n"
	}
	base, stop := serveOn(t, db, "api_tokens = [\""+token+"\"]\nallow_loopback = true\npoll = \"50ms\"\nshutdown_timeout = \"2s\"\n"+
		"[metrics]\nstream_labels = 1\n"+stream("orders")+stream("refunds"))

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	publish := func(streamName, id string) {
		req, _ := http.NewRequest("POST", base+"/v1/streams/"+streamName+"/events", strings.NewReader(`{"id":"`+id+`","payload":1}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("publish %s: %d", id, resp.StatusCode)
		}
	}
	publish("orders", "o-1")
	publish("refunds", "r-1")
	call(t, "GET", base+"/v1/events/no-such-id", token, "")
	call(t, "GET", base+"/no/such/route", token, "")
	eventually(t, "o-1 and r-1 delivered in the store", func() bool {
		for _, id := range []string{"o-1", "r-1"} {
			if r, err := st.Get(t.Context(), id); err != nil || r.State != machine.Delivered {
				return false
			}
		}
		return true
	})
	stats, err := st.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, base)

	attempts := total(series(fams, "courier_attempts_total", nil))
	h := series(fams, "courier_attempt_duration_seconds", nil)
	if attempts < 2 || total(h) != attempts {
		t.Errorf("%v observations in courier_attempt_duration_seconds for %v attempts (want at least 2)", total(h), attempts)
	}
	for _, m := range h {
		b := m.Histogram.Bucket
		if len(b) != 14 || b[0].GetUpperBound() != 0.005 || b[12].GetUpperBound() != 60 { // and +Inf
			t.Errorf("attempt buckets %v, want 5ms to 60s", b)
		}
		if m.Histogram.GetSampleSum() <= 0 || m.Histogram.GetSampleSum() >= 10*float64(m.Histogram.GetSampleCount()) {
			t.Errorf("attempt duration sum %v s over %d loopback attempts", m.Histogram.GetSampleSum(), m.Histogram.GetSampleCount())
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"courier_publishes_total", map[string]string{"result": "accepted", "stream": "orders"}, 1},
		{"courier_publishes_total", map[string]string{"result": "accepted", "stream": "other"}, 1}, // refunds, beyond stream_labels = 1
		{"courier_publishes_total", map[string]string{"stream": "refunds"}, 0},
		{"courier_deliveries_total", map[string]string{"stream": "refunds"}, 0},
		{"courier_api_requests_total", map[string]string{"http_route": "/v1/streams/{stream}/events", "http_request_method": "POST", "http_response_status_code": "201"}, 2},
		{"courier_api_requests_total", map[string]string{"http_route": "/v1/events/{id}", "http_response_status_code": "404"}, 1},
		{"courier_api_requests_total", map[string]string{"http_route": "unmatched", "http_request_method": "GET", "http_response_status_code": "404"}, 1},
		{"courier_backlog_events", nil, float64(stats.Backlog)},
		{"target_info", map[string]string{"service_name": "courier"}, 1},
	} {
		if got := total(series(fams, c.name, c.labels)); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if stats.Backlog != 3 {
		t.Errorf("the store's backlog is %d, want the 3 ghost events", stats.Backlog)
	}
	for _, m := range fams["courier_api_requests_total"].GetMetric() {
		for _, l := range m.Label {
			if strings.Contains(l.GetValue(), "orders") || strings.Contains(l.GetValue(), "no-such") {
				t.Errorf("a request label carries a raw path: %s=%q", l.GetName(), l.GetValue())
			}
		}
	}

	stop() // flushes the spans
	spans := col.all()
	var server, pub *tracepb.Span
	attemptsOf := map[string]int{}
	for _, c := range spans {
		if c.resource["service.name"] != "courier" {
			t.Errorf("span %q: service.name = %q", c.span.Name, c.resource["service.name"])
		}
		switch {
		case c.span.Name == "POST /v1/streams/{stream}/events" && server == nil:
			server = c.span
		case c.span.Name == "courier.publish" && attr(c.span, "courier.event.id") == "o-1":
			pub = c.span
		case c.span.Name == "courier.attempt":
			attemptsOf[attr(c.span, "courier.event.id")]++
		case strings.Contains(c.span.Name, "/metrics"):
			t.Errorf("a scrape has a span: %q", c.span.Name)
		}
	}
	if server == nil || pub == nil {
		t.Fatalf("no server span or no publish span for o-1 among %d spans", len(spans))
	}
	if got := hex.EncodeToString(server.TraceId); got != traceID || hex.EncodeToString(server.ParentSpanId) != parentID {
		t.Errorf("the server span is in trace %s under %x, want the caller's %s under %s", got, server.ParentSpanId, traceID, parentID)
	}
	if !bytes.Equal(pub.TraceId, server.TraceId) {
		t.Errorf("the publish span is not in the request's trace")
	}
	if attemptsOf["o-1"] != 1 || attemptsOf["r-1"] != 1 {
		t.Errorf("attempt spans by event %v, want one each for o-1 and r-1", attemptsOf)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, tp := range outboundTrace {
		if tp != "" {
			t.Errorf("a webhook carried a traceparent %q", tp)
		}
	}
	if len(outboundTrace) < 2 {
		t.Errorf("the receiver saw %d requests", len(outboundTrace))
	}
}

func TestTracesOffUnlessAsked(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
			t.Setenv(k, c.env[k])
		}
		if got := tracesWanted(); got != c.want {
			t.Errorf("tracesWanted() with %v = %v, want %v", c.env, got, c.want)
		}
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/courierlab/courier/store"
)

// instrumentation names the API's meter and tracer.
const instrumentation = "github.com/courierlab/courier/cmd/courier"

// MetricsConfig is the [metrics] table of the config.
type MetricsConfig struct {
	// StreamLabels bounds the distinct values of the stream label: the
	// declared streams, sorted by name, get theirs first; streams beyond
	// the bound are labelled "other". Default 100.
	StreamLabels int `toml:"stream_labels"`
}

func (m MetricsConfig) check() error {
	if m.StreamLabels < 0 {
		return errors.New("metrics.stream_labels must not be negative")
	}
	return nil
}

// newResource is what every metric and span says of the process:
// service.name "courier" and, in a released build, service.version. The
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES variables override it.
func newResource(ctx context.Context) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName("courier")}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		attrs = append(attrs, semconv.ServiceVersion(bi.Main.Version))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}

// tracesWanted says whether the environment asks for traces: an
// OTEL_TRACES_EXPORTER other than "none", or an OTLP endpoint. With
// neither, courier exports no trace (the OpenTelemetry default would be
// OTLP to localhost, which nobody asked for).
func tracesWanted() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if e := os.Getenv("OTEL_TRACES_EXPORTER"); e != "" {
		return e != "none"
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newTracing builds the tracer provider the OTEL_* variables describe
// (exporter, endpoint, protocol, headers, sampler: see package
// autoexport and the OpenTelemetry SDK), or a no-op one when they ask for
// none. shutdown flushes the spans still buffered.
func newTracing(ctx context.Context, res *resource.Resource) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if !tracesWanted() {
		return noop.NewTracerProvider(), off, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("traces (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*): %w", err)
	}
	if autoexport.IsNoneSpanExporter(exp) {
		return noop.NewTracerProvider(), off, nil
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return sdk, sdk.Shutdown, nil
}

// Stats passes the store's backlog count through the recording wrapper
// (serve -record), so the backlog gauges read the store there too.
func (s recordingStore) Stats(ctx context.Context) (store.Stats, error) {
	sr, ok := s.Store.(store.StatsReader)
	if !ok {
		return store.Stats{}, errors.New("the store does not count its backlog")
	}
	return sr.Stats(ctx)
}

// untraced are the paths polled by machines, not people: counted, but
// with no span, so that scrapes and health checks do not bury the
// traces worth reading.
var untraced = map[string]bool{"/metrics": true, "/healthz": true, "/readyz": true}

// instrumentAPI wraps the API's mux: it counts every request by method,
// route pattern and status code, and traces each in a server span, a
// child of the caller's W3C traceparent if it sent one. The route is the
// ServeMux pattern that matched, never the path, so the labels stay
// bounded whatever paths clients send.
func instrumentAPI(mux http.Handler, mp metric.MeterProvider, tp trace.TracerProvider) (http.Handler, error) {
	requests, err := mp.Meter(instrumentation).Int64Counter("courier.api.requests", metric.WithUnit("{request}"),
		metric.WithDescription("API requests answered, by method, route pattern and status code."))
	if err != nil {
		return nil, err
	}
	tracer := tp.Tracer(instrumentation)
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		span := trace.SpanFromContext(ctx) // a no-op span unless traced below
		if !untraced[r.URL.Path] {
			ctx, span = tracer.Start(prop.Extract(ctx, propagation.HeaderCarrier(r.Header)), "HTTP "+r.Method,
				trace.WithSpanKind(trace.SpanKindServer))
			r = r.WithContext(ctx)
		}
		sw := &statusWriter{ResponseWriter: w}
		mux.ServeHTTP(sw, r)
		// The mux wrote the pattern it matched into r, the very request
		// it was handed.
		method, route := routeOf(r)
		attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRouteKey.String(route),
			semconv.HTTPResponseStatusCodeKey.Int(sw.code())}
		requests.Add(ctx, 1, metric.WithAttributes(attrs...))
		span.SetName(method + " " + route)
		span.SetAttributes(attrs...)
		if sw.code() >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(sw.code()))
		}
		span.End()
	}), nil
}

// methods are the request methods a label names; any other is "_OTHER",
// as the HTTP semantic conventions say, since a client may send any
// token.
var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

// routeOf splits the matched pattern ("POST /v1/events/{id}/replay")
// into its method and path. A pattern with no method takes the
// request's; no pattern (the mux answered itself: an unknown path's 404,
// a 405, a redirect) is the route "unmatched", so that a scan of random
// paths cannot grow the label set.
func routeOf(r *http.Request) (method, route string) {
	method = r.Method
	if !methods[method] {
		method = "_OTHER"
	}
	if r.Pattern == "" {
		return method, "unmatched"
	}
	if m, path, ok := strings.Cut(r.Pattern, " "); ok {
		return m, path
	}
	return method, r.Pattern
}

// statusWriter remembers the status code the handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

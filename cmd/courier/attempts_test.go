// This file proves the attempt log and endpoint health on a real
// `courier serve` (SQLite file, loopback receivers): an endpoint that
// answers 503 then 410 has both attempts listed, newest first, with
// their status and the receiver's answer; the 410 disables it at once
// (reason gone), which the operator learns by metric and by a signed
// webhook; a message published meanwhile skips it; PATCH enabled:true
// clears its failing streak and delivery resumes. An endpoint that only
// fails is disabled once it has failed for disable_after (reason
// failing). The first runs on PostgreSQL too.
package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platmem"
	"github.com/courierlab/courier/webhook/receiver"
)

// scripted is a loopback receiver that verifies each request with the
// kit and answers the statuses of script in turn, then 204; it keeps
// the verified bodies.
type scripted struct {
	srv    *httptest.Server
	mu     sync.Mutex
	script []int
	bodies [][]byte
}

func newScripted(t *testing.T, script ...int) *scripted {
	s := &scripted{script: script}
	h, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: time.Hour, Store: receiver.NewMemory(),
		Logger: slog.New(slog.DiscardHandler)},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ev, _ := receiver.FromContext(r.Context())
			s.mu.Lock()
			defer s.mu.Unlock()
			s.bodies = append(s.bodies, ev.Body)
			status := http.StatusNoContent
			if len(s.script) > 0 {
				status, s.script = s.script[0], s.script[1:]
			}
			w.Header().Set("X-Receiver", "scripted")
			w.WriteHeader(status)
			_, _ = w.Write([]byte("answered " + http.StatusText(status)))
		}))
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.bodies...)
}

// startPlatformWith is startPlatform with a [platform] table; set, if
// not nil, changes the config (onPostgres).
func startPlatformWith(t *testing.T, platformTable string, set func(*Config)) string {
	t.Helper()
	c, err := ParseConfig(`
api_tokens = ["` + token + `"]
allow_loopback = true
poll = "50ms"
shutdown_timeout = "2s"
[platform]
` + platformTable)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen = "127.0.0.1:0"
	c.Database = filepath.Join(t.TempDir(), "courier.db")
	if set != nil {
		set(c)
	}
	return startServeConfig(t, c)
}

// awaitAnswer calls get until ok says its answer is the one awaited, for
// at most testLimit, and returns that answer.
func awaitAnswer(t *testing.T, what string, get func() map[string]any, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(testLimit)
	for {
		v := get()
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last answer %v", what, testLimit, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func disabledWith(reason string) func(map[string]any) bool {
	return func(h map[string]any) bool { return h["enabled"] == false && h["disabled_reason"] == reason }
}

func TestEndpointGoneIsDisabledListedAndResumed(t *testing.T) { testEndpointGone(t, nil) }

func TestEndpointGoneIsDisabledListedAndResumedPostgres(t *testing.T) {
	testEndpointGone(t, onPostgres(t))
}

func testEndpointGone(t *testing.T, set func(*Config)) {
	recv := newScripted(t, http.StatusServiceUnavailable, http.StatusGone)
	ops := newScripted(t)
	base := startPlatformWith(t, `operator_webhook = "`+ops.srv.URL+`/ops"
operator_secret = "`+secret+`"`, set)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+recv.srv.URL+`/hook","secrets":["`+secret+`"]}`)["id"].(string)
	epURL, msgs := base+"/v1/apps/"+app+"/endpoints/"+ep, base+"/v1/apps/"+app+"/messages"
	m1 := mustCall(t, 201, "POST", msgs, `{"event_type":"invoice.paid","payload":{"n":1}}`)["id"].(string)

	h := awaitAnswer(t, "the endpoint disabled by the 410", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/health", "") },
		disabledWith("gone"))
	if h["failing_streak"] != 2.0 || h["failures"] != 2.0 || h["successes"] != 0.0 || h["failing_since"] == nil || h["disabled_at"] == nil {
		t.Errorf("health = %v; want 2 failures in the streak, a failing_since and a disabled_at", h)
	}
	page := mustCall(t, 200, "GET", msgs+"/"+m1+"/attempts", "")
	list := page["data"].([]any)
	if len(list) != 2 {
		t.Fatalf("message attempts = %v; want 2", page)
	}
	for i, want := range []struct {
		status  float64
		outcome string
		attempt float64
		body    string
	}{{410, "refused", 2, "answered Gone"}, {503, "failed", 1, "answered Service Unavailable"}} {
		a := list[i].(map[string]any)
		hdr, _ := a["response_headers"].(map[string]any)
		if a["status"] != want.status || a["outcome"] != want.outcome || a["attempt"] != want.attempt || a["response_body"] != want.body ||
			a["delivery_id"] != m1+"."+ep || hdr == nil || hdr["X-Receiver"] == nil {
			t.Errorf("attempt %d = %v; want status %v, %s, attempt %v, body %q, its headers", i, a, want.status, want.outcome, want.attempt, want.body)
		}
	}
	byEp := mustCall(t, 200, "GET", epURL+"/attempts?limit=1", "")
	if d := byEp["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != list[0].(map[string]any)["id"] || byEp["next_after"] == nil {
		t.Errorf("endpoint attempts, first page of 1 = %v; want the newest and a next_after", byEp)
	}

	// The operator was told: a signed webhook (the kit verified it) and a metric.
	awaitAnswer(t, "the operator webhook", func() map[string]any { return map[string]any{"n": len(ops.received())} },
		func(v map[string]any) bool { return v["n"] == 1 })
	var ev operatorEvent
	if err := json.Unmarshal(ops.received()[0], &ev); err != nil || ev.Type != "endpoint.disabled" ||
		ev.Data.EndpointID != ep || ev.Data.AppID != app || ev.Data.Reason != "gone" {
		t.Errorf("operator webhook = %s (%v); want endpoint.disabled of %s, gone", ops.received()[0], err, ep)
	}
	if n := total(series(scrape(t, base), "courier_platform_endpoints_disabled_total", map[string]string{"reason": "gone"})); n != 1 {
		t.Errorf("courier_platform_endpoints_disabled_total{reason=gone} = %v; want 1", n)
	}

	// Disabled: left out of the next message's fan-out.
	if d := mustCall(t, 201, "POST", msgs, `{"event_type":"invoice.paid","payload":{"n":2}}`)["deliveries"].([]any); len(d) != 0 {
		t.Errorf("a message to a disabled endpoint fanned out: %v", d)
	}
	// Enabled again: the streak is forgotten, the counts kept, and delivery resumes.
	mustCall(t, 200, "PATCH", epURL, `{"enabled":true}`)
	h = mustCall(t, 200, "GET", epURL+"/health", "")
	if h["enabled"] != true || h["disabled_reason"] != nil || h["failing_streak"] != 0.0 || h["failing_since"] != nil || h["failures"] != 2.0 {
		t.Errorf("health once enabled = %v; want enabled, no streak, 2 failures kept", h)
	}
	m3 := mustCall(t, 201, "POST", msgs, `{"event_type":"invoice.paid","payload":{"n":3}}`)["id"].(string)
	got := awaitAnswer(t, "the delivered attempt", func() map[string]any { return mustCall(t, 200, "GET", msgs+"/"+m3+"/attempts", "") },
		func(p map[string]any) bool { return len(p["data"].([]any)) == 1 })
	if a := got["data"].([]any)[0].(map[string]any); a["status"] != 204.0 || a["outcome"] != "delivered" {
		t.Errorf("attempt after re-enabling = %v; want 204 delivered", a)
	}
	awaitAnswer(t, "the health's success", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/health", "") },
		func(h map[string]any) bool { return h["successes"] == 1.0 && h["last_success_at"] != nil })
}

// An endpoint that fails with no success for disable_after is disabled:
// with disable_after = 1ms, its second failure (a backoff after the
// first) disables it.
func TestEndpointFailingForDisableAfterIsDisabled(t *testing.T) {
	recv := newScripted(t, 500, 500, 500, 500, 500, 500, 500, 500)
	base := startPlatformWith(t, `disable_after = "1ms"`, nil)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+recv.srv.URL+`/hook","secrets":["`+secret+`"]}`)["id"].(string)
	epURL := base + "/v1/apps/" + app + "/endpoints/" + ep
	mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"t","payload":1}`)
	h := awaitAnswer(t, "the failing endpoint disabled", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/health", "") },
		disabledWith("failing"))
	if streak := h["failing_streak"].(float64); streak < 2 {
		t.Errorf("disabled after a streak of %v; want 2 or more (the first failure starts the clock)", streak)
	}
	if n := total(series(scrape(t, base), "courier_platform_endpoints_disabled_total", map[string]string{"reason": "failing"})); n != 1 {
		t.Errorf("courier_platform_endpoints_disabled_total{reason=failing} = %v; want 1", n)
	}
}

// The recorder serve builds counts each attempt its full queue drops in
// courier.platform.attempts.dropped, and never blocks the sender.
func TestRecorderDropsAreCounted(t *testing.T) {
	c, err := ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	rec, _, err := newRecorder(c, platmem.New(nil), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for range platform.DefaultAttemptQueue + 3 { // Run is not started: nothing drains the queue
		if rec.Record(platform.Attempt{}) {
			kept++
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	var dropped int64 = -1
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "courier.platform.attempts.dropped" {
				dropped = sum.DataPoints[0].Value
			}
		}
	}
	if kept != platform.DefaultAttemptQueue || dropped != 3 {
		t.Errorf("kept %d, dropped metric %d; want %d and 3", kept, dropped, platform.DefaultAttemptQueue)
	}
}

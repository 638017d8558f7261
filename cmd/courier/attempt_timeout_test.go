// This file proves an endpoint's attempt_timeout on a real `courier
// serve`: it is shown (30 by default), and a receiver that never answers
// sees courier give the attempt up after the endpoint's 1 s, not the
// default 30 s; out-of-range values are refused naming the field,
// changing nothing.
package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestEndpointAttemptTimeoutBoundsAnAttempt(t *testing.T) {
	var mu sync.Mutex
	var held []time.Duration // how long each request was held before courier gave it up
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		case <-done:
		}
		mu.Lock()
		held = append(held, time.Since(start))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // before srv.Close: let held requests end
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	if got := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/d","enabled":false}`)["attempt_timeout"]; got != 30.0 {
		t.Errorf("default attempt_timeout shows %v; want 30", got)
	}
	ep := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`","attempt_timeout":1}`)
	if ep["attempt_timeout"] != 1.0 {
		t.Fatalf("created with attempt_timeout 1, shows %v", ep["attempt_timeout"])
	}
	mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"tick","payload":1}`)
	eventually(t, "an attempt was given up", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(held) > 0
	})
	mu.Lock()
	first := held[0]
	mu.Unlock()
	if first < 900*time.Millisecond || first > 3*time.Second {
		t.Errorf("courier held the attempt %v; want about the endpoint's 1 s", first)
	}
}

func TestEndpointAttemptTimeoutBadInputsNameTheField(t *testing.T) {
	base := startPlatform(t)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	ep := mustCall(t, 201, "POST", eps, `{"url":"https://example.com/","attempt_timeout":300}`)["id"].(string)
	before := snapshot(t, base, app)
	for _, v := range []string{`-1`, `301`, `1.5`, `"30"`, `1000000000000`, `null1`} {
		for _, m := range []struct{ method, url, body string }{
			{"PATCH", eps + "/" + ep, `{"attempt_timeout":` + v + `}`},
			{"POST", eps, `{"url":"https://example.com/","attempt_timeout":` + v + `}`},
		} {
			r := call(t, m.method, m.url, token, m.body)
			if r.status != 400 || (r.body["field"] != "attempt_timeout" && !strings.Contains(r.body["error"].(string), "attempt_timeout") && v != `null1`) {
				t.Errorf("%s %s = %d %v; want 400 naming attempt_timeout", m.method, m.body, r.status, r.body)
			}
		}
	}
	if got := snapshot(t, base, app); got != before {
		t.Errorf("refused attempt_timeout changes changed something:\n%s\nwas\n%s", got, before)
	}
}

// This file proves an endpoint's retry and status policy on a real
// `courier serve` (SQLite file, and PostgreSQL when COURIER_TEST_POSTGRES
// is set): the policy is shown with its defaults, set on create, changed
// by PATCH and fed to the endpoint's stream: max_attempts 2 with a 50ms
// backoff makes a delivery to a receiver answering 500 a dead letter
// (exhausted) after exactly 2 attempts, where the default would still be
// retrying; reject_statuses [422] makes a 422 a dead letter at once
// (rejected), where the default retries it. Its bad inputs are answered
// 400 naming the field, and change nothing.
package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEndpointRetryPolicyOnServe(t *testing.T) { testEndpointRetryPolicy(t, nil) }

func TestEndpointRetryPolicyOnServePostgres(t *testing.T) { testEndpointRetryPolicy(t, onPostgres(t)) }

func testEndpointRetryPolicy(t *testing.T, set func(*Config)) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/fail", "/default":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
	}))
	t.Cleanup(srv.Close)
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[path]
	}
	base := startPlatformWith(t, "", set)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	def := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/default"}`)
	want := map[string]any{"max_attempts": 8.0, "base_backoff": "1s", "max_backoff": "5m0s", "reject_statuses": []any{410.0}}
	if d := cmp.Diff(want, pick(def, want)); d != "" {
		t.Errorf("an endpoint created without a policy shows (-want +got):\n%s", d)
	}
	fail := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/fail","max_attempts":2,"base_backoff":"50ms","max_backoff":"100ms"}`)
	want = map[string]any{"max_attempts": 2.0, "base_backoff": "50ms", "max_backoff": "100ms", "reject_statuses": []any{410.0}}
	if d := cmp.Diff(want, pick(fail, want)); d != "" {
		t.Errorf("an endpoint created with a policy shows (-want +got):\n%s", d)
	}
	reject := mustCall(t, 201, "POST", eps, `{"url":"`+srv.URL+`/reject","max_attempts":5}`)["id"].(string)
	got := mustCall(t, 200, "PATCH", eps+"/"+reject, `{"reject_statuses":[410,422]}`)
	if d := cmp.Diff([]any{410.0, 422.0}, got["reject_statuses"]); d != "" || got["max_attempts"] != 5.0 {
		t.Errorf("PATCH reject_statuses shows %v, max_attempts %v; want [410 422] and 5 kept (%s)", got["reject_statuses"], got["max_attempts"], d)
	}

	msg := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"t","payload":{}}`)["id"].(string)
	dead := func(ep, reason string, attempts float64) {
		t.Helper()
		awaitAnswer(t, "delivery to "+ep+" dead ("+reason+")", func() map[string]any { return mustCall(t, 200, "GET", base+"/v1/events/"+msg+"."+ep, "") },
			func(v map[string]any) bool {
				if v["state"] == "dead" && (v["dead_reason"] != reason || v["attempts"] != attempts) {
					t.Fatalf("delivery to %s: %v; want dead (%s) after %v attempts", ep, v, reason, attempts)
				}
				return v["state"] == "dead"
			})
	}
	dead(fail["id"].(string), "exhausted", 2)
	dead(reject, "rejected", 1)
	if n := count("/fail"); n != 2 {
		t.Errorf("the receiver got %d attempts to /fail; want 2 (max_attempts)", n)
	}
	// The default policy is still retrying its 500s, 1 s apart.
	if v := mustCall(t, 200, "GET", base+"/v1/events/"+msg+"."+def["id"].(string), ""); v["state"] == "dead" {
		t.Errorf("the default endpoint's delivery is dead already: %v", v)
	}
}

// pick is the entries of m named by want's keys.
func pick(m, want map[string]any) map[string]any {
	out := map[string]any{}
	for k := range want {
		out[k] = m[k]
	}
	return out
}

func TestEndpointRetryPolicyBadInputsChangeNothing(t *testing.T) {
	base := startPlatform(t)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	ep := mustCall(t, 201, "POST", eps, `{"url":"https://example.com/","enabled":false,"max_attempts":3}`)["id"].(string)
	before := mustCall(t, 200, "GET", eps, "")
	for _, c := range []struct {
		body  string
		field string
	}{
		{`"max_attempts":-1`, "max_attempts"},
		{`"max_attempts":101`, "max_attempts"},
		{`"max_attempts":"3"`, "max_attempts"},
		{`"base_backoff":"soon"`, "base_backoff"},
		{`"base_backoff":5`, "base_backoff"},
		{`"base_backoff":"1ms"`, "base_backoff"},
		{`"base_backoff":"2h"`, "base_backoff"},
		{`"max_backoff":"-1s"`, "max_backoff"},
		{`"max_backoff":"48h"`, "max_backoff"},
		{`"base_backoff":"1m","max_backoff":"10s"`, "max_backoff"},
		{`"base_backoff":"10m"`, "max_backoff"},
		{`"reject_statuses":[200]`, "reject_statuses[0]"},
		{`"reject_statuses":[410,99]`, "reject_statuses[1]"},
		{`"reject_statuses":[422,422]`, "reject_statuses[1]"},
		{`"reject_statuses":"410"`, "reject_statuses"},
	} {
		for _, m := range []struct{ method, url, body string }{
			{"POST", eps, `{"url":"https://example.com/",` + c.body + `}`},
			{"PATCH", eps + "/" + ep, `{` + c.body + `}`},
		} {
			r := call(t, m.method, m.url, token, m.body)
			msg, _ := r.body["error"].(string)
			field, _ := r.body["field"].(string)
			if r.status != 400 || field != c.field && !strings.Contains(msg, c.field) {
				t.Errorf("%s %s = %d %v; want 400 naming %q", m.method, m.body, r.status, r.body, c.field)
			}
		}
	}
	if d := cmp.Diff(before, mustCall(t, 200, "GET", eps, "")); d != "" {
		t.Errorf("the refused calls changed the endpoints (-before +after):\n%s", d)
	}
	// The check can fail: a good PATCH changes what the list shows.
	mustCall(t, 200, "PATCH", eps+"/"+ep, `{"max_attempts":4}`)
	if d := cmp.Diff(before, mustCall(t, 200, "GET", eps, "")); d == "" {
		t.Error("a good PATCH changed nothing the list shows")
	}
}

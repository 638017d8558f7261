// This file proves the status policy through courier serve, a real SQLite
// file and a real loopback receiver: a receiver answering 404 for a while
// (a deploy) gets its event once it is back, not a dead letter; the
// policy's statuses make a dead letter at once, the others spend the
// event's attempts; and reject_statuses in the config is what decides.
package main

import (
	"net/http"
	"sync"
	"testing"
)

// terminal waits for id to be delivered or dead and returns its view.
func terminal(t *testing.T, base, id string) map[string]any {
	t.Helper()
	var ev map[string]any
	eventually(t, id+" delivered or dead", func() bool {
		ev = call(t, "GET", base+"/v1/events/"+id, token, "").body
		return ev["state"] == "delivered" || ev["state"] == "dead"
	})
	return ev
}

// During a deploy the receiver answers 404 to everything, the probe
// included: the attempts fail, the breaker opens after three, the event
// waits parked without spending attempts, and the first healthy probe
// lets it through. On the old table the first 404 made it a dead letter.
func TestReceiverAnswering404DuringADeployGetsTheEventAfter(t *testing.T) {
	const deploy = 4 // three attempts and the first probe
	var mu sync.Mutex
	hits := 0
	s := newSinkWrapped(t, func(kit http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits++
			down := hits <= deploy
			mu.Unlock()
			if down {
				http.NotFound(w, r)
				return
			}
			kit.ServeHTTP(w, r)
		})
	})
	base := startServeStream(t, s.srv.URL, `max_attempts = 8
breaker_threshold = 3
probe_base_interval = "50ms"
probe_max_interval = "100ms"
`)
	call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-deploy","payload":1}`)
	ev := terminal(t, base, "o-deploy")
	last, _ := ev["last_outcome"].(map[string]any)
	if ev["state"] != "delivered" || last == nil || last["status"] != 204.0 {
		t.Fatalf("after a deploy answering 404: %v; want delivered by a 204", ev)
	}
	// Three attempts met the deploy, the open circuit spent none, the
	// fourth was delivered.
	if ev["attempts"] != 4.0 || s.count("o-deploy") != 1 {
		t.Errorf("attempts %v, applied %d times; want 4 and 1", ev["attempts"], s.count("o-deploy"))
	}
	mu.Lock()
	defer mu.Unlock()
	if hits <= deploy {
		t.Errorf("the receiver saw %d requests; the deploy's %d 404s were not all answered", hits, deploy)
	}
	dead := call(t, "GET", base+"/v1/streams/orders/dead", token, "").body["dead"].([]any)
	if len(dead) != 0 {
		t.Errorf("dead letters %v; want none", dead)
	}
}

// reject_statuses decides: a status it lists is a dead letter after one
// attempt (rejected), any other spends the event's two attempts
// (exhausted). Absent, only 410 is listed; empty, nothing is.
func TestRejectStatusesDecideWhatDiesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		status      int
		reason      string
		attempts    float64
	}{
		{"default retries 422", "", http.StatusUnprocessableEntity, "exhausted", 2},
		{"default retries 404", "", http.StatusNotFound, "exhausted", 2},
		{"default rejects 410", "", http.StatusGone, "rejected", 1},
		{"listed 422 rejects", "reject_statuses = [400, 422]\n", http.StatusUnprocessableEntity, "rejected", 1},
		{"unlisted 410 retries", "reject_statuses = [422]\n", http.StatusGone, "exhausted", 2},
		{"empty list retries 410", "reject_statuses = []\n", http.StatusGone, "exhausted", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSink(t)
			s.setStatus(tc.status)
			base := startServe(t, s.srv.URL, tc.extra)
			call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-1","payload":1}`)
			ev := terminal(t, base, "o-1")
			last, _ := ev["last_outcome"].(map[string]any)
			if ev["state"] != "dead" || ev["dead_reason"] != tc.reason || ev["attempts"] != tc.attempts ||
				last == nil || last["status"] != float64(tc.status) {
				t.Errorf("HTTP %d: %v; want dead (%s) after %v attempts", tc.status, ev, tc.reason, tc.attempts)
			}
		})
	}
}

// This file proves the platform's API on a real `courier serve` (SQLite
// file, loopback HTTP, receivers built with the kit) started with no
// stream in its config: applications, event types and endpoints are
// created by API and used without a restart; a message fans out to the
// enabled endpoints whose filter matches, each delivery signed with its
// endpoint's secrets and delivered once under the ID message.endpoint;
// an endpoint's new URL and rotated secret take effect at the next
// message; a disabled endpoint is left out; and every bad input is
// answered 4xx with a JSON error naming the field, changing nothing.
package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/receiver"
)

// newSinkSecret is newSink verifying with sec instead of secret.
func newSinkSecret(t *testing.T, sec string) *sink {
	s := &sink{applied: map[string]int{}}
	h, err := receiver.New(receiver.Config{Secrets: []string{sec}, Window: time.Hour, Store: receiver.NewMemory(),
		Logger: slog.New(slog.DiscardHandler)},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ev, _ := receiver.FromContext(r.Context())
			s.mu.Lock()
			s.applied[ev.ID]++
			s.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}))
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	return s
}

// startPlatform runs courier serve with tokens and no [streams].
func startPlatform(t *testing.T) string {
	t.Helper()
	return startPlatformMax(t, 4096)
}

// startPlatformMax is startPlatform taking requests of up to maxBytes.
func startPlatformMax(t *testing.T, maxBytes int) string {
	t.Helper()
	c, err := ParseConfig(`
api_tokens = ["` + token + `"]
allow_loopback = true
poll = "50ms"
max_request_bytes = ` + strconv.Itoa(maxBytes) + `
shutdown_timeout = "2s"
`)
	if err != nil {
		t.Fatal(err)
	}
	c.Listen = "127.0.0.1:0"
	c.Database = filepath.Join(t.TempDir(), "courier.db")
	return startServeConfig(t, c)
}

// mustCall is call that fails the test unless the answer has status want.
func mustCall(t *testing.T, want int, method, url, body string) map[string]any {
	t.Helper()
	r := call(t, method, url, token, body)
	if r.status != want {
		t.Fatalf("%s %s %s = %d %v; want %d", method, url, body, r.status, r.body, want)
	}
	return r.body
}

func deliveries(t *testing.T, msg map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	list, _ := msg["deliveries"].([]any)
	for _, d := range list {
		d := d.(map[string]any)
		out[d["endpoint_id"].(string)] = d
	}
	return out
}

func TestPlatformFanOutWithoutRestart(t *testing.T) {
	s := newSink(t)
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"invoice.paid","description":"an invoice was paid"}`)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"user.created"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	paid := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints",
		`{"url":"`+s.srv.URL+`/paid","secrets":["`+secret+`"],"event_types":["invoice.paid"]}`)
	all := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+s.srv.URL+`/all","secrets":["`+secret+`"]}`)
	users := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints",
		`{"url":"`+s.srv.URL+`/users","secrets":["`+secret+`"],"event_types":["user.created"]}`)
	generated := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+s.srv.URL+`/x","enabled":false}`)
	if sec, _ := generated["secrets"].([]any); len(sec) != 1 || !strings.HasPrefix(sec[0].(string), "whsec_") {
		t.Errorf("an endpoint created without secrets shows %v; want one generated whsec_ secret", generated["secrets"])
	}
	if got := mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/endpoints/"+paid["id"].(string), ""); got["secrets"] != nil {
		t.Errorf("GET endpoint shows its secrets: %v", got["secrets"])
	}

	msg := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"invoice.paid","payload":{"total":42},"idempotency_key":"inv-1"}`)
	ds := deliveries(t, msg)
	if len(ds) != 2 || ds[paid["id"].(string)] == nil || ds[all["id"].(string)] == nil || msg["fanout_complete"] != true {
		t.Fatalf("message = %v; want deliveries to the two matching enabled endpoints, fan-out complete", msg)
	}
	id := msg["id"].(string)
	for ep, d := range ds {
		if d["id"] != id+"."+ep || d["stream"] != ep || d["fanout"] != "enqueued" {
			t.Errorf("delivery %v; want id %s.%s on stream %s, enqueued", d, id, ep, ep)
		}
	}
	eventually(t, "both deliveries applied", func() bool {
		return s.count(id+"."+paid["id"].(string)) == 1 && s.count(id+"."+all["id"].(string)) == 1
	})
	eventually(t, "the message shows both delivered", func() bool {
		got := mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/messages/"+id, "")
		n := 0
		for _, d := range deliveries(t, got) {
			if ev, _ := d["delivery"].(map[string]any); ev != nil && ev["state"] == "delivered" {
				n++
			}
		}
		return n == 2
	})
	if s.count(id+"."+users["id"].(string)) != 0 {
		t.Error("an endpoint filtering user.created got invoice.paid")
	}
	again := mustCall(t, 200, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"invoice.paid","payload":{"total":42},"idempotency_key":"inv-1"}`)
	if again["id"] != id {
		t.Errorf("the key again = message %v; want %s", again["id"], id)
	}
	mustCall(t, 200, "GET", base+"/v1/events/"+id+"."+paid["id"].(string), "")

	// A new URL and a rotated secret, with no restart: the next message
	// goes there, signed so that only the new secret verifies.
	newSecret := webhook.NewSecret()
	s2 := newSinkSecret(t, newSecret)
	mustCall(t, 200, "PATCH", base+"/v1/apps/"+app+"/endpoints/"+all["id"].(string), `{"url":"`+s2.srv.URL+`/all","secrets":["`+newSecret+`"]}`)
	mustCall(t, 200, "PATCH", base+"/v1/apps/"+app+"/endpoints/"+paid["id"].(string), `{"enabled":false}`)
	m2 := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"invoice.paid","payload":[1,2]}`)
	if ds := deliveries(t, m2); len(ds) != 1 || ds[all["id"].(string)] == nil {
		t.Fatalf("after disabling one endpoint: %v; want only %s", m2["deliveries"], all["id"])
	}
	eventually(t, "the rotated endpoint applied the second message", func() bool { return s2.count(m2["id"].(string)+"."+all["id"].(string)) == 1 })

	mustCall(t, 200, "DELETE", base+"/v1/apps/"+app+"/endpoints/"+users["id"].(string), "")
	mustCall(t, 404, "GET", base+"/v1/apps/"+app+"/endpoints/"+users["id"].(string), "")
	list := mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/endpoints?limit=2", "")
	if data, _ := list["data"].([]any); len(data) != 2 || list["next_after"] == nil {
		t.Errorf("a first page of 2 of 3 endpoints = %v; want 2 and a next_after", list)
	}
	mustCall(t, 200, "DELETE", base+"/v1/apps/"+app, "")
	mustCall(t, 404, "GET", base+"/v1/apps/"+app+"/messages/"+id, "")
}

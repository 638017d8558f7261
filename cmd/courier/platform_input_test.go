// This file proves that every platform route answers a bad input with a
// 4xx and a JSON error naming the field, and changes nothing: after all
// the refused calls, the applications, endpoints, event types and
// messages are exactly what they were.
package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlatformBadInputsNameTheFieldAndChangeNothing(t *testing.T) {
	s := newSink(t)
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"known"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	other := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Other"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+s.srv.URL+`/a","secrets":["`+secret+`"]}`)["id"].(string)
	msg := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"known","payload":1,"idempotency_key":"k1"}`)["id"].(string)
	before := snapshot(t, base, app, other)

	apps, eps, msgs := base+"/v1/apps", base+"/v1/apps/"+app+"/endpoints", base+"/v1/apps/"+app+"/messages"
	for _, c := range []struct {
		method, url, body string
		status            int
		field             string // the error's field, or a word its text must hold
	}{
		{"POST", apps, `{}`, 400, "name"},
		{"POST", apps, `{"name":""}`, 400, "name"},
		{"POST", apps, `{"name":"a\u0000b"}`, 400, "name"},
		{"POST", apps, `{"name":5}`, 400, "name"},
		{"POST", apps, `{"nme":"x"}`, 400, "nme"},
		{"POST", apps, `{"name":"x","name":"y"}`, 400, "name"},
		{"GET", apps + "?limit=0", ``, 400, "limit"},
		{"GET", apps + "?after=nope", ``, 400, "after"},
		{"PATCH", apps + "/" + app, `{"name":""}`, 400, "name"},
		{"PATCH", apps + "/app_nope", `{"name":"x"}`, 404, "application"},
		{"DELETE", apps + "/app_nope", ``, 404, "application"},
		{"POST", eps, `{}`, 400, "url"},
		{"POST", eps, `{"url":"ftp://example.com/"}`, 400, "url"},
		{"POST", eps, `{"url":"https://u:p@example.com/"}`, 400, "url"},
		{"POST", eps, `{"url":"https://example.com/","event_types":["unknown"]}`, 400, "event_types[0]"},
		{"POST", eps, `{"url":"https://example.com/","event_types":["known","a b"]}`, 400, "event_types[1]"},
		{"POST", eps, `{"url":"https://example.com/","secrets":["hunter2"]}`, 400, "secrets[0]"},
		{"POST", eps, `{"url":"https://example.com/","secrets":[]}`, 400, "secrets"},
		{"POST", eps, `{"url":"https://example.com/","ordering":"fifo"}`, 400, "ordering"},
		{"POST", eps, `{"url":"https://example.com/","enabled":"yes"}`, 400, "enabled"},
		{"POST", eps, `{"url":"https://example.com/","description":"a` + "\\u0007" + `"}`, 400, "description"},
		{"POST", apps + "/app_nope/endpoints", `{"url":"https://example.com/"}`, 404, "application"},
		{"GET", eps + "?limit=1001", ``, 400, "limit"},
		{"GET", eps + "?after=app_x", ``, 400, "after"},
		{"PATCH", eps + "/" + ep, `{"url":"not a url"}`, 400, "url"},
		{"PATCH", eps + "/" + ep, `{"event_types":["unknown"]}`, 400, "event_types[0]"},
		{"PATCH", eps + "/" + ep, `{"secrets":["whsec_"]}`, 400, "secrets[0]"},
		{"PATCH", base + "/v1/apps/" + other + "/endpoints/" + ep, `{"enabled":false}`, 404, "endpoint"},
		{"DELETE", base + "/v1/apps/" + other + "/endpoints/" + ep, ``, 404, "endpoint"},
		{"GET", base + "/v1/apps/" + other + "/endpoints/" + ep + "/secrets", ``, 404, "endpoint"},
		{"POST", base + "/v1/event-types", `{}`, 400, "name"},
		{"POST", base + "/v1/event-types", `{"name":"a/b"}`, 400, "name"},
		{"POST", base + "/v1/event-types", `{"name":"known"}`, 409, "known"},
		{"GET", base + "/v1/event-types?limit=x", ``, 400, "limit"},
		{"POST", msgs, `{"payload":1}`, 400, "event_type"},
		{"POST", msgs, `{"event_type":"known"}`, 400, "payload"},
		{"POST", msgs, `{"event_type":"a b","payload":1}`, 400, "event_type"},
		{"POST", msgs, `{"event_type":"known","payload":1,"idempotency_key":"a b"}`, 400, "idempotency_key"},
		{"POST", msgs, `{"event_type":"known","payload":2,"idempotency_key":"k1"}`, 409, "idempotency_key"},
		{"POST", msgs, `{"event_type":"known","payload":{"a":1,"a":2}}`, 400, "duplicate key"},
		{"POST", base + "/v1/apps/app_nope/messages", `{"event_type":"known","payload":1}`, 404, "application"},
		{"GET", base + "/v1/apps/" + other + "/messages/" + msg, ``, 404, "message"},
		{"GET", base + "/v1/streams/ep_00000000000000000000000000/dead", ``, 404, "endpoint"},
		{"GET", msgs + "/" + msg + "/attempts?limit=0", ``, 400, "limit"},
		{"GET", msgs + "/" + msg + "/attempts?limit=abc", ``, 400, "limit"},
		{"GET", msgs + "/" + msg + "/attempts?after=msg_x", ``, 400, "after"},
		{"GET", base + "/v1/apps/" + other + "/messages/" + msg + "/attempts", ``, 404, "message"},
		{"GET", base + "/v1/apps/app_nope/messages/" + msg + "/attempts", ``, 404, "message"},
		{"GET", msgs + "/msg_nope/attempts", ``, 404, "message"},
		{"GET", eps + "/" + ep + "/attempts?limit=1001", ``, 400, "limit"},
		{"GET", eps + "/" + ep + "/attempts?after=" + ep, ``, 400, "after"},
		{"GET", base + "/v1/apps/" + other + "/endpoints/" + ep + "/attempts", ``, 404, "endpoint"},
		{"GET", eps + "/ep_nope/attempts", ``, 404, "endpoint"},
		{"GET", base + "/v1/apps/" + other + "/endpoints/" + ep + "/health", ``, 404, "endpoint"},
		{"GET", base + "/v1/apps/app_nope/endpoints/" + ep + "/health", ``, 404, "endpoint"},
		{"GET", eps + "/ep_nope/health", ``, 404, "endpoint"},
		{"POST", eps + "/" + ep + "/replay", `{"since":"yesterday"}`, 400, "since"},
		{"POST", eps + "/" + ep + "/replay", `{"since":"2999-01-01T00:00:00Z"}`, 400, "since"},
		{"POST", eps + "/" + ep + "/replay", `{"since":1}`, 400, "since"},
		{"POST", eps + "/" + ep + "/replay", `{"sinse":"2020-01-01T00:00:00Z"}`, 400, "sinse"},
		{"POST", base + "/v1/apps/" + other + "/endpoints/" + ep + "/replay", `{}`, 404, "endpoint"},
		{"POST", eps + "/ep_nope/replay", ``, 404, "endpoint"},
		{"GET", eps + "/" + ep + "/replay/rpl_nope", ``, 404, "replay job"},
		{"GET", base + "/v1/apps/" + other + "/endpoints/" + ep + "/replay/rpl_nope", ``, 404, "endpoint"},
		{"GET", eps + "/" + ep + "/replays?limit=0", ``, 400, "limit"},
		{"GET", eps + "/" + ep + "/replays?after=" + ep, ``, 400, "after"},
		{"GET", base + "/v1/apps/" + other + "/endpoints/" + ep + "/replays", ``, 404, "endpoint"},
		{"POST", eps + "/" + ep + "/replay/rpl_nope/cancel", ``, 404, "replay job"},
		{"POST", base + "/v1/apps/" + other + "/endpoints/" + ep + "/replay/rpl_nope/cancel", ``, 404, "endpoint"},
		{"GET", msgs + "?event_type=a%20b", ``, 400, "event_type"},
		{"GET", msgs + "?before=yesterday", ``, 400, "before"},
		{"GET", msgs + "?after=2020", ``, 400, "after"},
		{"GET", msgs + "?limit=0", ``, 400, "limit"},
		{"GET", msgs + "?cursor=" + ep, ``, 400, "cursor"},
		{"GET", base + "/v1/apps/app_nope/messages", ``, 404, "application"},
		{"GET", eps + "/" + ep + "/deliveries", ``, 400, "state"},
		{"GET", eps + "/" + ep + "/deliveries?state=sent", ``, 400, "state"},
		{"GET", eps + "/" + ep + "/deliveries?state=dead&cursor=" + msg, ``, 400, "cursor"},
		{"GET", eps + "/" + ep + "/deliveries?state=retry&after=1", ``, 400, "after"},
		{"GET", eps + "/" + ep + "/deliveries?state=retry&cursor=" + ep, ``, 400, "cursor"},
		{"GET", eps + "/" + ep + "/deliveries?state=delivered&limit=x", ``, 400, "limit"},
		{"GET", msgs + "?endpoint_id=" + app, ``, 400, "endpoint_id"},
		{"GET", eps + "/" + ep + "/deliveries?state=dead&after=-1", ``, 400, "after"},
		{"GET", eps + "/" + ep + "/deliveries?state=dead&limit=1001", ``, 400, "limit"},
		{"GET", base + "/v1/apps/" + other + "/endpoints/" + ep + "/deliveries?state=dead", ``, 404, "endpoint"},
	} {
		r := call(t, c.method, c.url, token, c.body)
		msg, _ := r.body["error"].(string)
		field, _ := r.body["field"].(string)
		if r.status != c.status || field != c.field && !strings.Contains(msg, c.field) {
			t.Errorf("%s %s %s = %d %v; want %d naming %q", c.method, strings.TrimPrefix(c.url, base), c.body, r.status, r.body, c.status, c.field)
		}
	}
	if d := cmp.Diff(before, snapshot(t, base, app, other)); d != "" {
		t.Errorf("the refused calls changed something (-before +after):\n%s", d)
	}
	// An endpoint's stream is a stream of the dead-letter route.
	mustCall(t, 200, "GET", base+"/v1/streams/"+ep+"/dead", "")
}

// snapshot is everything the platform's API shows of the two
// applications and the event types.
func snapshot(t *testing.T, base string, apps ...string) string {
	t.Helper()
	all := map[string]any{
		"apps":        mustCall(t, 200, "GET", base+"/v1/apps", ""),
		"event_types": mustCall(t, 200, "GET", base+"/v1/event-types", ""),
	}
	for _, a := range apps {
		eps := mustCall(t, 200, "GET", base+"/v1/apps/"+a+"/endpoints", "")
		all[a] = eps
		for _, e := range eps["data"].([]any) {
			id := e.(map[string]any)["id"].(string)
			all[id+"/secrets"] = mustCall(t, 200, "GET", base+"/v1/apps/"+a+"/endpoints/"+id+"/secrets", "")
			all[id+"/replays"] = mustCall(t, 200, "GET", base+"/v1/apps/"+a+"/endpoints/"+id+"/replays", "")
		}
	}
	b, _ := json.MarshalIndent(all, "", " ")
	return string(b)
}

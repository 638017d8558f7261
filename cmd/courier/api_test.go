// This file proves the ingest API on a real SQLite file and a real HTTP
// receiver built with the receiver kit: a publish is stored and delivered
// once, a resend is acknowledged again and changes nothing, dead letters
// can be listed and replayed, a pause stops delivery until the resume, and
// every error path answers a 4xx with a JSON error naming what was wrong
// while changing nothing.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/webhook/receiver"
)

const token = "test-token-0123456789"

// sink is a receiver built with the kit that counts what its application
// applied, by ID, and answers each stream's events with a status the
// test chooses.
type sink struct {
	srv     *httptest.Server
	mu      sync.Mutex
	applied map[string]int
	status  int       // what the app answers; 0 means 204
	rec     *recorder // if set, logs each apply for invariants.Check
}

func newSink(t *testing.T) *sink { return newSinkWrapped(t, nil) }

// newSinkWrapped is newSink with wrap (if not nil) around the kit.
func newSinkWrapped(t *testing.T, wrap func(http.Handler) http.Handler) *sink {
	s := &sink{applied: map[string]int{}}
	h, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: time.Hour, Store: receiver.NewMemory(),
		Logger: slog.New(slog.DiscardHandler)},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ev, _ := receiver.FromContext(r.Context())
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.status != 0 {
				w.WriteHeader(s.status)
				return
			}
			s.applied[ev.ID]++
			if s.rec != nil {
				s.rec.add(invariants.Entry{Kind: invariants.Applied, ID: ev.ID, Seq: ev.Seq, Attempt: ev.Attempt})
			}
			w.WriteHeader(http.StatusNoContent)
		}))
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	s.srv = httptest.NewServer(h)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *sink) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied[id]
}

func (s *sink) setStatus(code int) {
	s.mu.Lock()
	s.status = code
	s.mu.Unlock()
}

// startServe runs serveConfig in this process on a fresh SQLite file and
// a free port; it stops at the test's end.
func startServe(t *testing.T, sinkURL string, extra string) string {
	t.Helper()
	return startServeWith(t, sinkURL, "max_attempts = 2\n"+extra, nil)
}

// startServeStream is startServe with the stream's policy lines (and
// anything after them) all given by the caller.
func startServeStream(t *testing.T, sinkURL string, stream string) string {
	t.Helper()
	return startServeWith(t, sinkURL, stream, nil)
}

// startServeWith is startServeStream with set (if not nil) applied to
// the parsed config.
func startServeWith(t *testing.T, sinkURL string, stream string, set func(*Config)) string {
	t.Helper()
	c, err := ParseConfig(`
api_tokens = ["` + token + `"]
allow_loopback = true
poll = "50ms"
max_request_bytes = 4096
shutdown_timeout = "2s"
[streams.orders]
url = "` + sinkURL + `/orders"
secrets = ["` + secret + `"]
base_backoff = "50ms"
max_backoff = "100ms"
max_payload_bytes = 1024
` + stream)
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

// startServeConfig runs serveConfig on c in this process; it stops at
// the test's end.
func startServeConfig(t *testing.T, c *Config) string {
	t.Helper()
	base, _ := startServeHooks(t, c, nil)
	return base
}

// startServeHooks is startServeConfig with hooks h (nil: none); it also
// returns a func that stops serve and waits for it, once.
func startServeHooks(t *testing.T, c *Config, h *hooks) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveConfig(ctx, c, slog.New(slog.DiscardHandler), ready, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := await(t, "serve after its context ended", done, testLimit); err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case addr := <-ready:
		return "http://" + addr, stop
	case err := <-done:
		t.Fatalf("serve ended at start: %v", err)
	case <-time.After(testLimit):
		t.Fatalf("serve did not start within %v", testLimit)
	}
	return "", stop
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
}

func call(t *testing.T, method, url, tok, body string) reply {
	t.Helper()
	var h http.Header
	if tok != "" {
		h = http.Header{"Authorization": {"Bearer " + tok}}
	}
	return callHeader(t, method, url, h, body)
}

// callHeader is call with the request's headers given whole.
func callHeader(t *testing.T, method, url string, h http.Header, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(b, &r.body); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %q", method, url, b)
	}
	return r
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("not within 10s: %s", what)
}

func TestPublishDeliversOnceAndResendChangesNothing(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	r := call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-1","payload":{"total":42}}`)
	if r.status != http.StatusCreated || r.body["seq"] != 1.0 || r.body["duplicate"] != false {
		t.Fatalf("publish = %d %v; want 201, seq 1", r.status, r.body)
	}
	eventually(t, "o-1 delivered", func() bool {
		return call(t, "GET", base+"/v1/events/o-1", token, "").body["state"] == "delivered"
	})
	r = call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-1","payload":{"total":42}}`)
	if r.status != http.StatusOK || r.body["seq"] != 1.0 || r.body["duplicate"] != true {
		t.Fatalf("resend = %d %v; want 200, seq 1, duplicate", r.status, r.body)
	}
	if r := call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-1","payload":{"total":99}}`); r.status != http.StatusConflict {
		t.Fatalf("resend with another payload = %d %v; want 409", r.status, r.body)
	}
	time.Sleep(200 * time.Millisecond) // several polls: a resend must not be sent again
	got := call(t, "GET", base+"/v1/events/o-1", token, "")
	if got.body["attempts"] != 1.0 || s.count("o-1") != 1 {
		t.Errorf("after a resend: attempts %v, applied %d times; want 1 and 1", got.body["attempts"], s.count("o-1"))
	}
	if p, _ := json.Marshal(got.body["payload"]); !bytes.Equal(p, []byte(`{"total":42}`)) {
		t.Errorf("payload %s; the resend must not change it", p)
	}
}

func TestDeadLetterListAndReplay(t *testing.T) {
	s := newSink(t)
	s.setStatus(http.StatusGone) // rejected by the default status policy: dead at once
	base := startServe(t, s.srv.URL, "")
	call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-dead","payload":1}`)
	eventually(t, "o-dead dead", func() bool {
		return call(t, "GET", base+"/v1/events/o-dead", token, "").body["state"] == "dead"
	})
	ev := call(t, "GET", base+"/v1/events/o-dead", token, "").body
	last, _ := ev["last_outcome"].(map[string]any)
	if ev["dead_reason"] != "rejected" || ev["attempts"] != 1.0 || last == nil || last["status"] != 410.0 ||
		!strings.Contains(last["detail"].(string), "endpoint is gone") {
		t.Errorf("dead event = %v; want reason rejected after 1 attempt, last status 410 saying the endpoint is gone", ev)
	}
	dead := call(t, "GET", base+"/v1/streams/orders/dead", token, "")
	list, _ := dead.body["dead"].([]any)
	if dead.status != 200 || len(list) != 1 || list[0].(map[string]any)["id"] != "o-dead" {
		t.Fatalf("dead letters = %d %v; want o-dead", dead.status, dead.body)
	}
	s.setStatus(0)
	if r := call(t, "POST", base+"/v1/events/o-dead/replay", token, ""); r.status != 200 || r.body["state"] != "pending" {
		t.Fatalf("replay = %d %v; want 200, pending", r.status, r.body)
	}
	eventually(t, "o-dead delivered after replay", func() bool { return s.count("o-dead") == 1 })
	if r := call(t, "POST", base+"/v1/events/o-dead/replay", token, ""); r.status != http.StatusConflict {
		t.Errorf("second replay = %d %v; want 409: it is no dead letter now", r.status, r.body)
	}
}

func TestPauseHoldsDeliveryUntilResume(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	if r := call(t, "POST", base+"/v1/streams/orders/pause", token, ""); r.status != 200 || r.body["paused"] != true {
		t.Fatalf("pause = %d %v", r.status, r.body)
	}
	if r := call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"o-p","payload":1}`); r.status != 201 {
		t.Fatalf("publish while paused = %d %v; want 201 (stored, waiting)", r.status, r.body)
	}
	time.Sleep(500 * time.Millisecond) // ten polls
	if n := s.count("o-p"); n != 0 {
		t.Fatalf("delivered %d times while paused", n)
	}
	if st := call(t, "GET", base+"/v1/events/o-p", token, "").body["state"]; st != "pending" {
		t.Fatalf("state while paused = %v; want pending", st)
	}
	call(t, "POST", base+"/v1/streams/orders/resume", token, "")
	eventually(t, "o-p delivered after resume", func() bool { return s.count("o-p") == 1 })
}

func TestAPIErrorsAnswer4xxAndChangeNothing(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "[streams.other]\nurl = \""+s.srv.URL+"\"\nsecrets = [\""+secret+"\"]\n")
	call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"taken","payload":1}`)
	big := `{"id":"big","payload":"` + strings.Repeat("x", 2000) + `"}`
	huge := `{"id":"huge","payload":"` + strings.Repeat("x", 5000) + `"}`
	for _, tc := range []struct {
		name, method, path, tok, body string
		status                        int
		want                          string // in the error
		id                            string // must not exist afterwards
	}{
		{"no token", "POST", "/v1/streams/orders/events", "", `{"id":"n1","payload":1}`, 401, "missing bearer token", "n1"},
		{"wrong token", "POST", "/v1/streams/orders/events", "test-token-0123456780", `{"id":"n2","payload":1}`, 401, "not accepted", "n2"},
		{"wrong token on read", "GET", "/v1/events/taken", "nope", "", 401, "not accepted", ""},
		{"unknown stream", "POST", "/v1/streams/nope/events", token, `{"id":"n3","payload":1}`, 404, `unknown stream "nope"`, "n3"},
		{"malformed JSON", "POST", "/v1/streams/orders/events", token, `{"id":"n4",`, 400, "malformed JSON", "n4"},
		{"unknown field", "POST", "/v1/streams/orders/events", token, `{"id":"n5","payload":1,"prio":2}`, 400, `unknown field "prio"`, "n5"},
		{"trailing data", "POST", "/v1/streams/orders/events", token, `{"id":"n6","payload":1} {}`, 400, "data after the object", "n6"},
		{"missing id", "POST", "/v1/streams/orders/events", token, `{"payload":1}`, 400, "id is missing", ""},
		{"missing payload", "POST", "/v1/streams/orders/events", token, `{"id":"n7"}`, 400, "payload is missing", "n7"},
		{"payload over the stream's limit", "POST", "/v1/streams/orders/events", token, big, 413, "max_payload_bytes", "big"},
		{"body over the request limit", "POST", "/v1/streams/orders/events", token, huge, 413, "max_request_bytes", "huge"},
		{"id the channel cannot carry", "POST", "/v1/streams/orders/events", token, `{"id":"a\nb","payload":1}`, 422, "event ID", "a\nb"},
		{"id taken on another stream", "POST", "/v1/streams/other/events", token, `{"id":"taken","payload":1}`, 409, `event ID "taken" belongs to another stream`, ""},
		{"get unknown id", "GET", "/v1/events/ghost", token, "", 404, `no event with id "ghost"`, ""},
		{"get an id with a NUL byte", "GET", "/v1/events/a%00b", token, "", 400, "NUL byte", ""},
		{"get an id that is not UTF-8", "GET", "/v1/events/a%FFb", token, "", 400, "not valid UTF-8", ""},
		{"replay an id with a NUL byte", "POST", "/v1/events/a%00b/replay", token, "", 400, "NUL byte", ""},
		{"dead of unknown stream", "GET", "/v1/streams/nope/dead", token, "", 404, "unknown stream", ""},
		{"dead with bad after", "GET", "/v1/streams/orders/dead?after=x", token, "", 400, "after", ""},
		{"dead with bad limit", "GET", "/v1/streams/orders/dead?limit=0", token, "", 400, "limit", ""},
		{"replay unknown id", "POST", "/v1/events/ghost/replay", token, "", 404, "no event", ""},
		{"replay a live event", "POST", "/v1/events/taken/replay", token, "", 409, "not a dead letter", ""},
		{"pause unknown stream", "POST", "/v1/streams/nope/pause", token, "", 404, "unknown stream", ""},
		{"resume unknown stream", "POST", "/v1/streams/nope/resume", token, "", 404, "unknown stream", ""},
		{"unknown route", "GET", "/v2/anything", token, "", 404, "no route", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.method, base+tc.path, tc.tok, tc.body)
			msg, _ := r.body["error"].(string)
			if r.status != tc.status || !strings.Contains(msg, tc.want) {
				t.Errorf("%s %s = %d %q; want %d naming %q", tc.method, tc.path, r.status, msg, tc.status, tc.want)
			}
			if tc.id != "" && !strings.ContainsAny(tc.id, "\n") {
				if g := call(t, "GET", base+"/v1/events/"+tc.id, token, ""); g.status != 404 {
					t.Errorf("after the refusal, event %q exists: %v", tc.id, g.body)
				}
			}
		})
	}
	// "taken" is still on orders, seq 1, untouched by the refused publish on other.
	if g := call(t, "GET", base+"/v1/events/taken", token, ""); g.body["stream"] != "orders" || g.body["seq"] != 1.0 {
		t.Errorf("taken = %v; want orders seq 1", g.body)
	}
}

func TestOperationsEndpoints(t *testing.T) {
	s := newSink(t)
	base := startServe(t, s.srv.URL, "")
	call(t, "POST", base+"/v1/streams/orders/events", token, `{"id":"m-1","payload":1}`)
	eventually(t, "m-1 delivered", func() bool { return s.count("m-1") == 1 })
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := call(t, "GET", base+p, "", ""); r.status != 200 {
			t.Errorf("%s = %d %v", p, r.status, r.body)
		}
	}
	eventually(t, "metrics carry the runtime's counters", func() bool {
		resp, err := client.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `courier_deliveries_total{`) && strings.Contains(string(b), `courier_attempts_total{`)
	})
}

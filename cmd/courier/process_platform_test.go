// This file proves the platform's path of courier serve as a user runs
// it: messages published through POST /v1/apps/{app}/messages fan out to
// three endpoints subscribed to their event type, while the process is
// killed with SIGKILL and started again several times (on SQLite; on
// PostgreSQL, two processes share the database and each in turn is
// killed and started again). The producer publishes each message under
// an idempotency key and publishes it again after an error or a lost
// reply. Afterwards every acknowledged message was applied once, by
// webhook-id, at every subscribed endpoint's receiver (built with the
// kit), the endpoint that filters its type out got nothing, and no key
// was accepted as two messages.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fanSink is a kit receiver (newSinkWrapped: it applies each webhook-id
// once and counts what it applied) behind a wrapper that counts the
// requests reaching each URL path and makes each take a few
// milliseconds, so that attempts are in flight when a process is killed.
type fanSink struct {
	*sink
	mu     sync.Mutex
	byPath map[string]int
}

func newFanSink(t *testing.T) *fanSink {
	f := &fanSink{byPath: map[string]int{}}
	f.sink = newSinkWrapped(t, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				f.mu.Lock()
				f.byPath[r.URL.Path]++
				f.mu.Unlock()
				time.Sleep(3 * time.Millisecond)
			}
			inner.ServeHTTP(w, r)
		})
	})
	return f
}

func (f *fanSink) requests(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byPath[path]
}

func (f *fanSink) requestsAll() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.byPath {
		n += c
	}
	return n
}

// appliedIDs is every webhook-id the kit's application applied, with
// how many times.
func (f *fanSink) appliedIDs() map[string]int {
	f.sink.mu.Lock()
	defer f.sink.mu.Unlock()
	out := make(map[string]int, len(f.sink.applied))
	for id, n := range f.sink.applied {
		out[id] = n
	}
	return out
}

// writePlatformConfig writes a serve config with no stream: only the
// platform's endpoints deliver. store is its database line(s).
func writePlatformConfig(t *testing.T, store string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "courier.toml")
	text := `api_tokens = ["` + token + `"]
allow_loopback = true
poll = "100ms"
lease_ttl = "2s"
shutdown_timeout = "2s"
` + store + "\n"
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fanProducer publishes each key's message in order through whichever
// process answers, again and again until one answer acknowledges it, as
// a producer that keeps its idempotency key across retries does.
type fanProducer struct {
	app   string
	bases baseSet
	mu    sync.Mutex
	// acks holds every acknowledging answer's message ID, by key: one
	// per key unless a key was accepted as two messages.
	acks map[string][]string
	// fanouts holds the endpoints each acknowledged message fans out to.
	fanouts map[string][]string
	// replays counts answers 200: the key was already used, as after a
	// reply lost to a SIGKILL.
	replays int
	// retries counts publishes sent again after an error or a 5xx.
	retries int
}

func (p *fanProducer) ackedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// publishMessage sends key's message once. It reports the message and
// the status if courier acknowledged it (201, 202 or 200); a connection
// error, a lost reply or a 503 is no acknowledgement.
func publishMessage(base, app, key string) (msg map[string]any, status int, err error) {
	body := fmt.Sprintf(`{"event_type":"invoice.paid","payload":{"key":%q},"idempotency_key":%q}`, key, key)
	req, _ := http.NewRequest("POST", base+"/v1/apps/"+app+"/messages", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, nil // the reply was cut short: not an acknowledgement
	}
	switch resp.StatusCode {
	case 200, 201, 202:
		if err := json.Unmarshal(b, &msg); err != nil {
			return nil, 0, fmt.Errorf("publish %s: status %d with %q", key, resp.StatusCode, b)
		}
		return msg, resp.StatusCode, nil
	case 503:
		return nil, 0, nil
	}
	return nil, 0, fmt.Errorf("publish %s: status %d %s", key, resp.StatusCode, b)
}

func (p *fanProducer) run(ctx context.Context, t *testing.T, keys []string) {
	for i, key := range keys {
		var msg map[string]any
		var status int
		ok := p.bases.retry(ctx, t, i, func(base string) (bool, error) {
			var err error
			msg, status, err = publishMessage(base, p.app, key)
			if err == nil && msg == nil {
				p.mu.Lock()
				p.retries++
				p.mu.Unlock()
			}
			return msg != nil, err
		})
		if !ok {
			return
		}
		p.acknowledged(t, key, msg, status)
	}
}

// acknowledged notes the message an answer acknowledged for key, and
// the endpoints it fans out to.
func (p *fanProducer) acknowledged(t *testing.T, key string, msg map[string]any, status int) {
	id, _ := msg["id"].(string)
	var eps []string
	for ep := range deliveries(t, msg) {
		eps = append(eps, ep)
	}
	slices.Sort(eps)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.acks[key] = append(p.acks[key], id)
	p.fanouts[id] = eps
	if status == 200 {
		p.replays++
	}
}

func TestProcessPlatformSIGKILLFanOutLosesNothing(t *testing.T) {
	bin := buildBinary(t)
	cfg := writePlatformConfig(t, `database = "`+filepath.Join(t.TempDir(), "courier.db")+`"`)
	killFanOut(t, bin, cfg, 1)
}

func TestProcessPlatformPostgresSIGKILLFanOutLosesNothing(t *testing.T) {
	dsn := os.Getenv("COURIER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("COURIER_TEST_POSTGRES is unset: set it to a PostgreSQL DSN to kill courier serve processes sharing one database")
	}
	bin := buildBinary(t)
	schema := fmt.Sprintf("plat_kill_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	cfg := writePlatformConfig(t, `postgres = "`+dsn+`"
postgres_schema = "`+schema+`"`)
	killFanOut(t, bin, cfg, 2)
}

// killFanOut runs n processes of bin on cfg, creates the application, its
// event types and endpoints, publishes while it kills each process in
// turn (three kills in all) and starts it again, and checks what the
// receiver applied against what the producer was acknowledged.
func killFanOut(t *testing.T, bin, cfg string, n int) {
	const kills, messages = 3, 240
	s := newFanSink(t)
	procs := make([]*proc, n)
	bases := make([]string, n)
	for i := range procs {
		procs[i] = startProc(t, bin, cfg)
		bases[i] = procs[i].base
	}
	base := bases[0]
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"invoice.paid"}`)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"user.created"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	endpoint := func(path, extra string) string {
		return mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints",
			`{"url":"`+s.srv.URL+path+`","secrets":["`+secret+`"]`+extra+`}`)["id"].(string)
	}
	subscribed := []string{
		endpoint("/paid", `,"event_types":["invoice.paid"]`),
		endpoint("/paid-independent", `,"event_types":["invoice.paid"],"ordering":"independent"`),
		endpoint("/all", ``),
	}
	slices.Sort(subscribed)
	filtered := endpoint("/users", `,"event_types":["user.created"]`)

	prod := &fanProducer{app: app, acks: map[string][]string{}, fanouts: map[string][]string{}}
	prod.bases.set(bases...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two producers at once, each with its own keys, so that publishes
	// are in flight in different steps of the fan-out at each kill.
	var keys [2][]string
	for i := range messages {
		keys[i%2] = append(keys[i%2], fmt.Sprintf("order-%04d", i))
	}
	var wg sync.WaitGroup
	for _, ks := range keys {
		wg.Add(1)
		go func() { defer wg.Done(); prod.run(ctx, t, ks) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	for k := range kills {
		at := (k + 1) * messages / (kills + 1)
		until(t, fmt.Sprintf("%d messages acknowledged", at), testLimit, func() bool { return prod.ackedCount() >= at })
		i := k % n
		procs[i].kill(t) // mid-flow: publishes, fan-outs and deliveries in progress
		t.Logf("SIGKILL %d of pid %d after %d acknowledged", k+1, procs[i].cmd.Process.Pid, prod.ackedCount())
		procs[i] = startProc(t, bin, cfg)
		bases[i] = procs[i].base
		prod.bases.set(bases...)
	}
	await(t, "the producers", done, testLimit)
	produced := time.Now()
	if t.Failed() {
		return
	}

	// Each check names its first few failures and counts the rest.
	failures := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if failures++; failures <= 10 {
			t.Errorf(format, args...)
		}
	}

	// No key was accepted as two messages: every answer for a key named
	// one message, and the application holds one message per key.
	want := map[string]bool{} // every delivery's webhook-id
	for key, msgs := range prod.acks {
		if slices.ContainsFunc(msgs, func(id string) bool { return id != msgs[0] }) {
			fail("key %s was acknowledged as messages %v; want one", key, msgs)
		}
		if got := prod.fanouts[msgs[0]]; !slices.Equal(got, subscribed) {
			fail("message %s (key %s) fans out to %v; want the subscribed endpoints %v", msgs[0], key, got, subscribed)
		}
		for _, ep := range subscribed {
			want[msgs[0]+"."+ep] = true
		}
	}
	if len(prod.acks) != messages {
		t.Fatalf("%d keys acknowledged; want %d", len(prod.acks), messages)
	}
	stored := map[string][]string{} // message IDs by idempotency key
	for cursor := ""; ; {
		page := mustCall(t, 200, "GET", bases[0]+"/v1/apps/"+app+"/messages?limit=100&cursor="+cursor, "")
		for _, m := range page["data"].([]any) {
			m := m.(map[string]any)
			key, _ := m["idempotency_key"].(string)
			stored[key] = append(stored[key], m["id"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	for key, msgs := range stored {
		if acked := prod.acks[key]; len(msgs) != 1 || len(acked) == 0 || msgs[0] != acked[0] {
			fail("the application holds %d messages under key %q (%v); want one, the one acknowledged %v",
				len(msgs), key, msgs[:min(len(msgs), 3)], acked)
		}
	}
	if len(stored) != messages {
		fail("the application holds messages under %d keys; want %d", len(stored), messages)
	}

	// Every delivery is applied at its endpoint, once; nothing else is. A
	// strict endpoint whose attempt was in flight at a kill sends nothing
	// more until that attempt's AttemptTimeout (30s) has passed: the
	// killed process might still have been sending it.
	allApplied := func() bool {
		got := s.appliedIDs()
		for id := range want {
			if got[id] == 0 {
				return false
			}
		}
		return true
	}
	for end := time.Now().Add(testLimit); !allApplied() && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("waited %v after the producers finished for every delivery to be applied", time.Since(produced).Round(time.Millisecond))
	lost, twice, extra := 0, 0, 0
	got := s.appliedIDs()
	for id := range want {
		switch n := got[id]; {
		case n == 0:
			lost++
			fail("delivery %s of an acknowledged message was never applied", id)
		case n > 1:
			twice++
			fail("delivery %s was applied %d times", id, n)
		}
	}
	for id := range got {
		if !want[id] {
			extra++
			fail("applied %s, which is no delivery of an acknowledged message to a subscribed endpoint", id)
		}
	}
	if r := s.requests("/users"); r != 0 {
		fail("the endpoint %s filtering user.created got %d requests; want none", filtered, r)
	}
	t.Logf("acknowledged %d messages (%d answers 200 to a key already used, %d publishes sent again); "+
		"deliveries %d, applied %d, requests %d (duplicates absorbed by the kit: %d), lost %d, applied twice %d, unexpected %d",
		len(prod.acks), prod.replays, prod.retries, len(want), len(got), s.requestsAll(), s.requestsAll()-len(got), lost, twice, extra)
	if failures > 0 {
		t.Fatalf("%d failures (the first 10 above)", failures)
	}

	// The store says delivered too (applied is not settled: a delivery
	// the killed process sent but never recorded is sent again, and
	// absorbed by the kit, first); then each process stops on SIGTERM.
	deadline := time.Now().Add(time.Minute)
	for id := range want {
		for {
			r := call(t, "GET", bases[0]+"/v1/events/"+id, token, "")
			if r.status == 200 && r.body["state"] == "delivered" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delivery %s is %d %v a minute after every delivery was applied; want delivered", id, r.status, r.body["state"])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, p := range procs {
		signalProc(t, p, syscall.SIGTERM)
		if err := exitOf(t, "the process after SIGTERM", p.cmd, testLimit); err != nil {
			t.Errorf("after SIGTERM: %v; want exit 0", err)
		}
	}
}

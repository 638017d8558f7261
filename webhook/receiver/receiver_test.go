// Tests that the middleware, on real loopback HTTP servers and against
// every Store (memory, SQLite on a temp file, PostgreSQL when
// COURIER_TEST_POSTGRES is set): refuses unsigned, badly signed, stale,
// malformed and oversize requests with 4xx before the application; lets
// exactly one of several concurrent deliveries of one ID reach it and
// answers the others 2xx; records nothing for an application that fails
// or panics (and, on SQL, rolls its effect back); applies only rising
// sequences on strict streams; forgets IDs after the window; and works
// end to end with courier's HTTP channel.
package receiver

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// testClient is the tests' HTTP client: no call waits longer than its
// Timeout (http.DefaultClient would wait for ever), far below go test's
// 10-minute default.
var testClient = &http.Client{Timeout: 30 * time.Second}

var (
	secret = webhook.NewSecret()
	signer = func() *webhook.Signer {
		s, err := webhook.ParseSecret(secret)
		if err != nil {
			panic(err)
		}
		sg, err := webhook.NewSigner(s)
		if err != nil {
			panic(err)
		}
		return sg
	}()
	quiet = slog.New(slog.DiscardHandler)
)

// storeKind makes a fresh store and, for SQL, the db its effects go to.
type storeKind struct {
	name string
	open func(t *testing.T) (Store, *sql.DB)
}

func stores(t *testing.T) []storeKind {
	kinds := []storeKind{
		{"memory", func(t *testing.T) (Store, *sql.DB) { return NewMemory(), nil }},
		{"sqlite", openSQLite},
	}
	if os.Getenv("COURIER_TEST_POSTGRES") != "" {
		kinds = append(kinds, storeKind{"postgres", openPostgres})
	}
	return kinds
}

// TestMain names the variable once, up front, when the PostgreSQL
// subtests will not run. go test shows it with -v, or run in this
// directory; given packages (go test ./...) it shows nothing of a passing
// package but its ok line, which no test can add to.
func TestMain(m *testing.M) {
	if os.Getenv("COURIER_TEST_POSTGRES") == "" {
		fmt.Println("receiver: COURIER_TEST_POSTGRES is not set: the SQL store is tested on SQLite only, its PostgreSQL subtests are not run (set it, e.g. COURIER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	os.Exit(m.Run())
}

// TestPostgres says, once, whether the store tests ran on PostgreSQL.
func TestPostgres(t *testing.T) {
	url := os.Getenv("COURIER_TEST_POSTGRES")
	if url == "" {
		t.Skip("COURIER_TEST_POSTGRES is not set: the SQL store was tested on SQLite only; set it to a PostgreSQL URL to test it there too")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("COURIER_TEST_POSTGRES is set but the server does not answer: %v", err)
	}
}

func openSQLite(t *testing.T) (Store, *sql.DB) {
	path := filepath.Join(t.TempDir(), "receiver.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return openSQL(t, db, SQLite)
}

// openPostgres gives each test its own schema, dropped afterwards.
func openPostgres(t *testing.T) (Store, *sql.DB) {
	url := os.Getenv("COURIER_TEST_POSTGRES")
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "receiver_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("postgres at COURIER_TEST_POSTGRES: %v", err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE") })
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := sql.Open("pgx", url+sep+"search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return openSQL(t, db, Postgres)
}

func openSQL(t *testing.T, db *sql.DB, d Dialect) (Store, *sql.DB) {
	s, err := NewSQL(context.Background(), db, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE effects (id TEXT NOT NULL, seq BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return s, db
}

// app is the application behind the middleware. It counts its calls and
// its concurrency per ID, writes its effect in the claim's transaction
// when there is one, and answers what status says.
type app struct {
	mu          sync.Mutex
	calls       map[string]int
	inflight    map[string]int
	maxInflight int
	order       []uint64 // sequences applied, in order
	status      func(ev Event) int
	delay       time.Duration
}

func newApp() *app {
	return &app{calls: map[string]int{}, inflight: map[string]int{}, status: func(Event) int { return http.StatusNoContent }}
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev, ok := FromContext(r.Context())
	if !ok {
		panic("the app was reached without a verified event")
	}
	a.mu.Lock()
	a.calls[ev.ID]++
	a.inflight[ev.ID]++
	a.maxInflight = max(a.maxInflight, a.inflight[ev.ID])
	status := a.status(ev)
	a.mu.Unlock()
	if tx := Tx(r.Context()); tx != nil {
		if _, err := tx.ExecContext(r.Context(), "INSERT INTO effects (id, seq) VALUES ($1, $2)", ev.ID, int64(ev.Seq)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	time.Sleep(a.delay)
	a.mu.Lock()
	a.inflight[ev.ID]--
	if status < 300 {
		a.order = append(a.order, ev.Seq)
	}
	a.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, "applied "+ev.ID)
}

func (a *app) callsOf(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[id]
}

// serve runs the middleware around app on a loopback server.
func serve(t *testing.T, cfg Config, a http.Handler) *httptest.Server {
	t.Helper()
	if cfg.Secrets == nil {
		cfg.Secrets = []string{secret}
	}
	if cfg.Window == 0 {
		cfg.Window = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	h, err := New(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

type msg struct {
	id     string
	stream string
	seq    uint64
	body   string
	at     time.Time
}

// post sends a signed delivery and returns the status and body.
func post(t *testing.T, url string, m msg) (int, string) {
	t.Helper()
	if m.at.IsZero() {
		m.at = time.Now()
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(m.body))
	signer.SetHeaders(req.Header, m.id, m.at, []byte(m.body))
	if m.stream != "" {
		req.Header.Set(webhook.HeaderStream, m.stream)
	}
	if m.seq != 0 {
		req.Header.Set(webhook.HeaderSequence, strconv.FormatUint(m.seq, 10))
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func effects(t *testing.T, db *sql.DB, id string) int {
	t.Helper()
	if db == nil {
		return -1
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM effects WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRefusalsNeverReachTheApp(t *testing.T) {
	a := newApp()
	s := serve(t, Config{Store: NewMemory(), MaxBodyBytes: 1 << 10, Strict: false}, a)
	strict := serve(t, Config{Store: NewMemory(), Strict: true}, a)
	now := time.Now()
	do := func(url string, edit func(r *http.Request), body string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		signer.SetHeaders(req.Header, "evt_x", now, []byte(body))
		edit(req)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	other, _ := webhook.ParseSecret(webhook.NewSecret())
	otherSigner, _ := webhook.NewSigner(other)
	cases := []struct {
		name string
		url  string
		body string
		edit func(r *http.Request)
		want int
	}{
		{"unsigned", s.URL, "{}", func(r *http.Request) { r.Header.Del(webhook.HeaderSignature) }, 400},
		{"no id", s.URL, "{}", func(r *http.Request) { r.Header.Del(webhook.HeaderID) }, 400},
		{"malformed timestamp", s.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderTimestamp, "yesterday") }, 400},
		{"malformed signature", s.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderSignature, "garbage") }, 400},
		{"other secret", s.URL, "{}", func(r *http.Request) { otherSigner.SetHeaders(r.Header, "evt_x", now, []byte("{}")) }, 401},
		{"tampered body", s.URL, "{}", func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader("{ }")); r.ContentLength = 3 }, 401},
		{"stale", s.URL, "{}", func(r *http.Request) { signer.SetHeaders(r.Header, "evt_x", now.Add(-time.Hour), []byte("{}")) }, 401},
		{"from the future", s.URL, "{}", func(r *http.Request) { signer.SetHeaders(r.Header, "evt_x", now.Add(time.Hour), []byte("{}")) }, 401},
		{"oversize", s.URL, strings.Repeat("x", 1<<10+1), func(r *http.Request) {}, 413},
		{"bad sequence", s.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderSequence, "-1") }, 400},
		{"zero sequence", s.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderSequence, "0") }, 400},
		{"bad attempt", s.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderAttempt, "x") }, 400},
		{"strict without sequence", strict.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderStream, "s") }, 400},
		{"strict without stream", strict.URL, "{}", func(r *http.Request) { r.Header.Set(webhook.HeaderSequence, "1") }, 400},
		{"GET", s.URL, "", func(r *http.Request) { r.Method = http.MethodGet }, 405},
	}
	for _, c := range cases {
		if got := do(c.url, c.edit, c.body); got != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, got, c.want)
		}
	}
	if n := a.callsOf("evt_x"); n != 0 {
		t.Errorf("the app was reached %d times by refused requests", n)
	}
	// The probe (HEAD) is answered without the app.
	resp, err := testClient.Head(s.URL)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("HEAD probe: %v %v, want 204", resp, err)
	}
	// And a good request does reach it: the refusals above were not vacuous.
	if code, _ := post(t, s.URL, msg{id: "evt_x", body: "{}"}); code != 204 || a.callsOf("evt_x") != 1 {
		t.Errorf("a good request: HTTP %d, app calls %d", code, a.callsOf("evt_x"))
	}
}

func TestDuplicates(t *testing.T) {
	for _, k := range stores(t) {
		t.Run(k.name, func(t *testing.T) {
			st, db := k.open(t)
			a := newApp()
			s := serve(t, Config{Store: st}, a)
			code, body := post(t, s.URL, msg{id: "evt_1", body: "{}"})
			if code != 204 || a.callsOf("evt_1") != 1 {
				t.Fatalf("first delivery: HTTP %d %q, app calls %d", code, body, a.callsOf("evt_1"))
			}
			for range 3 {
				if code, body := post(t, s.URL, msg{id: "evt_1", body: "{}"}); code != 200 || !strings.Contains(body, "duplicate") {
					t.Errorf("duplicate: HTTP %d %q, want 200 duplicate", code, body)
				}
			}
			if n := a.callsOf("evt_1"); n != 1 {
				t.Errorf("app called %d times for one ID", n)
			}
			if db != nil && effects(t, db, "evt_1") != 1 {
				t.Errorf("%d effects in the database, want 1", effects(t, db, "evt_1"))
			}
		})
	}
}

// Several deliveries of one ID at once: exactly one reaches the app, the
// others wait for it and then get 2xx as duplicates.
func TestConcurrentDuplicates(t *testing.T) {
	for _, k := range stores(t) {
		t.Run(k.name, func(t *testing.T) {
			st, db := k.open(t)
			a := newApp()
			a.delay = 50 * time.Millisecond
			s := serve(t, Config{Store: st}, a)
			const n = 8
			codes := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					code, _ := post(t, s.URL, msg{id: "evt_race", body: "{}"})
					codes <- code
				})
			}
			wg.Wait()
			close(codes)
			for c := range codes {
				if c < 200 || c > 299 {
					t.Errorf("a concurrent delivery got HTTP %d", c)
				}
			}
			if got := a.callsOf("evt_race"); got != 1 {
				t.Errorf("the app was reached %d times, want 1", got)
			}
			if db != nil && effects(t, db, "evt_race") != 1 {
				t.Errorf("%d effects, want 1", effects(t, db, "evt_race"))
			}
		})
	}
}

// An app that fails does not get its ID recorded (nor, on SQL, its
// effect): the retry reaches it. Concurrent deliveries while it fails
// reach it one at a time, never together.
func TestFailingAppIsNotRecorded(t *testing.T) {
	for _, k := range stores(t) {
		t.Run(k.name, func(t *testing.T) {
			st, db := k.open(t)
			a := newApp()
			var fails atomic.Int64
			fails.Store(3)
			a.status = func(Event) int {
				if fails.Add(-1) >= 0 {
					return http.StatusInternalServerError
				}
				return http.StatusOK
			}
			a.delay = 20 * time.Millisecond
			s := serve(t, Config{Store: st}, a)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() { post(t, s.URL, msg{id: "evt_f", body: "{}"}) })
			}
			wg.Wait()
			if got := a.callsOf("evt_f"); got != 4 {
				t.Errorf("app reached %d times, want 4 (3 failures, then the success)", got)
			}
			if a.maxInflight != 1 {
				t.Errorf("the app ran %d deliveries of one ID at once", a.maxInflight)
			}
			if code, _ := post(t, s.URL, msg{id: "evt_f", body: "{}"}); code != 200 || a.callsOf("evt_f") != 4 {
				t.Errorf("after the success: HTTP %d, calls %d; want a 200 duplicate", code, a.callsOf("evt_f"))
			}
			if db != nil && effects(t, db, "evt_f") != 1 {
				t.Errorf("%d effects, want 1 (the failed attempts' effects rolled back)", effects(t, db, "evt_f"))
			}
		})
	}
}

func TestPanickingAppReleasesTheClaim(t *testing.T) {
	for _, k := range stores(t) {
		t.Run(k.name, func(t *testing.T) {
			st, _ := k.open(t)
			var calls atomic.Int64
			app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					panic(http.ErrAbortHandler)
				}
			})
			s := serve(t, Config{Store: st}, app)
			req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader("{}"))
			signer.SetHeaders(req.Header, "evt_p", time.Now(), []byte("{}"))
			if resp, err := testClient.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("the panicking delivery got HTTP %d, want the connection dropped", resp.StatusCode)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader("{}"))
			signer.SetHeaders(req.Header, "evt_p", time.Now(), []byte("{}"))
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatalf("the retry after a panic: %v (claim never released?)", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || calls.Load() != 2 {
				t.Errorf("retry: HTTP %d, calls %d; want 200 and the app reached again", resp.StatusCode, calls.Load())
			}
		})
	}
}

func TestStrictSequences(t *testing.T) {
	for _, k := range stores(t) {
		t.Run(k.name, func(t *testing.T) {
			st, _ := k.open(t)
			a := newApp()
			s := serve(t, Config{Store: st, Strict: true}, a)
			steps := []struct {
				m    msg
				want int
			}{
				{msg{id: "e1", stream: "A", seq: 1}, 204},
				{msg{id: "e3", stream: "A", seq: 3}, 204}, // 2 was dead at the sender: skipped
				{msg{id: "e2", stream: "A", seq: 2}, 409}, // a late attempt of 2: never applied out of order
				{msg{id: "e3", stream: "A", seq: 3}, 200}, // duplicate
				{msg{id: "e1", stream: "A", seq: 1}, 200}, // duplicate, old: still 2xx
				{msg{id: "b1", stream: "B", seq: 1}, 204}, // streams are independent
				{msg{id: "e4", stream: "A", seq: 4}, 204},
				{msg{id: "e4b", stream: "A", seq: 4}, 409}, // same sequence, other ID
			}
			for i, step := range steps {
				if code, body := post(t, s.URL, step.m); code != step.want {
					t.Errorf("step %d (%s seq %d on %s): HTTP %d %q, want %d", i, step.m.id, step.m.seq, step.m.stream, code, body, step.want)
				}
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if fmt.Sprint(a.order) != "[1 3 1 4]" {
				t.Errorf("applied sequences %v, want [1 3 1 4] (A:1, A:3, B:1, A:4)", a.order)
			}
		})
	}
}

// An ID is remembered for Window and forgotten after it.
func TestWindow(t *testing.T) {
	for _, k := range stores(t) {
		t.Run(k.name, func(t *testing.T) {
			st, _ := k.open(t)
			a := newApp()
			var now atomic.Int64
			now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
			clock := func() time.Time { return time.UnixMilli(now.Load()) }
			s := serve(t, Config{Store: st, Window: 24 * time.Hour, Now: clock}, a)
			send := func() int {
				code, _ := post(t, s.URL, msg{id: "evt_w", body: "{}", at: clock()})
				return code
			}
			if send() != 204 {
				t.Fatal("first delivery not applied")
			}
			now.Add((24*time.Hour - time.Second).Milliseconds())
			if c := send(); c != 200 || a.callsOf("evt_w") != 1 {
				t.Errorf("inside the window: HTTP %d, calls %d; want a duplicate", c, a.callsOf("evt_w"))
			}
			now.Add((2 * time.Minute).Milliseconds())
			if c := send(); c != 204 || a.callsOf("evt_w") != 2 {
				t.Errorf("after the window: HTTP %d, calls %d; want it applied again", c, a.callsOf("evt_w"))
			}
			if m, ok := st.(*Memory); ok && m.Len() != 1 {
				t.Errorf("memory store holds %d IDs, want 1", m.Len())
			}
		})
	}
}

// courier's HTTP channel and the kit together: every attempt is delivered
// and only the first reaches the app.
func TestWithHTTPChannel(t *testing.T) {
	a := newApp()
	s := serve(t, Config{Store: NewMemory(), Strict: true}, a)
	ch, err := httpchannel.New(httpchannel.Config{Endpoint: s.URL, Secrets: []string{secret},
		AllowAddrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for n := 1; n <= 3; n++ {
		o := ch.Send(context.Background(), channel.Attempt{Stream: "orders", ID: "evt_42", Seq: 1, Attempt: n, Payload: []byte(`{"n":42}`)})
		if o.Result != machine.OutcomeDelivered {
			t.Errorf("attempt %d: %+v", n, o)
		}
	}
	if o := ch.Probe(context.Background(), "orders"); o.Result != machine.OutcomeDelivered {
		t.Errorf("probe: %+v", o)
	}
	if a.callsOf("evt_42") != 1 {
		t.Errorf("app reached %d times over 3 attempts", a.callsOf("evt_42"))
	}
}

func TestConfigErrors(t *testing.T) {
	app := http.NotFoundHandler()
	good := Config{Secrets: []string{secret}, Window: time.Hour, Store: NewMemory()}
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Window = 0 }, "Window"},
		{func(c *Config) { c.Store = nil }, "Store"},
		{func(c *Config) { c.Secrets = nil }, "Secrets"},
		{func(c *Config) { c.Secrets = []string{"whsec_bad"} }, "Secrets"},
		{func(c *Config) { c.Tolerance = -1 }, "Tolerance"},
		{func(c *Config) { c.MaxBodyBytes = -1 }, "MaxBodyBytes"},
		{func(c *Config) { c.MaxResponseBytes = -1 }, "MaxResponseBytes"},
	}
	for _, c := range cases {
		cfg := good
		c.edit(&cfg)
		if _, err := New(cfg, app); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming %s, got %v", c.want, err)
		}
	}
	if _, err := New(good, nil); err == nil {
		t.Error("New with a nil app succeeded")
	}
	if _, err := New(good, app); err != nil {
		t.Errorf("good config: %v", err)
	}
}

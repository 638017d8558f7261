// This file proves the parts of the middleware that the end-to-end tests
// leave implicit: a configured Logger receives the refusals, the
// application's response reaches the sender whole under the default bound
// and cut at a configured one, and the memory store's pruning frees the
// bookkeeping of the IDs it forgets, not only the IDs.
package receiver

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/webhook"
)

func TestRefusalsGoToTheConfiguredLogger(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s := serve(t, Config{Store: NewMemory(), Logger: logger}, newApp())
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader("{}"))
	signer.SetHeaders(req.Header, "evt_logged", time.Now(), []byte("{}"))
	req.Header.Set(webhook.HeaderSignature, "garbage")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("malformed signature: HTTP %d, want 400", resp.StatusCode)
	}
	if got := logs.String(); !strings.Contains(got, "receiver: refused") || !strings.Contains(got, "id=evt_logged") {
		t.Errorf("the configured logger got %q, want the refusal with its id", got)
	}
}

// longApp answers 200 with a body of n bytes, written 3 at a time so the
// bound is checked across writes, not only within one.
type longApp int

func (n longApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for left := int(n); left > 0; left -= 3 {
		_, _ = io.WriteString(w, strings.Repeat("r", min(left, 3)))
	}
}

func TestResponseBodyReachesTheSenderWithinItsBound(t *testing.T) {
	cases := []struct {
		name     string
		limit    int // Config.MaxResponseBytes
		app      longApp
		wantBody int
	}{
		{"default bound, short answer", 0, 100, 100},
		{"default bound, long answer", 0, DefaultMaxResponseBytes + 10, DefaultMaxResponseBytes},
		{"bound of 4", 4, 100, 4},
	}
	for i, c := range cases {
		s := serve(t, Config{Store: NewMemory(), MaxResponseBytes: c.limit}, c.app)
		code, body := post(t, s.URL, msg{id: "evt_r" + string(rune('a'+i)), body: "{}"})
		if code != http.StatusOK || len(body) != c.wantBody {
			t.Errorf("%s: HTTP %d with %d bytes, want 200 with %d", c.name, code, len(body), c.wantBody)
		}
	}
}

func TestMemoryPruneFreesItsBookkeeping(t *testing.T) {
	m := NewMemory()
	ctx := t.Context()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const window = time.Hour
	for i := range 50 {
		c, v, err := m.Begin(ctx, Key{ID: "evt_" + string(rune('A'+i))}, start, window)
		if err != nil || v != Apply {
			t.Fatalf("Begin %d: %v, %v", i, v, err)
		}
		if err := c.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Past the window, one more claim prunes the 50: neither the IDs nor
	// their place in the pruning order may stay behind.
	c, _, err := m.Begin(ctx, Key{ID: "evt_late"}, start.Add(2*window), window)
	if err != nil {
		t.Fatal(err)
	}
	c.Abort()
	m.mu.Lock()
	ids, order := len(m.applied), len(m.order)
	m.mu.Unlock()
	if ids != 0 || order != 0 {
		t.Errorf("after pruning: %d IDs and %d order entries remembered, want 0 and 0", ids, order)
	}
}

func TestEvery2xxCommits(t *testing.T) {
	// 200 and 299 are the edges of success: the ID is recorded, so the
	// next delivery of it is a duplicate. 199 and 300 are not success.
	for _, status := range []int{200, 299} {
		a := newApp()
		a.status = func(Event) int { return status }
		s := serve(t, Config{Store: NewMemory()}, a)
		post(t, s.URL, msg{id: "evt_2xx", body: "{}"})
		if code, _ := post(t, s.URL, msg{id: "evt_2xx", body: "{}"}); code != http.StatusOK || a.callsOf("evt_2xx") != 1 {
			t.Errorf("after an app answer of %d: redelivery got HTTP %d with %d app calls, want a 200 duplicate and 1 call", status, code, a.callsOf("evt_2xx"))
		}
	}
	for _, status := range []int{199, 300} {
		a := newApp()
		a.status = func(Event) int { return status }
		s := serve(t, Config{Store: NewMemory()}, a)
		post(t, s.URL, msg{id: "evt_n2xx", body: "{}"})
		post(t, s.URL, msg{id: "evt_n2xx", body: "{}"})
		if n := a.callsOf("evt_n2xx"); n != 2 {
			t.Errorf("after an app answer of %d: %d app calls over 2 deliveries, want 2 (nothing recorded)", status, n)
		}
	}
}

func TestReadBodyDoesNotTrustAHugeContentLength(t *testing.T) {
	// A hostile Content-Length far over the limit must not size a buffer;
	// the body is read as the bytes it holds.
	got, err := readBody(strings.NewReader("abc"), 1<<62, 1<<20)
	if err != nil || string(got) != "abc" {
		t.Errorf("readBody(3 bytes, Content-Length 1<<62) = %q, %v; want \"abc\"", got, err)
	}
}

func TestSQLSequenceBounds(t *testing.T) {
	// A sequence is stored as a BIGINT: 1<<63-1 (what the middleware's
	// parser allows at most) fits, 1<<63 is refused before it could wrap
	// negative and fence the stream backwards.
	for _, k := range stores(t) {
		if k.name == "memory" {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			st, _ := k.open(t)
			ctx := t.Context()
			now := time.Now()
			c, v, err := st.Begin(ctx, Key{ID: "evt_max", Stream: "s", Seq: 1<<63 - 1, Strict: true}, now, time.Hour)
			if err != nil || v != Apply {
				t.Fatalf("Begin(seq 1<<63-1) = %v, %v; want Apply", v, err)
			}
			if err := c.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.Begin(ctx, Key{ID: "evt_over", Stream: "s2", Seq: 1 << 63, Strict: true}, now, time.Hour); err == nil {
				t.Error("Begin(seq 1<<63) succeeded, want an error")
			}
		})
	}
}

func TestSQLPrunesExpiredIDsOncePerMinute(t *testing.T) {
	for _, k := range stores(t) {
		if k.name == "memory" {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			st, db := k.open(t)
			ctx := t.Context()
			rows := func() int {
				var n int
				if err := db.QueryRow("SELECT COUNT(*) FROM " + TableApplied).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			apply := func(id string, at time.Time) {
				c, v, err := st.Begin(ctx, Key{ID: id}, at, 30*time.Second)
				if err != nil || v != Apply {
					t.Fatalf("Begin(%s) = %v, %v", id, v, err)
				}
				if err := c.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			apply("evt_a", t0) // the first Begin prunes (nothing yet)
			apply("evt_b", t0.Add(40*time.Second))
			// evt_a expired at t0+30s, but the last prune was at t0: not
			// due before t0+1m, so it stays...
			if n := rows(); n != 2 {
				t.Fatalf("%d rows before the next prune, want 2", n)
			}
			// ...and exactly one minute after the last prune it is due:
			// evt_a goes, evt_b (applied 20s before) and evt_c stay.
			apply("evt_c", t0.Add(time.Minute))
			if n := rows(); n != 2 {
				t.Errorf("%d rows one minute after the last prune, want 2 (evt_b, evt_c)", n)
			}
		})
	}
}

func TestBodyWithAPlausibleContentLengthIsReadWithoutRegrowing(t *testing.T) {
	// readBody's doc: a body whose Content-Length is positive and within
	// the limit is read into one buffer sized for it. The largest such
	// body, exactly the limit, must take no more than that buffer, the
	// bytes.Buffer holding it and the test's own bytes.Reader; reading it
	// with io.ReadAll would regrow a dozen times.
	const limit = 1 << 20
	body := bytes.Repeat([]byte("b"), limit)
	allocs := testing.AllocsPerRun(5, func() {
		got, err := readBody(bytes.NewReader(body), limit, limit)
		if err != nil || len(got) != limit {
			t.Fatalf("readBody: %d bytes, %v", len(got), err)
		}
	})
	if allocs > 3 {
		t.Errorf("reading a %d-byte body with that Content-Length took %.0f allocations, want at most 3", limit, allocs)
	}
}

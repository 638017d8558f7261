// This file proves that a bulk replay job survives a SIGKILL of the
// courier serve that runs it. An endpoint that answered 410 left eight
// dead letters; once it is back, a job replays them two at a time
// ([platform] replay_page = 2), waiting for each pair to be delivered.
// Mid-job the process is killed with SIGKILL. On SQLite the same
// process is started again; on PostgreSQL (COURIER_TEST_POSTGRES) a
// second serve runs beside it from the start, has not run the job when
// the first is killed, and takes it over once the lease has ended.
// Either way the job's saved progress is visible at once, the job
// finishes, every dead letter is delivered, and each was replayed
// exactly once (its history holds one replay, by the job).
package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
)

// downThenUp is a receiver that answers 410 while down, then 204 after a
// pause (so that a page of replays takes a while to settle), counting
// the 2xx answers by webhook-id.
type downThenUp struct {
	srv  *httptest.Server
	up   atomic.Bool
	mu   sync.Mutex
	oks  map[string]int
	gone int
}

func newDownThenUp(t *testing.T) *downThenUp {
	d := &downThenUp{oks: map[string]int{}}
	d.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusNoContent) // a probe
			return
		}
		if !d.up.Load() {
			d.mu.Lock()
			d.gone++
			d.mu.Unlock()
			w.WriteHeader(http.StatusGone)
			return
		}
		time.Sleep(150 * time.Millisecond)
		d.mu.Lock()
		d.oks[r.Header.Get("webhook-id")]++
		d.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *downThenUp) delivered() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.oks))
	for k, v := range d.oks {
		out[k] = v
	}
	return out
}

func TestProcessReplayJobSurvivesSIGKILL(t *testing.T) {
	bin := buildBinary(t)
	cfg := writePlatformConfig(t, `database = "`+filepath.Join(t.TempDir(), "courier.db")+`"
[platform]
replay_page = 2`)
	first := startProc(t, bin, cfg)
	testReplayKilled(t, first, nil, func() *proc { return startProc(t, bin, cfg) })
}

func TestProcessReplayJobTakenOverOnPostgres(t *testing.T) {
	dsn := os.Getenv("COURIER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("COURIER_TEST_POSTGRES is unset: set it to a PostgreSQL DSN to run two courier serve processes on one database")
	}
	bin := buildBinary(t)
	schema := fmt.Sprintf("rpl_test_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	cfg := writePlatformConfig(t, `postgres = "`+dsn+`"
postgres_schema = "`+schema+`"
[platform]
replay_page = 2`)
	first := startProc(t, bin, cfg)
	other := startProc(t, bin, cfg) // idle until the first is killed
	testReplayKilled(t, first, other, func() *proc { return other })
}

// testReplayKilled makes eight dead letters through p, starts a job on
// p, kills p mid-job, and judges the job as next (a restarted or other
// serve) finishes it. idle, if not nil, is a serve beside p that must
// not run the job while p holds it.
func testReplayKilled(t *testing.T, p, idle *proc, next func() *proc) {
	const n = 8
	recv := newDownThenUp(t)
	base := p.base
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+recv.srv.URL+`/hook","secrets":["`+secret+`"]}`)["id"].(string)
	epPath := "/v1/apps/" + app + "/endpoints/" + ep
	// Each 410 kills its message's delivery and disables the endpoint;
	// enabling it again lets the next message through.
	var dead []string
	for i := range n {
		m := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", fmt.Sprintf(`{"event_type":"t","payload":{"n":%d}}`, i))["id"].(string)
		d := platform.DeliveryID(m, ep)
		awaitAnswer(t, "delivery dead", func() map[string]any { return mustCall(t, 200, "GET", base+"/v1/events/"+d, "") },
			func(v map[string]any) bool { return v["state"] == "dead" })
		awaitAnswer(t, "the endpoint disabled", func() map[string]any { return mustCall(t, 200, "GET", base+epPath+"/health", "") },
			disabledWith("gone"))
		mustCall(t, 200, "PATCH", base+epPath, `{"enabled":true}`)
		dead = append(dead, d)
	}
	recv.up.Store(true)

	r := call(t, "POST", base+epPath+"/replay", token, ``)
	id, _ := r.body["id"].(string)
	if r.status != 202 || !platform.IsID(platform.ReplayJobKind, id) {
		t.Fatalf("POST replay = %d %v; want 202 and a job", r.status, r.body)
	}
	jobPath := epPath + "/replay/" + id
	saved := awaitAnswer(t, "two pages replayed", func() map[string]any { return mustCall(t, 200, "GET", base+jobPath, "") },
		func(v map[string]any) bool { return v["replayed"].(float64) >= 4 })
	if saved["state"] != "running" {
		t.Fatalf("the job before the kill = %v; want running (a page of 2, each page settling for ~300 ms)", saved)
	}
	if idle != nil && strings.Contains(mustRead(t, idle.log), "bulk replay resumed") {
		t.Errorf("the second serve ran the job while the first held it")
	}
	p.kill(t)
	t.Logf("SIGKILL with the job at %v replayed, cursor %v", saved["replayed"], saved["cursor"])

	q := next()
	seen := mustCall(t, 200, "GET", q.base+jobPath, "")
	if seen["replayed"].(float64) < saved["replayed"].(float64) || seen["cursor"].(float64) < saved["cursor"].(float64) {
		t.Errorf("the job's progress after the kill = %v; want at least what was saved before (%v)", seen, saved)
	}
	done := awaitAnswer(t, "the job done", func() map[string]any { return mustCall(t, 200, "GET", q.base+jobPath, "") },
		func(v map[string]any) bool { return v["done"] == true })
	if done["state"] != "done" || done["replayed"].(float64) > n || done["failed"] != 0.0 {
		t.Errorf("the resumed job = %v; want done, at most %d replayed, none failed", done, n)
	}
	// A page the kill interrupted before its save is listed again: what
	// it replayed and was delivered since is no longer listed, so
	// replayed may count fewer than n; the store's histories are exact.
	if done["replayed"] != float64(n) {
		t.Logf("the job counted %v replays of %d: the kill fell inside a page", done["replayed"], n)
	}
	for _, d := range dead {
		ev := awaitAnswer(t, d+" delivered", func() map[string]any { return mustCall(t, 200, "GET", q.base+"/v1/events/"+d, "") },
			func(v map[string]any) bool { return v["state"] == "delivered" })
		if ev["replays"] != 1.0 {
			t.Errorf("%s was replayed %v times; want once", d, ev["replays"])
		}
	}
	got, twice := recv.delivered(), 0
	for _, d := range dead {
		if got[d] > 1 {
			twice++ // an attempt in flight at the kill, sent again: at least once, as ever
		}
		if got[d] == 0 {
			t.Errorf("the receiver never got %s delivered", d)
		}
	}
	t.Logf("the receiver got %d of %d delivered, %d of them twice (in flight at the kill or at a replay)", len(got), n, twice)
	if log := mustRead(t, q.log); !strings.Contains(log, `"msg":"bulk replay resumed","job":"`+id+`"`) {
		t.Errorf("the log of the serve that finished the job has no resumption of %s", id)
	}
	list := mustCall(t, 200, "GET", q.base+epPath+"/replays", "")
	if ids := eventIDs(list); len(ids) != 1 || ids[0] != id {
		t.Errorf("the endpoint's jobs = %v; want the one job", list)
	}
}

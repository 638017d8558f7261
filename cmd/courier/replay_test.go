// This file proves the bulk replay of an endpoint's dead letters. On a
// real `courier serve` (SQLite, and PostgreSQL when
// COURIER_TEST_POSTGRES is set) with a loopback receiver that answers
// 410 three times: three messages die, a job with since replays only
// the two that died after it, a job without replays the rest, and every
// message is then delivered; the jobs are listed a page at a time and a
// finished one is not cancelled. Over a real memstore and platmem: a
// dead letter replayed by someone else between the job's listing and
// its replay is skipped, a discarded one is left alone, a second job of
// a running endpoint is refused, a job waits for each page to settle
// before the next (within a bound), a cancelled job stops, and stopping
// serve leaves a running job saved for the next serve, which resumes it
// and replays nothing twice. (The SIGKILL test is process_replay_test.go.)
package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platmem"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

func TestBulkReplayOfAnEndpoint(t *testing.T) { testBulkReplay(t, nil) }

func TestBulkReplayOfAnEndpointPostgres(t *testing.T) { testBulkReplay(t, onPostgres(t)) }

func testBulkReplay(t *testing.T, set func(*Config)) {
	recv := newScripted(t, 410, 410, 410)
	base := startPlatformWith(t, "", set)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+recv.srv.URL+`/hook","secrets":["`+secret+`"]}`)["id"].(string)
	epURL := base + "/v1/apps/" + app + "/endpoints/" + ep
	// Each 410 kills its message's delivery and disables the endpoint;
	// enabling it again lets the next message through.
	die := func(n string) string {
		m := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"t","payload":{"n":`+n+`}}`)["id"].(string)
		d := platform.DeliveryID(m, ep)
		awaitAnswer(t, "delivery "+n+" dead", func() map[string]any { return mustCall(t, 200, "GET", base+"/v1/events/"+d, "") },
			func(v map[string]any) bool { return v["state"] == "dead" })
		awaitAnswer(t, "the endpoint disabled", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/health", "") }, disabledWith("gone"))
		mustCall(t, 200, "PATCH", epURL, `{"enabled":true}`)
		return d
	}
	first := die("1")
	time.Sleep(20 * time.Millisecond)
	since := time.Now().UTC()
	time.Sleep(20 * time.Millisecond)
	later := []string{die("2"), die("3")}
	// The three are the endpoint's dead deliveries, in stream order.
	dead := mustCall(t, 200, "GET", epURL+"/deliveries?state=dead&limit=2", "")
	rest := mustCall(t, 200, "GET", epURL+"/deliveries?state=dead&limit=2&after="+strconv.Itoa(int(dead["next_after"].(float64))), "")
	if got := append(eventIDs(dead), eventIDs(rest)...); !slices.Equal(got, []string{first, later[0], later[1]}) || rest["next_after"] != nil {
		t.Errorf("dead deliveries in two pages = %v, then %v; want %s %v, no third page", dead, rest, first, later)
	}

	job := runReplay(t, epURL, `{"since":"`+since.Format(time.RFC3339Nano)+`"}`)
	if job["listed"] != 2.0 || job["replayed"] != 2.0 || job["skipped"] != 0.0 || job["failed"] != 0.0 || job["state"] != "done" {
		t.Errorf("the job since %v = %v; want 2 listed and replayed, done", since, job)
	}
	for _, d := range later {
		awaitState(t, base, d, "delivered")
	}
	if got := mustCall(t, 200, "GET", base+"/v1/events/"+first, ""); got["state"] != "dead" {
		t.Errorf("the delivery that died before since = %v; want still dead", got)
	}
	job = runReplay(t, epURL, ``)
	if job["listed"] != 1.0 || job["replayed"] != 1.0 || job["since"] != nil {
		t.Errorf("the job without since = %v; want the 1 dead letter left listed and replayed", job)
	}
	awaitState(t, base, first, "delivered")
	if left := mustCall(t, 200, "GET", epURL+"/deliveries?state=dead", ""); len(eventIDs(left)) != 0 {
		t.Errorf("dead deliveries after both jobs = %v; want none", left)
	}
	if n := len(recv.received()); n != 6 {
		t.Errorf("the receiver got %d requests; want 6 (three 410s, three deliveries)", n)
	}
}

// runReplay starts a job on the endpoint at epURL and returns its
// progress once done.
func runReplay(t *testing.T, epURL, body string) map[string]any {
	t.Helper()
	r := call(t, "POST", epURL+"/replay", token, body)
	id, _ := r.body["id"].(string)
	if r.status != 202 || !platform.IsID("rpl", id) || r.header.Get("Location") == "" || r.body["state"] != "running" {
		t.Fatalf("POST %s/replay %s = %d %v %v; want 202, a running job rpl_..., a Location", epURL, body, r.status, r.header, r.body)
	}
	return awaitAnswer(t, "the job done", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/replay/"+id, "") },
		func(v map[string]any) bool { return v["done"] == true })
}

// eventIDs is the IDs of a page's data.
func eventIDs(page map[string]any) []string {
	out := []string{}
	for _, d := range page["data"].([]any) {
		out = append(out, d.(map[string]any)["id"].(string))
	}
	return out
}

func awaitState(t *testing.T, base, id, state string) {
	t.Helper()
	awaitAnswer(t, id+" "+state, func() map[string]any { return mustCall(t, 200, "GET", base+"/v1/events/"+id, "") },
		func(v map[string]any) bool { return v["state"] == state })
}

// killed enqueues ids on stream and makes each a dead letter, rejected
// at its first attempt, as a worker would.
func killed(t *testing.T, st store.Store, stream string, ids ...string) {
	t.Helper()
	ctx := t.Context()
	for _, id := range ids {
		if _, _, err := st.Enqueue(ctx, stream, id, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := st.Acquire(ctx, stream, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		ups := [][]store.Update{
			{{ID: id, Delivery: store.Delivery{State: machine.Pending, Attempts: 1}}},
			{{ID: id, Delivery: store.Delivery{State: machine.Dead, Attempts: 1, Reason: machine.Rejected},
				Outcome: &store.Outcome{Attempt: 1, Status: 410, Detail: "gone"}}},
		}
		for _, u := range ups {
			if err := st.Save(ctx, l, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// racedStore is a real store where another operator replays raced
// right after each listing of dead letters: the job then finds it no
// longer dead.
type racedStore struct {
	store.Store
	raced string
}

func (s racedStore) DeadLetters(ctx context.Context, stream string, after uint64, limit int) ([]store.Record, error) {
	recs, err := s.Store.DeadLetters(ctx, stream, after, limit)
	if err == nil && after == 0 {
		if _, err := s.Store.Replay(ctx, s.raced, "someone else"); err != nil {
			return nil, err
		}
	}
	return recs, err
}

// jobEnv is a delivery store and a platform store with one application
// and two endpoints, for the job runner's tests.
type jobEnv struct {
	st      *memstore.Store
	ps      *platmem.Store
	app     string
	ep, ep2 string
}

func newJobEnv(t *testing.T) jobEnv {
	t.Helper()
	e := jobEnv{st: memstore.New(time.Now), ps: platmem.New(time.Now), app: platform.NewID(platform.AppKind, time.Now())}
	if _, err := e.ps.CreateApp(t.Context(), platform.Application{ID: e.app, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []*string{&e.ep, &e.ep2} {
		*ep = platform.NewID(platform.EndpointKind, time.Now())
		if _, err := e.ps.CreateEndpoint(t.Context(), platform.Endpoint{ID: *ep, AppID: e.app, URL: "https://example.com/",
			Secrets: []string{secret}, Enabled: true, Ordering: platform.Strict}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// replays is a job runner over the env's stores, over st if not nil,
// with pages of page and a settle bound of settleMax, polled every
// millisecond, and a lease of a second.
func (e jobEnv) replays(st store.Store, owner string, page int, settleMax time.Duration) *replays {
	if st == nil {
		st = e.st
	}
	rp := newReplays(st, e.ps, owner, time.Second, slog.New(slog.DiscardHandler))
	rp.page, rp.settlePoll, rp.settleMax = page, time.Millisecond, settleMax
	return rp
}

func (e jobEnv) job(t *testing.T, ep, id string) platform.ReplayJob {
	t.Helper()
	j, err := e.ps.GetReplayJob(t.Context(), e.app, ep, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// await polls job id of ep until ok holds.
func (e jobEnv) await(t *testing.T, ep, id string, ok func(platform.ReplayJob) bool) platform.ReplayJob {
	t.Helper()
	deadline := time.Now().Add(testLimit)
	for j := e.job(t, ep, id); ; j = e.job(t, ep, id) {
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: not within %v: %+v", id, testLimit, j)
		}
		time.Sleep(time.Millisecond)
	}
}

func finished(j platform.ReplayJob) bool { return j.Finished() }

func TestReplayJobSkipsWhatIsNoLongerDead(t *testing.T) {
	e := newJobEnv(t)
	killed(t, e.st, e.ep, "a", "b", "c", "d")
	if _, err := e.st.Discard(t.Context(), "d", "operator"); err != nil {
		t.Fatal(err)
	}
	rp := e.replays(racedStore{Store: e.st, raced: "b"}, "serve-1", replayPage, replaySettleMax)
	defer rp.stop()
	j, err := rp.start(t.Context(), e.app, e.ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := e.await(t, e.ep, j.ID, finished)
	if v.State != platform.JobDone || v.Listed != 3 || v.Replayed != 2 || v.Skipped != 1 || v.Failed != 0 {
		t.Errorf("job = %+v; want done, 3 listed (d was discarded), 2 replayed, b skipped", v)
	}
	for id, want := range map[string]machine.State{"a": machine.Pending, "c": machine.Pending, "d": machine.Dead} {
		if rec, err := e.st.Get(t.Context(), id); err != nil || rec.State != want || id == "d" && rec.Replays() != 0 {
			t.Errorf("%s = %v, %d replays (%v); want %v", id, rec.State, rec.Replays(), err, want)
		}
	}
}

// One job per endpoint runs; stopping serve saves each job as it stands
// with its lease ended, and the next serve resumes it from its cursor
// at once: the dead letter replayed before the stop is not replayed
// again, the rest is.
func TestReplayJobOnePerEndpointStoppedAndResumed(t *testing.T) {
	e := newJobEnv(t)
	killed(t, e.st, e.ep, "a1", "a2")
	killed(t, e.st, e.ep2, "b1", "b2")
	rp := e.replays(nil, "serve-1", 1, time.Hour) // each job replays its first, then waits for it to settle: nobody delivers it
	j, err := rp.start(t.Context(), e.app, e.ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := rp.start(t.Context(), e.app, e.ep, time.Time{}); !errors.Is(err, errReplayRunning) || again.ID != j.ID {
		t.Errorf("a second job of a running endpoint = %v, %v; want errReplayRunning naming %s", again, err, j.ID)
	}
	other, err := rp.start(t.Context(), e.app, e.ep2, time.Time{})
	if err != nil {
		t.Errorf("a job of another endpoint: %v", err)
	}
	one := func(x platform.ReplayJob) bool { return x.Replayed == 1 }
	e.await(t, e.ep, j.ID, one)
	e.await(t, e.ep2, other.ID, one)
	rp.stop()
	for _, x := range []platform.ReplayJob{e.job(t, e.ep, j.ID), e.job(t, e.ep2, other.ID)} {
		if x.State != platform.JobRunning || x.Replayed != 1 || x.Cursor != 1 || x.LeaseUntil.After(time.Now()) {
			t.Errorf("job after stop = %+v; want running, 1 replayed, cursor 1, its lease ended", x)
		}
	}
	if rec, _ := e.st.Get(t.Context(), "a2"); rec.State != machine.Dead {
		t.Errorf("a2 = %v after a stopped job; want still dead", rec.State)
	}
	if _, err := rp.start(t.Context(), e.app, e.ep, time.Time{}); err == nil {
		t.Error("a job started after stop")
	}

	next := e.replays(nil, "serve-2", 1, time.Millisecond)
	next.run()
	defer next.stop()
	for _, x := range []platform.ReplayJob{j, other} {
		if got := e.await(t, x.EndpointID, x.ID, finished); got.State != platform.JobDone || got.Replayed != 2 {
			t.Errorf("resumed job = %+v; want done, 2 replayed", got)
		}
	}
	for _, id := range []string{"a1", "a2", "b1", "b2"} {
		if rec, _ := e.st.Get(t.Context(), id); rec.Replays() != 1 {
			t.Errorf("%s replayed %d times; want once", id, rec.Replays())
		}
	}
}

// A job cancelled through the store stops at once in the process that
// runs it, and leaves the rest dead.
func TestReplayJobCancelled(t *testing.T) {
	e := newJobEnv(t)
	killed(t, e.st, e.ep, "a", "b")
	rp := e.replays(nil, "serve-1", 1, time.Hour)
	defer rp.stop()
	j, err := rp.start(t.Context(), e.app, e.ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	e.await(t, e.ep, j.ID, func(x platform.ReplayJob) bool { return x.Replayed == 1 })
	if _, err := e.ps.CancelReplayJob(t.Context(), e.app, e.ep, j.ID); err != nil {
		t.Fatal(err)
	}
	rp.interrupt(j.ID)
	deadline := time.Now().Add(testLimit)
	for rp.isRunning(j.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the cancelled job still runs")
		}
		time.Sleep(time.Millisecond)
	}
	if got := e.job(t, e.ep, j.ID); got.State != platform.JobCancelled || got.Replayed != 1 {
		t.Errorf("cancelled job = %+v; want cancelled, 1 replayed", got)
	}
	if rec, _ := e.st.Get(t.Context(), "b"); rec.State != machine.Dead {
		t.Errorf("b = %v; want still dead", rec.State)
	}
}

// A job replays a page, then waits for its last event to be delivered
// (or dead) before the next page, at most settleMax.
func TestReplayJobWaitsForEachPageToSettle(t *testing.T) {
	e := newJobEnv(t)
	killed(t, e.st, e.ep, "a", "b", "c")
	rp := e.replays(nil, "serve-1", 2, time.Hour)
	defer rp.stop()
	j, err := rp.start(t.Context(), e.app, e.ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	e.await(t, e.ep, j.ID, func(x platform.ReplayJob) bool { return x.Replayed == 2 })
	time.Sleep(50 * time.Millisecond)
	if v := e.job(t, e.ep, j.ID); v.Replayed != 2 || v.Finished() {
		t.Fatalf("job before the first page settled = %+v; want 2 replayed, waiting", v)
	}
	delivered(t, e.st, e.ep, "b")
	if v := e.await(t, e.ep, j.ID, finished); v.Replayed != 3 || v.State != platform.JobDone {
		t.Errorf("job once b was delivered = %+v; want done, 3 replayed", v)
	}

	killed(t, e.st, e.ep, "d", "e")
	bounded := e.replays(nil, "serve-2", 1, 20*time.Millisecond) // nobody delivers: each page waits 20 ms, then the next goes
	defer bounded.stop()
	j, err = bounded.start(t.Context(), e.app, e.ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if v := e.await(t, e.ep, j.ID, finished); v.Replayed != 2 || v.State != platform.JobDone {
		t.Errorf("job whose pages never settle = %+v; want done, d and e replayed", v)
	}
}

// delivered delivers the pending event id of stream at its first
// attempt, as a worker would.
func delivered(t *testing.T, st store.Store, stream, id string) {
	t.Helper()
	l, err := st.Acquire(t.Context(), stream, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []store.Update{
		{ID: id, Delivery: store.Delivery{State: machine.Pending, Attempts: 1}},
		{ID: id, Delivery: store.Delivery{State: machine.Delivered, Attempts: 1}, Outcome: &store.Outcome{Attempt: 1, Status: 204}},
	} {
		if err := st.Save(t.Context(), l, []store.Update{u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Release(t.Context(), l); err != nil {
		t.Fatal(err)
	}
}

// The job routes over a real serve: the endpoint's jobs are listed
// newest first a page at a time; cancelling a finished job answers 409
// with it and changes nothing; another application's endpoint has none.
func TestReplayJobRoutes(t *testing.T) {
	recv := newScripted(t)
	base := startPlatformWith(t, "", nil)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+recv.srv.URL+`/hook","secrets":["`+secret+`"]}`)["id"].(string)
	epURL := base + "/v1/apps/" + app + "/endpoints/" + ep
	first, second := runReplay(t, epURL, ``), runReplay(t, epURL, ``) // no dead letter: each is done at once
	for _, j := range []map[string]any{first, second} {
		if j["state"] != "done" || j["listed"] != 0.0 || j["cursor"] != 0.0 || j["finished_at"] == nil || j["updated_at"] == nil {
			t.Errorf("job of an endpoint with no dead letter = %v; want done, nothing listed, finished", j)
		}
	}
	page := mustCall(t, 200, "GET", epURL+"/replays?limit=1", "")
	if got := eventIDs(page); len(got) != 1 || got[0] != second["id"] || page["next_after"] != second["id"] {
		t.Errorf("first page of jobs = %v; want %s, then more", page, second["id"])
	}
	page = mustCall(t, 200, "GET", epURL+"/replays?limit=1&after="+second["id"].(string), "")
	if got := eventIDs(page); len(got) != 1 || got[0] != first["id"] {
		t.Errorf("second page of jobs = %v; want %s", page, first["id"])
	}
	r := call(t, "POST", epURL+"/replay/"+first["id"].(string)+"/cancel", token, "")
	if job, _ := r.body["job"].(map[string]any); r.status != 409 || job["state"] != "done" {
		t.Errorf("cancelling a done job = %d %v; want 409 with the job, done", r.status, r.body)
	}
	if got := mustCall(t, 200, "GET", epURL+"/replay/"+first["id"].(string), ""); got["state"] != "done" {
		t.Errorf("the job after a refused cancel = %v; want done", got)
	}
}

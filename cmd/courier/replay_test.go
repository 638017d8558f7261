// This file proves the bulk replay of an endpoint's dead letters. On a
// real `courier serve` (SQLite, and PostgreSQL when
// COURIER_TEST_POSTGRES is set) with a loopback receiver that answers
// 410 three times: three messages die, a job with since replays only
// the two that died after it, a job without replays the rest, and every
// message is then delivered. Over a real memstore: a dead letter
// replayed by someone else between the job's listing and its replay is
// skipped, a discarded one is left alone, a second job of a running
// endpoint is refused, a job waits for each page to settle before the
// next (within a bound), and stopping serve cancels a running job.
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

func TestReplayJobSkipsWhatIsNoLongerDead(t *testing.T) {
	st := memstore.New(time.Now)
	ep := platform.NewID(platform.EndpointKind, time.Now())
	killed(t, st, ep, "a", "b", "c", "d")
	if _, err := st.Discard(t.Context(), "d", "operator"); err != nil {
		t.Fatal(err)
	}
	rp := newReplays(racedStore{Store: st, raced: "b"}, slog.New(slog.DiscardHandler))
	defer rp.stop()
	j, err := rp.start("app_x", ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	v := awaitJob(t, j)
	if v.State != "done" || v.Listed != 3 || v.Replayed != 2 || v.Skipped != 1 || v.Failed != 0 {
		t.Errorf("job = %+v; want done, 3 listed (d was discarded), 2 replayed, b skipped", v)
	}
	for id, want := range map[string]machine.State{"a": machine.Pending, "c": machine.Pending, "d": machine.Dead} {
		if rec, err := st.Get(t.Context(), id); err != nil || rec.State != want || id == "d" && rec.Replays() != 0 {
			t.Errorf("%s = %v, %d replays (%v); want %v", id, rec.State, rec.Replays(), err, want)
		}
	}
}

func TestReplayJobOnePerEndpointAndCancelledAtStop(t *testing.T) {
	st := memstore.New(time.Now)
	ep, ep2 := platform.NewID(platform.EndpointKind, time.Now()), platform.NewID(platform.EndpointKind, time.Now())
	killed(t, st, ep, "a1", "a2")
	killed(t, st, ep2, "b1", "b2")
	rp := testReplays(st, 1, time.Hour) // each job replays its first, then waits for it to settle: nobody delivers it
	j, err := rp.start("app_x", ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := rp.start("app_x", ep, time.Time{}); !errors.Is(err, errReplayRunning) || again != j {
		t.Errorf("a second job of a running endpoint = %v, %v; want errReplayRunning naming %s", again, err, j.ID)
	}
	other, err := rp.start("app_x", ep2, time.Time{})
	if err != nil {
		t.Errorf("a job of another endpoint: %v", err)
	}
	awaitProgress(t, j, func(v replayView) bool { return v.Replayed == 1 })
	awaitProgress(t, other, func(v replayView) bool { return v.Replayed == 1 })
	rp.stop()
	for _, x := range []*replayJob{j, other} {
		if v := x.view(); v.State != "cancelled" || !v.Done || v.Replayed != 1 {
			t.Errorf("job after stop = %+v; want cancelled, done, 1 replayed", v)
		}
	}
	if rec, _ := st.Get(t.Context(), "a2"); rec.State != machine.Dead {
		t.Errorf("a2 = %v after a cancelled job; want still dead", rec.State)
	}
	if _, err := rp.start("app_x", ep, time.Time{}); err == nil {
		t.Error("a job started after stop")
	}
}

// A job replays a page, then waits for its last event to be delivered
// (or dead) before the next page, at most settleMax.
func TestReplayJobWaitsForEachPageToSettle(t *testing.T) {
	st := memstore.New(time.Now)
	ep := platform.NewID(platform.EndpointKind, time.Now())
	killed(t, st, ep, "a", "b", "c")
	rp := testReplays(st, 2, time.Hour)
	defer rp.stop()
	j, err := rp.start("app_x", ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	awaitProgress(t, j, func(v replayView) bool { return v.Replayed == 2 })
	time.Sleep(50 * time.Millisecond)
	if v := j.view(); v.Replayed != 2 || v.Done {
		t.Fatalf("job before the first page settled = %+v; want 2 replayed, waiting", v)
	}
	delivered(t, st, ep, "b")
	if v := awaitJob(t, j); v.Replayed != 3 || v.State != "done" {
		t.Errorf("job once b was delivered = %+v; want done, 3 replayed", v)
	}

	killed(t, st, ep, "d", "e")
	bounded := testReplays(st, 1, 20*time.Millisecond) // nobody delivers: each page waits 20 ms, then the next goes
	defer bounded.stop()
	j, err = bounded.start("app_x", ep, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if v := awaitJob(t, j); v.Replayed != 2 || v.State != "done" {
		t.Errorf("job whose pages never settle = %+v; want done, d and e replayed", v)
	}
}

// testReplays is newReplays over st with pages of page and a settle
// bound of settleMax, polled every millisecond.
func testReplays(st store.Store, page int, settleMax time.Duration) *replays {
	rp := newReplays(st, slog.New(slog.DiscardHandler))
	rp.page, rp.settlePoll, rp.settleMax = page, time.Millisecond, settleMax
	return rp
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

func awaitProgress(t *testing.T, j *replayJob, ok func(replayView) bool) {
	t.Helper()
	deadline := time.Now().Add(testLimit)
	for !ok(j.view()) {
		if time.Now().After(deadline) {
			t.Fatalf("job %s: not within %v: %+v", j.ID, testLimit, j.view())
		}
		time.Sleep(time.Millisecond)
	}
}

func awaitJob(t *testing.T, j *replayJob) replayView {
	t.Helper()
	deadline := time.Now().Add(testLimit)
	for !j.view().Done {
		if time.Now().After(deadline) {
			t.Fatalf("job %s not done within %v: %+v", j.ID, testLimit, j.view())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return j.view()
}

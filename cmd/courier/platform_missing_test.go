// This file proves replay-missing on a real `courier serve` (SQLite file,
// and PostgreSQL when COURIER_TEST_POSTGRES is set): an endpoint created
// after messages were published gets none of them until asked; asked
// since T, it gets each message since T that its filter takes, once,
// under the webhook-id message.endpoint, and nothing older or of another
// type; asking again adds nothing and sends nothing more. Its bad inputs
// are answered 400 or 404 naming the field, and change nothing.
package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReplayMissingOnServe(t *testing.T) { testReplayMissing(t, nil) }

func TestReplayMissingOnServePostgres(t *testing.T) { testReplayMissing(t, onPostgres(t)) }

func testReplayMissing(t *testing.T, set func(*Config)) {
	s := newSink(t)
	base := startPlatformWith(t, "", set)
	for _, ty := range []string{"paid", "other"} {
		mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"`+ty+`"}`)
	}
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	eps, msgs := base+"/v1/apps/"+app+"/endpoints", base+"/v1/apps/"+app+"/messages"
	mustCall(t, 201, "POST", eps, `{"url":"`+s.srv.URL+`/early","secrets":["`+secret+`"]}`)
	publish := func(ty string) string {
		return mustCall(t, 201, "POST", msgs, `{"event_type":"`+ty+`","payload":{}}`)["id"].(string)
	}
	old := publish("paid")
	time.Sleep(10 * time.Millisecond)
	since := time.Now().UTC()
	chosen := []string{publish("paid"), publish("paid")}
	other := publish("other")
	late := mustCall(t, 201, "POST", eps, `{"url":"`+s.srv.URL+`/late","secrets":["`+secret+`"],"event_types":["paid"]}`)["id"].(string)
	lateURL := eps + "/" + late

	time.Sleep(200 * time.Millisecond) // four polls: a late endpoint gets nothing unasked
	for _, m := range append([]string{old, other}, chosen...) {
		if n := s.count(m + "." + late); n != 0 {
			t.Fatalf("the late endpoint got %s unasked (%d times)", m, n)
		}
	}
	got := mustCall(t, 200, "POST", lateURL+"/replay-missing", `{"since":"`+since.Format(time.RFC3339Nano)+`"}`)
	if got["added"] != 2.0 || got["pending"] != 0.0 || got["endpoint_id"] != late {
		t.Fatalf("replay-missing = %v; want 2 added, 0 pending", got)
	}
	for _, m := range chosen {
		eventually(t, "the late endpoint applied "+m, func() bool { return s.count(m+"."+late) == 1 })
		if ds := deliveries(t, mustCall(t, 200, "GET", msgs+"/"+m, "")); ds[late] == nil || ds[late]["id"] != m+"."+late {
			t.Errorf("message %s shows deliveries %v; want one to %s as %s.%s", m, ds, late, m, late)
		}
	}
	again := mustCall(t, 200, "POST", lateURL+"/replay-missing", `{"since":"`+since.Format(time.RFC3339Nano)+`"}`)
	if again["added"] != 0.0 {
		t.Errorf("replay-missing again = %v; want 0 added", again)
	}
	time.Sleep(200 * time.Millisecond)
	for m, want := range map[string]int{old: 0, other: 0, chosen[0]: 1, chosen[1]: 1} {
		if n := s.count(m + "." + late); n != want {
			t.Errorf("the late endpoint applied %s %d times; want %d", m, n, want)
		}
	}
}

func TestReplayMissingBadInputsChangeNothing(t *testing.T) {
	base := startPlatform(t)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	other := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Other"}`)["id"].(string)
	msg := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"t","payload":1}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"https://example.com/","enabled":false}`)["id"].(string)
	before := mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/messages/"+msg, "")
	url := base + "/v1/apps/" + app + "/endpoints/" + ep + "/replay-missing"
	for _, c := range []struct {
		url, body string
		status    int
		field     string // the error's field, or a word its text must hold
	}{
		{url, `{}`, 400, "since"},
		{url, ``, 400, "JSON"},
		{url, `{"since":"yesterday"}`, 400, "since"},
		{url, `{"since":"2999-01-01T00:00:00Z"}`, 400, "since"},
		{url, `{"since":1}`, 400, "since"},
		{url, `{"since":"2020-01-01T00:00:00Z","limit":5}`, 400, "limit"},
		{url, `{"since":"2020-01-01T00:00:00Z","since":"2021-01-01T00:00:00Z"}`, 400, "since"},
		{base + "/v1/apps/" + other + "/endpoints/" + ep + "/replay-missing", `{"since":"2020-01-01T00:00:00Z"}`, 404, "endpoint"},
		{base + "/v1/apps/" + app + "/endpoints/ep_nope/replay-missing", `{"since":"2020-01-01T00:00:00Z"}`, 404, "endpoint"},
	} {
		r := call(t, "POST", c.url, token, c.body)
		msg, _ := r.body["error"].(string)
		field, _ := r.body["field"].(string)
		if r.status != c.status || field != c.field && !strings.Contains(msg, c.field) {
			t.Errorf("POST %s %s = %d %v; want %d naming %q", strings.TrimPrefix(c.url, base), c.body, r.status, r.body, c.status, c.field)
		}
	}
	if d := cmp.Diff(before, mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/messages/"+msg, "")); d != "" {
		t.Errorf("the refused calls changed the message (-before +after):\n%s", d)
	}
	// The check can fail: the good call adds the delivery the refused ones did not.
	mustCall(t, 200, "POST", url, `{"since":"2020-01-01T00:00:00Z"}`)
	if ds := deliveries(t, mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/messages/"+msg, "")); ds[ep] == nil {
		t.Errorf("after a good replay-missing the message shows %v; want a delivery to %s", ds, ep)
	}
}

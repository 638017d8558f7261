// This file proves the listing of an application's messages on a real
// `courier serve` (SQLite, and PostgreSQL when COURIER_TEST_POSTGRES is
// set): newest first, a page at a time with a cursor, each with its
// fan-out, filtered by event type, endpoint and creation time; another
// application's messages are never listed. And an endpoint's delivered
// deliveries, a page at a time. (Its dead ones are listed in
// replay_test.go; bad inputs are in platform_input_test.go.)
package main

import (
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
)

func TestListMessages(t *testing.T) { testListMessages(t, nil) }

func TestListMessagesPostgres(t *testing.T) { testListMessages(t, onPostgres(t)) }

func testListMessages(t *testing.T, set func(*Config)) {
	s := newSink(t)
	base := startPlatformWith(t, "", set)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	other := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Other"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+s.srv.URL+`/a","secrets":["`+secret+`"]}`)["id"].(string)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"b"}`)
	onlyB := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+s.srv.URL+`/b","secrets":["`+secret+`"],"event_types":["b"]}`)["id"].(string)
	msgs := base + "/v1/apps/" + app + "/messages"
	mustCall(t, 201, "POST", base+"/v1/apps/"+other+"/messages", `{"event_type":"a","payload":0}`)
	var ids []string
	var between time.Time // after the first message, before the second
	for i, typ := range []string{"a", "b", "a"} {
		ids = append(ids, mustCall(t, 201, "POST", msgs, `{"event_type":"`+typ+`","payload":{"n":1}}`)["id"].(string))
		if i == 0 {
			time.Sleep(20 * time.Millisecond)
			between = time.Now().UTC()
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := mustCall(t, 200, "GET", msgs+"?limit=2", "")
	cursor, _ := first["next_cursor"].(string)
	second := mustCall(t, 200, "GET", msgs+"?limit=2&cursor="+cursor, "")
	if got := append(eventIDs(first), eventIDs(second)...); !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) || second["next_cursor"] != nil {
		t.Errorf("two pages = %v, then %v; want %v newest first, no third page", first, second, ids)
	}
	d := first["data"].([]any)[0].(map[string]any)
	if ds := deliveries(t, d); d["payload"] == nil || d["event_type"] != "a" || ds[ep] == nil || ds[ep]["fanout"] != "enqueued" {
		t.Errorf("a listed message = %v; want its payload, type and its delivery to %s, enqueued", d, ep)
	}
	at := url.QueryEscape(between.Format(time.RFC3339Nano))
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"event_type=a", []string{ids[2], ids[0]}},
		{"event_type=c", []string{}},
		{"after=" + at, []string{ids[2], ids[1]}},
		{"before=" + at, []string{ids[0]}},
		{"event_type=a&after=" + at, []string{ids[2]}},
		{"endpoint_id=" + onlyB, []string{ids[1]}},
	} {
		if got := eventIDs(mustCall(t, 200, "GET", msgs+"?"+c.query, "")); !slices.Equal(got, c.want) {
			t.Errorf("?%s = %v; want %v", c.query, got, c.want)
		}
	}

	// The endpoint's delivered deliveries, newest first, two messages a page.
	for _, id := range ids {
		awaitState(t, base, platform.DeliveryID(id, ep), "delivered")
	}
	deliv := base + "/v1/apps/" + app + "/endpoints/" + ep + "/deliveries?state=delivered&limit=2"
	p1 := mustCall(t, 200, "GET", deliv, "")
	next, _ := p1["next_cursor"].(string)
	p2 := mustCall(t, 200, "GET", deliv+"&cursor="+next, "")
	want := []string{platform.DeliveryID(ids[2], ep), platform.DeliveryID(ids[1], ep), platform.DeliveryID(ids[0], ep)}
	if got := append(eventIDs(p1), eventIDs(p2)...); !slices.Equal(got, want) || p2["next_cursor"] != nil {
		t.Errorf("delivered, two pages = %v, then %v; want %v", p1, p2, want)
	}
	if r := mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/endpoints/"+ep+"/deliveries?state=retry", ""); len(eventIDs(r)) != 0 {
		t.Errorf("deliveries in retry = %v; want none", r)
	}
}

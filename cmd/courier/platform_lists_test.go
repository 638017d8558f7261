// This file proves the listing of an application's messages on a real
// `courier serve` (SQLite, and PostgreSQL when COURIER_TEST_POSTGRES is
// set): newest first, a page at a time with a cursor, each with its
// fan-out, filtered by event type and by creation time; another
// application's messages are never listed. (An endpoint's dead
// deliveries are listed in replay_test.go; bad inputs are in
// platform_input_test.go.)
package main

import (
	"net/url"
	"slices"
	"testing"
	"time"
)

func TestListMessages(t *testing.T) { testListMessages(t, nil) }

func TestListMessagesPostgres(t *testing.T) { testListMessages(t, onPostgres(t)) }

func testListMessages(t *testing.T, set func(*Config)) {
	s := newSink(t)
	base := startPlatformWith(t, "", set)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	other := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Other"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+s.srv.URL+`/a","secrets":["`+secret+`"]}`)["id"].(string)
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
	} {
		if got := eventIDs(mustCall(t, 200, "GET", msgs+"?"+c.query, "")); !slices.Equal(got, c.want) {
			t.Errorf("?%s = %v; want %v", c.query, got, c.want)
		}
	}
}

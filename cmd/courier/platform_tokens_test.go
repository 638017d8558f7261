// This file proves application tokens on a real `courier serve`: a
// token is shown once and then only named; it reaches its own
// application's routes; under another application's ID every route
// appAccess opens answers 404 (as an application that does not exist),
// every other authenticated route answers 403, and nothing of the other
// application changes; a deleted token is refused; and bad inputs name
// their field and change nothing.
package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// appFixture is an application with one of everything a path names.
type appFixture struct {
	app, ep, msg, job, tok, tokID string
}

func newAppFixture(t *testing.T, base, url, name string) appFixture {
	t.Helper()
	var f appFixture
	f.app = mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"`+name+`"}`)["id"].(string)
	f.ep = mustCall(t, 201, "POST", base+"/v1/apps/"+f.app+"/endpoints", `{"url":"`+url+`"}`)["id"].(string)
	f.msg = mustCall(t, 201, "POST", base+"/v1/apps/"+f.app+"/messages", `{"event_type":"tick","payload":1}`)["id"].(string)
	f.job = mustCall(t, 202, "POST", base+"/v1/apps/"+f.app+"/endpoints/"+f.ep+"/replay", `{}`)["id"].(string)
	// The job runs on its own: done, it cannot change a snapshot later.
	awaitAnswer(t, "replay job "+f.job+" done", func() map[string]any {
		return mustCall(t, 200, "GET", base+"/v1/apps/"+f.app+"/endpoints/"+f.ep+"/replay/"+f.job, "")
	}, func(m map[string]any) bool { return m["done"] == true })
	tok := mustCall(t, 201, "POST", base+"/v1/apps/"+f.app+"/tokens", `{"name":"portal"}`)
	f.tok, f.tokID = tok["token"].(string), tok["id"].(string)
	return f
}

// path fills rt's path with f's IDs.
func (f appFixture) path(p string) string {
	return strings.NewReplacer("{app}", f.app, "{endpoint}", f.ep, "{message}", f.msg, "{job}", f.job,
		"{token}", f.tokID, "{stream}", f.ep, "{id}", f.msg+"."+f.ep).Replace(p)
}

func TestAppTokenSeesOnlyItsApplication(t *testing.T) {
	s := newSink(t)
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	mine, theirs := newAppFixture(t, base, s.srv.URL, "Mine"), newAppFixture(t, base, s.srv.URL, "Theirs")
	if !strings.HasPrefix(mine.tok, "ctk_") {
		t.Fatalf("token %q; want ctk_...", mine.tok)
	}
	list := mustCall(t, 200, "GET", base+"/v1/apps/"+mine.app+"/tokens", "")
	if got := list["data"].([]any)[0].(map[string]any); got["id"] != mine.tokID || got["token"] != nil {
		t.Errorf("listed token %v; want its ID and never the token", got)
	}
	before := snapshot(t, base, theirs.app) + snapshotTokens(t, base, theirs.app)

	// Deletes go last, the application's last of all, so that with the
	// check off every route still meets what it would change.
	routes := testAPI().routes()
	slices.SortStableFunc(routes, func(a, b route) int {
		rank := func(r route) int { return strings.Count(r.method, "DELETE") * (10 - strings.Count(r.path, "/")) }
		return rank(a) - rank(b)
	})
	for _, rt := range routes {
		if !rt.auth {
			continue
		}
		want := map[access]int{adminOnly: 403, ownApp: 404, anyApp: 200}[appAccess[rt.method+" "+rt.path]]
		r := call(t, rt.method, base+theirs.path(rt.path), mine.tok, `{}`)
		if r.status != want {
			t.Errorf("%s %s with another application's token = %d %v; want %d", rt.method, rt.path, r.status, r.body, want)
		}
	}
	// Its own application's ID with another's endpoint, message or job
	// reaches nothing either: the routes scope those to the path's
	// application.
	mixed := theirs
	mixed.app = mine.app
	for _, rt := range routes {
		if appAccess[rt.method+" "+rt.path] == ownApp && strings.Count(rt.path, "{") > 1 && !strings.Contains(rt.path, "{token}") {
			if r := call(t, rt.method, base+mixed.path(rt.path), mine.tok, `{}`); r.status != 404 {
				t.Errorf("%s %s with its own application and another's IDs = %d %v; want 404", rt.method, rt.path, r.status, r.body)
			}
		}
	}
	if got := snapshot(t, base, theirs.app) + snapshotTokens(t, base, theirs.app); got != before {
		t.Errorf("the other application changed under a foreign token:\n%s\nwas\n%s", got, before)
	}
	for _, p := range []string{"/v1/apps/{app}", "/v1/apps/{app}/endpoints/{endpoint}", "/v1/apps/{app}/messages/{message}",
		"/v1/apps/{app}/endpoints/{endpoint}/replay/{job}"} {
		if r := call(t, "GET", base+mine.path(p), mine.tok, ""); r.status != 200 {
			t.Errorf("GET %s with its own token = %d %v; want 200", p, r.status, r.body)
		}
	}
	if r := call(t, "POST", base+mine.path("/v1/apps/{app}/endpoints"), mine.tok, `{"url":"`+s.srv.URL+`/x"}`); r.status != 201 {
		t.Errorf("creating an endpoint with its own token = %d %v; want 201", r.status, r.body)
	}
	if r := call(t, "GET", base+"/v1/apps/app_0000000000000000000000000", mine.tok, ""); r.status != 404 {
		t.Errorf("an application that does not exist = %d; want 404, as another's", r.status)
	}
	mustCall(t, 200, "DELETE", base+"/v1/apps/"+mine.app+"/tokens/"+mine.tokID, "")
	if r := call(t, "GET", base+mine.path("/v1/apps/{app}"), mine.tok, ""); r.status != 401 {
		t.Errorf("a deleted token = %d %v; want 401", r.status, r.body)
	}
}

// snapshotTokens is what the admin reads of an application's tokens
// and messages, as text.
func snapshotTokens(t *testing.T, base, app string) string {
	t.Helper()
	b, _ := json.MarshalIndent([]any{mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/tokens", ""),
		mustCall(t, 200, "GET", base+"/v1/apps/"+app+"/messages", "")}, "", " ")
	return string(b)
}

func TestAppTokenBadInputsNameTheFieldAndChangeNothing(t *testing.T) {
	base := startPlatform(t)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	toks := base + "/v1/apps/" + app + "/tokens"
	before := snapshotTokens(t, base, app)
	for _, c := range []struct {
		method, url, body string
		status            int
		field             string
	}{
		{"POST", toks, `{}`, 400, "name"},
		{"POST", toks, `{"name":""}`, 400, "name"},
		{"POST", toks, `{"name":"a\u0000b"}`, 400, "name"},
		{"POST", toks, `{"name":7}`, 400, "name"},
		{"POST", toks, `{"name":"x","scope":"admin"}`, 400, "scope"},
		{"POST", base + "/v1/apps/app_nope/tokens", `{"name":"x"}`, 404, "application"},
		{"GET", toks + "?limit=0", ``, 400, "limit"},
		{"GET", toks + "?after=app_x", ``, 400, "after"},
		{"DELETE", toks + "/tok_nope", ``, 404, "token"},
		{"DELETE", toks + "/" + app, ``, 404, "token"},
	} {
		r := call(t, c.method, c.url, token, c.body)
		if r.status != c.status || (r.body["field"] != c.field && !strings.Contains(r.body["error"].(string), c.field)) {
			t.Errorf("%s %s %s = %d %v; want %d naming %q", c.method, c.url, c.body, r.status, r.body, c.status, c.field)
		}
	}
	if got := snapshotTokens(t, base, app); got != before {
		t.Errorf("tokens changed after refused calls:\n%s\nwas\n%s", got, before)
	}
	for _, bad := range []string{"ctk_", "ctk_" + strings.Repeat("a", 52), "Bearer"} {
		if r := call(t, "GET", base+"/v1/apps/"+app, bad, ""); r.status != 401 {
			t.Errorf("token %q = %d; want 401", bad, r.status)
		}
	}
}

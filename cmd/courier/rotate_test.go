// This file proves secret rotation with an overlap on a real `courier
// serve` and a loopback receiver: after POST .../secret/rotate with the
// old secret kept 2 s, a delivery carries two signatures, the new
// secret's and the old one's, each verifying on its own; after the
// expiry, with no restart, one signature, the new secret's. Bad rotate
// inputs name their field and change nothing.
package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/webhook"
)

// signedBy reports, for each signature of req in order, which of secrets
// verifies it alone ("" if none).
func signedBy(t *testing.T, req captured, secrets ...string) []string {
	t.Helper()
	sigs, err := webhook.ParseSignatureHeader(req.header.Get(webhook.HeaderSignature))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sig := range sigs {
		h := req.header.Clone()
		h.Set(webhook.HeaderSignature, sig.Version+","+sig.Value)
		who := ""
		for _, s := range secrets {
			parsed, _ := webhook.ParseSecret(s)
			if webhook.Verify(h, req.body, time.Now(), time.Hour, parsed) == nil {
				who = s
			}
		}
		out = append(out, who)
	}
	return out
}

func TestRotateSignsWithBothSecretsUntilTheOldExpires(t *testing.T) {
	rcv := newCapture(t)
	base := startPlatform(t)
	mustCall(t, 201, "POST", base+"/v1/event-types", `{"name":"tick"}`)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	old := webhook.NewSecret()
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+rcv.srv.URL+`","secrets":["`+old+`"]}`)["id"].(string)
	epURL := base + "/v1/apps/" + app + "/endpoints/" + ep
	publish := func() {
		mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"tick","payload":1}`)
	}
	publish()
	if got := signedBy(t, rcv.await(t, 1), old); len(got) != 1 || got[0] != old {
		t.Fatalf("before the rotation: signatures by %v; want one, the old secret's", got)
	}

	fresh := webhook.NewSecret()
	rot := mustCall(t, 200, "POST", epURL+"/secret/rotate", `{"secret":"`+fresh+`","old_secret_expires_in":"2s"}`)
	olds, _ := rot["old_secrets"].([]any)
	if len(olds) != 1 || olds[0].(map[string]any)["secret"] != old || rot["secrets"].([]any)[0] != fresh {
		t.Fatalf("rotate answered %v; want secrets [new] and old_secrets [old]", rot)
	}
	expires, _ := time.Parse(time.RFC3339Nano, olds[0].(map[string]any)["expires_at"].(string))
	publish()
	if got := signedBy(t, rcv.await(t, 2), fresh, old); len(got) != 2 || got[0] != fresh || got[1] != old {
		t.Errorf("during the overlap: signatures by %v; want two, the new secret's then the old one's", len(got))
	}
	time.Sleep(time.Until(expires) + 50*time.Millisecond)
	publish()
	if got := signedBy(t, rcv.await(t, 3), fresh, old); len(got) != 1 || got[0] != fresh {
		t.Errorf("after the expiry: signatures by %d secrets; want one, the new secret's", len(got))
	}

	if olds := mustCall(t, 200, "GET", epURL+"/secrets", "")["old_secrets"].([]any); len(olds) != 0 {
		t.Errorf("after the expiry .../secrets shows old secrets %v; want none", olds)
	}

	// A rotation with no body makes a secret and keeps the old 24 h.
	rot = mustCall(t, 200, "POST", epURL+"/secret/rotate", ``)
	made := rot["secrets"].([]any)[0].(string)
	olds = rot["old_secrets"].([]any)
	at, _ := time.Parse(time.RFC3339Nano, olds[0].(map[string]any)["expires_at"].(string))
	if !strings.HasPrefix(made, "whsec_") || made == fresh || len(olds) != 1 || olds[0].(map[string]any)["secret"] != fresh ||
		time.Until(at) < 23*time.Hour || time.Until(at) > 24*time.Hour {
		t.Errorf("a rotation with no body answered %v; want a new whsec_ secret and the last kept 24 h", rot)
	}
}

func TestRotateBadInputsNameTheFieldAndChangeNothing(t *testing.T) {
	base := startPlatform(t)
	app := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Acme"}`)["id"].(string)
	other := mustCall(t, 201, "POST", base+"/v1/apps", `{"name":"Other"}`)["id"].(string)
	ep := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"https://example.com/"}`)["id"].(string)
	rotate := base + "/v1/apps/" + app + "/endpoints/" + ep + "/secret/rotate"
	before := snapshot(t, base, app, other)
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		url, body string
		status    int
		field     string
	}{
		{rotate, `{"secret":"hunter2"}`, 400, "secret"},
		{rotate, `{"secret":5}`, 400, "secret"},
		{rotate, `{"old_secret_expires_in":"soon"}`, 400, "old_secret_expires_in"},
		{rotate, `{"old_secret_expires_in":"-1h"}`, 400, "old_secret_expires_in"},
		{rotate, `{"old_secret_expires_in":"721h"}`, 400, "old_secret_expires_in"},
		{rotate, `{"old_secret_expires_at":"tomorrow"}`, 400, "old_secret_expires_at"},
		{rotate, `{"old_secret_expires_at":"2020-01-01T00:00:00Z"}`, 400, "old_secret_expires_at"},
		{rotate, `{"old_secret_expires_at":"2999-01-01T00:00:00Z"}`, 400, "old_secret_expires_at"},
		{rotate, `{"old_secret_expires_at":"` + soon + `","old_secret_expires_in":"1h"}`, 400, "old_secret_expires_in"},
		{rotate, `{"old_secrets":[]}`, 400, "old_secrets"},
		{rotate, `[]`, 400, "malformed"},
		{base + "/v1/apps/" + other + "/endpoints/" + ep + "/secret/rotate", `{}`, 404, "endpoint"},
		{base + "/v1/apps/" + app + "/endpoints/ep_nope/secret/rotate", `{}`, 404, "endpoint"},
	} {
		r := call(t, http.MethodPost, c.url, token, c.body)
		if r.status != c.status || (r.body["field"] != c.field && !strings.Contains(r.body["error"].(string), c.field)) {
			t.Errorf("POST %s %s = %d %v; want %d naming %q", c.url, c.body, r.status, r.body, c.status, c.field)
		}
	}
	if got := snapshot(t, base, app, other); got != before {
		t.Errorf("refused rotations changed something:\n%s\nwas\n%s", got, before)
	}
}

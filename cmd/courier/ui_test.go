// This file proves the operator page. The handler serves the page's
// three files to anyone, with a Content-Security-Policy that allows no
// inline script and with nosniff, while the API it calls still answers
// 401 without a token. And, where Debian's chromium is installed (always
// in CI: .ci/browser sets COURIER_REQUIRE_BROWSER=1), a headless chromium
// drives the page against a real `courier serve` and a loopback receiver:
// an endpoint whose receiver answered 410 with an HTML body is shown
// disabled (gone) with that body as text and its dead letter; Enable and
// Replay, clicked in the page, deliver the event, as the API and the
// receiver confirm; and the token never appears in a URL.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/courierlab/courier/webhook/receiver"
)

func TestUIServedWithItsHeadersAndNoToken(t *testing.T) {
	srv := httptest.NewServer(testAPI().handler())
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tests := []struct {
		method, path string
		wantStatus   int
		wantType     string
		wantContains string
	}{
		{"GET", "/ui/", 200, "text/html; charset=utf-8", `<script src="app.js"></script>`},
		{"GET", "/ui/app.js", 200, "text/javascript; charset=utf-8", "sessionStorage"},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8", "#error"},
		{"HEAD", "/ui/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/ui/index.html", 404, "application/json", "no page file /ui/index.html"}, // the page is /ui/ only
		{"GET", "/ui/ui.go", 404, "application/json", "no page file"},
		{"POST", "/ui/", 405, "application/json", "method POST not allowed"},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		what := tt.method + " " + tt.path
		if resp.StatusCode != tt.wantStatus {
			t.Errorf("%s: status %d, want %d", what, resp.StatusCode, tt.wantStatus)
			continue
		}
		if got := resp.Header.Get("Content-Type"); tt.wantType != "" && got != tt.wantType {
			t.Errorf("%s: Content-Type %q, want %q", what, got, tt.wantType)
		}
		if !strings.Contains(string(body), tt.wantContains) {
			t.Errorf("%s: body (%d bytes) lacks %q", what, len(body), tt.wantContains)
		}
		if tt.wantStatus == 200 || tt.wantStatus == 404 {
			for k, want := range map[string]string{"Content-Security-Policy": uiCSP, "X-Content-Type-Options": "nosniff",
				"X-Frame-Options": "DENY", "Cache-Control": "no-cache", "Referrer-Policy": "no-referrer"} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s: %s %q, want %q", what, k, got, want)
				}
			}
		}
	}
	// The policy itself: scripts and styles from the page's origin only.
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(uiCSP, want) {
			t.Errorf("the page's CSP %q lacks %q", uiCSP, want)
		}
	}
	if strings.Contains(uiCSP, "unsafe") {
		t.Errorf("the page's CSP %q allows something unsafe", uiCSP)
	}
	// /ui sends the browser to the page; a path that climbs out of /ui/
	// is redirected to its clean form, never served from the page.
	for path, want := range map[string]string{"/ui": "/ui/", "/ui/../openapi.json": "/openapi.json"} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode/100 != 3 || loc != want {
			t.Errorf("GET %s = %d Location %q; want a redirect to %s", path, resp.StatusCode, loc, want)
		}
	}
	// The page needs no token; the API it calls does.
	for _, path := range []string{"/v1/apps", "/v1/streams/x/dead"} {
		r := call(t, "GET", srv.URL+path, "", "")
		if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without a token = %d %v; want 401 with WWW-Authenticate", path, r.status, r.body)
		}
	}
	if r := call(t, "POST", srv.URL+"/v1/events/x/replay", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("POST /v1/events/x/replay without a token = %d; want 401", r.status)
	}
}

// The page's HTML holds no inline script, style or event handler: the
// CSP would block them, so they would be dead code or a broken page.
func TestUIHasNoInlineCode(t *testing.T) {
	html, err := uiFiles.ReadFile("ui/index.html")
	if err != nil {
		t.Fatal(err)
	}
	inline := []*regexp.Regexp{
		regexp.MustCompile(`<script[^>]*>[^<]`),  // a script with a body
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`), // an event handler attribute
		regexp.MustCompile(`(?i)<style|\sstyle\s*=`),
		regexp.MustCompile(`(?i)javascript:`),
	}
	for _, re := range inline {
		if m := re.Find(html); m != nil {
			t.Errorf("index.html has inline code %q (%s)", m, re)
		}
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAll(html, -1) {
		if !strings.Contains(string(tag), ` src="`) {
			t.Errorf("index.html has a script with no src: %s", tag)
		}
	}
	js, err := uiFiles.ReadFile("ui/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "localStorage", "eval("} {
		if strings.Contains(string(js), banned) {
			t.Errorf("app.js uses %s: the page shows the API's data as text only and keeps the token in sessionStorage", banned)
		}
	}
}

// browserPath finds Debian's chromium, or skips (fails, under
// COURIER_REQUIRE_BROWSER=1, as .ci/browser runs it).
func browserPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	const msg = "no chromium on PATH: install it with `apt-get install -y chromium` (or run .ci/browser)"
	if os.Getenv("COURIER_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + "; COURIER_REQUIRE_BROWSER=1 makes this a failure")
	}
	t.Skip(msg)
	return ""
}

// gate is a loopback receiver, built with the kit, that answers 410 Gone
// with an HTML body until opened, then 204, counting what it applied.
type gate struct {
	srv     *httptest.Server
	mu      sync.Mutex
	open    bool
	applied map[string]int
}

// hostileBody is what the receiver answers while closed: HTML that
// would run and leave marks if the page parsed it.
const hostileBody = `<img src=x onerror="document.body.dataset.pwned=1"><b id="injected">gone</b>`

func newGate(t *testing.T) *gate {
	g := &gate{applied: map[string]int{}}
	h, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: time.Hour, Store: receiver.NewMemory(),
		Logger: slog.New(slog.DiscardHandler)},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ev, _ := receiver.FromContext(r.Context())
			g.mu.Lock()
			defer g.mu.Unlock()
			if !g.open {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusGone)
				_, _ = io.WriteString(w, hostileBody)
				return
			}
			g.applied[ev.ID]++
			w.WriteHeader(http.StatusNoContent)
		}))
	if err != nil {
		t.Fatal(err)
	}
	g.srv = httptest.NewServer(h)
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gate) setOpen() {
	g.mu.Lock()
	g.open = true
	g.mu.Unlock()
}

func (g *gate) count(id string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.applied[id]
}

func TestBrowserReplaysADeadLetter(t *testing.T) {
	browser := browserPath(t)
	if testing.Short() {
		t.Skip("-short: the browser test starts chromium")
	}
	ctx, cancel := context.WithTimeout(t.Context(), testLimit)
	defer cancel()

	// A dead letter, by API: the receiver answers 410, which kills the
	// delivery at once and disables the endpoint (reason gone).
	recv := newGate(t)
	base := startPlatform(t)
	const appName = `Acme <i id="app-injected">inc</i>`
	app := mustCall(t, 201, "POST", base+"/v1/apps", fmt.Sprintf(`{"name":%q}`, appName))["id"].(string)
	created := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/endpoints", `{"url":"`+recv.srv.URL+`/hook","secrets":["`+secret+`"]}`)
	ep, stream := created["id"].(string), created["stream"].(string)
	epURL := base + "/v1/apps/" + app + "/endpoints/" + ep
	msg := mustCall(t, 201, "POST", base+"/v1/apps/"+app+"/messages", `{"event_type":"invoice.paid","payload":{"n":1}}`)["id"].(string)
	id := msg + "." + ep
	awaitAnswer(t, "the endpoint disabled by the 410", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/health", "") },
		disabledWith("gone"))
	awaitAnswer(t, "the dead letter", func() map[string]any { return mustCall(t, 200, "GET", base+"/v1/streams/"+stream+"/dead", "") },
		func(v map[string]any) bool {
			d := v["dead"].([]any)
			return len(d) == 1 && d[0].(map[string]any)["id"] == id
		})
	awaitAnswer(t, "the 410 in the attempt log", func() map[string]any { return mustCall(t, 200, "GET", epURL+"/attempts", "") },
		func(v map[string]any) bool { return len(v["data"].([]any)) == 1 })

	dir := t.TempDir()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(browser), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1360, 900))
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()

	// What the page does, seen from the browser: exceptions, CSP
	// reports, and every request to the API with its URL and bearer.
	type apiRequest struct{ url, auth string }
	var (
		mu       sync.Mutex
		thrown   []string
		blocked  []string
		requests []apiRequest
	)
	if err := chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			text := e.ExceptionDetails.Text
			if x := e.ExceptionDetails.Exception; x != nil {
				text += " " + x.Description
			}
			thrown = append(thrown, text)
		case *cdplog.EventEntryAdded:
			if strings.Contains(e.Entry.Text, "Content Security Policy") {
				blocked = append(blocked, e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if strings.Contains(e.Request.URL, "/v1/") {
				auth, _ := e.Request.Headers["Authorization"].(string)
				requests = append(requests, apiRequest{e.Request.URL, auth})
			}
		}
	}); err != nil {
		t.Fatal("starting chromium:", err)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(tab, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	eval := func(expr string) bool {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}

	// A wrong token: the API's 401 is shown plainly.
	err := chromedp.Do(tab,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token"),
		chromedp.Click(chromedp.ID("use-token")),
		chromedp.WaitVisible(chromedp.ID("error")),
	)
	if err != nil {
		t.Fatal("entering a wrong token:", err)
	}
	if e := text("#error"); !strings.Contains(e, "401") || !strings.Contains(e, "bearer token not accepted") {
		t.Errorf("with a wrong token the page says %q; want the API's 401 and its error", e)
	}

	// The token, then applications -> the application -> the endpoint.
	appRow := fmt.Sprintf(`tr[data-app=%q]`, app)
	epRow := fmt.Sprintf(`tr[data-endpoint=%q]`, ep)
	deadRow := fmt.Sprintf(`#dead tr[data-id=%q]`, id)
	err = chromedp.Do(tab,
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("use-token")),
		chromedp.WaitVisible(chromedp.CSS(`#view[data-state=done] `+appRow)),
		chromedp.Click(chromedp.CSS(appRow+" a")),
		chromedp.WaitVisible(chromedp.CSS(`#view[data-state=done] `+epRow)),
	)
	if err != nil {
		t.Fatal("listing the application's endpoints:", err)
	}
	if got := text(epRow + " td.disabled"); got != "disabled: gone" {
		t.Errorf("the endpoint's state in the list is %q; want disabled: gone", got)
	}
	if got := text("#crumbs"); !strings.Contains(got, appName) {
		t.Errorf("breadcrumbs %q lack the application's name %q as text", got, appName)
	}
	err = chromedp.Do(tab,
		chromedp.Click(chromedp.CSS(epRow+" a")),
		chromedp.WaitVisible(chromedp.CSS(`#view[data-state=done] `+deadRow)),
	)
	if err != nil {
		t.Fatal("opening the endpoint:", err)
	}
	if got := text("#state"); got != "disabled: gone" {
		t.Errorf("the endpoint's state is %q; want disabled: gone", got)
	}
	if got := text("#attempts tr[data-outcome=refused] pre.body"); got != hostileBody {
		t.Errorf("the 410's response body is shown as %q; want the text %q", got, hostileBody)
	}
	if got := text("#attempts tr[data-outcome=refused] td.status"); got != "410" {
		t.Errorf("the attempt's status is shown as %q; want 410", got)
	}
	if eval(`document.getElementById("injected") !== null || document.getElementById("app-injected") !== null || "pwned" in document.body.dataset`) {
		t.Error("HTML from the API was parsed into the page")
	}
	if loc, err := chromedp.Run(tab, chromedp.Location()); err != nil || !strings.HasSuffix(loc, "/ui/#/apps/"+app+"/endpoints/"+ep) {
		t.Errorf("the endpoint's view is at %q (%v); want /ui/#/apps/%s/endpoints/%s", loc, err, app, ep)
	}

	// Enable, then Replay with the receiver accepting: delivered.
	recv.setOpen()
	err = chromedp.Do(tab,
		chromedp.Click(chromedp.ID("enable")),
		chromedp.WaitVisible(chromedp.CSS(`#view[data-state=done] #health[data-enabled=true]`)),
		chromedp.Click(chromedp.CSS(deadRow+" button.replay")),
		chromedp.WaitVisible(chromedp.ID("notice")),
	)
	if err != nil {
		t.Fatal("enabling the endpoint and replaying the dead letter:", err)
	}
	if got := text("#notice"); !strings.Contains(got, "Replayed "+id) {
		t.Errorf("after Replay the page says %q; want Replayed %s", got, id)
	}
	awaitAnswer(t, "the replayed event delivered", func() map[string]any { return mustCall(t, 200, "GET", base+"/v1/events/"+id, "") },
		func(v map[string]any) bool { return v["state"] == "delivered" })
	if n := recv.count(id); n != 1 {
		t.Errorf("the receiver applied %s %d times; want once", id, n)
	}
	if h := mustCall(t, 200, "GET", epURL+"/health", ""); h["enabled"] != true {
		t.Errorf("health after Enable = %v; want enabled", h)
	}
	// The page shows it too, once refreshed.
	err = chromedp.Do(tab,
		chromedp.Click(chromedp.ID("refresh")),
		chromedp.WaitVisible(chromedp.CSS(`#view[data-state=done] #attempts tr[data-outcome=delivered]`)),
		chromedp.WaitVisible(chromedp.CSS(`#view[data-state=done] #dead p.empty`)),
	)
	if err != nil {
		t.Fatal("refreshing the endpoint's view:", err)
	}
	if got := text("#state"); got != "enabled" {
		t.Errorf("after Enable the endpoint's state is %q; want enabled", got)
	}

	// A view of what does not exist shows the API's 404 as it said it;
	// a hash that would climb out of its API path is refused.
	for hash, want := range map[string]string{
		"#/apps/app_nope":                     "GET /v1/apps/app_nope: 404 reading the application",
		"#/apps/" + app + "/endpoints/%2E%2E": "no such view",
	} {
		err = chromedp.Do(tab,
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, hash)),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`$("view").dataset.state === "error" && $("error").textContent.includes(%q)`, want),
				chromedp.WithPollingTimeout(30*time.Second)),
		)
		if err != nil {
			t.Errorf("at %s the page says %q, not %q: %v", hash, text("#error"), want, err)
		}
	}

	shot, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(os.TempDir(), "courier-operator-page.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the endpoint's view after the replay: %s", path)

	// The token: in sessionStorage only, sent as the bearer, never in a URL.
	if !eval(fmt.Sprintf(`sessionStorage.getItem("courier.token") === %q && localStorage.length === 0 && !location.href.includes(%q)`, token, token)) {
		t.Error("the token is not where it belongs: in sessionStorage, and not in localStorage or the page's URL")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) < 8 {
		t.Errorf("%d API requests seen; want at least 8 (apps, app, endpoints, health, attempts, dead, patch, replay)", len(requests))
	}
	for _, r := range requests {
		if strings.Contains(r.url, token) || strings.Contains(r.url, "not-the-token") {
			t.Errorf("a request carries the token in its URL: %s", r.url)
		}
		if r.auth != "Bearer "+token && r.auth != "Bearer not-the-token" {
			t.Errorf("request %s has Authorization %q; want the bearer", r.url, r.auth)
		}
	}
	if len(thrown) > 0 {
		t.Errorf("the page threw: %s", strings.Join(thrown, "; "))
	}
	if len(blocked) > 0 {
		t.Errorf("the CSP blocked part of the page: %s", strings.Join(blocked, "; "))
	}
}

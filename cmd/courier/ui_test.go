// This file proves the operator page: the handler serves the page's
// three files to anyone, with a Content-Security-Policy that allows no
// inline script and with nosniff, while the API it calls still answers
// 401 without a token; the page holds no inline code and shows the API's
// data as text only.
package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
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

package main

import (
	"embed"
	"net/http"
)

// The operator page: applications, their endpoints and health, an
// endpoint's attempts and dead letters, replay and re-enable. Three
// static files (ui/, embedded), no framework. Loading the page needs no
// token: it holds no data. The page asks for an API token, keeps it in
// the tab's sessionStorage only and sends it as the bearer of each API
// call, never in a URL; every figure comes from the JSON API.

//go:embed ui/index.html ui/app.js ui/style.css
var uiFiles embed.FS

// uiFile is one file of the page: its name in uiFiles and its type.
type uiFile struct{ name, contentType string }

var uiPaths = map[string]uiFile{
	"/ui/":          {"ui/index.html", "text/html; charset=utf-8"},
	"/ui/app.js":    {"ui/app.js", "text/javascript; charset=utf-8"},
	"/ui/style.css": {"ui/style.css", "text/css; charset=utf-8"},
}

// uiCSP lets the page run its own script and style and call its own
// origin, and nothing else: no inline script or style, no frame, no
// form posted elsewhere, no plugin.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveUI serves the page's three files under /ui/ (the mux sends /ui
// there); any other path under /ui/ is the API's JSON 404. Every answer,
// the 404 too, carries the page's security headers.
func serveUI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	f, ok := uiPaths[r.URL.Path]
	if !ok {
		writeErr(w, http.StatusNotFound, "no page file %s: the page is /ui/", r.URL.Path)
		return
	}
	b, err := uiFiles.ReadFile(f.name)
	if err != nil {
		panic("the embedded page lacks " + f.name) // fixed at build time
	}
	h.Set("Content-Type", f.contentType)
	_, _ = w.Write(b)
}

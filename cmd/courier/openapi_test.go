// This file proves that openapi.json describes the API the handler
// serves: every route api.routes registers is in the file with its
// method, every operation in the file reaches a route of the handler
// (not the mux's 404 or 405), the file is OpenAPI 3.1, every $ref in it
// resolves, and GET /openapi.json serves it.
package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/courierlab/courier/store/memstore"
)

type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi = %q; want 3.1.x", doc.OpenAPI)
	}
	return doc
}

// testAPI is an api with every route registered and nothing behind
// them that a request without a token reaches, but the store.
func testAPI() *api {
	return &api{cfg: &Config{APITokens: []string{token}, MaxRequestBytes: 1024}, st: memstore.New(time.Now),
		log: slog.New(slog.DiscardHandler), metrics: promhttp.Handler()}
}

func TestEveryRouteIsInOpenAPI(t *testing.T) {
	doc := loadOpenAPI(t)
	routes := testAPI().routes()
	if len(routes) < 20 {
		t.Fatalf("%d routes; the API has at least 20", len(routes))
	}
	for _, rt := range routes {
		raw, ok := doc.Paths[rt.path][strings.ToLower(rt.method)]
		if !ok {
			t.Errorf("%s %s is served but not in openapi.json", rt.method, rt.path)
			continue
		}
		var o struct {
			Security  []map[string][]string `json:"security"`
			Responses map[string]any        `json:"responses"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		if authed := len(o.Security) > 0; authed != rt.auth {
			t.Errorf("%s %s: the file says auth %v; the route's is %v", rt.method, rt.path, authed, rt.auth)
		}
		if len(o.Responses) == 0 {
			t.Errorf("%s %s: no responses in the file", rt.method, rt.path)
		}
	}
}

var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

func TestEveryOpenAPIPathIsServed(t *testing.T) {
	doc := loadOpenAPI(t)
	h := testAPI().handler()
	ops := 0
	for path, methods := range doc.Paths {
		for method := range methods {
			ops++
			url := pathParam.ReplaceAllString(path, "x")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(strings.ToUpper(method), url, strings.NewReader("{}")))
			var e apiError
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			if rec.Code == http.StatusMethodNotAllowed || strings.HasPrefix(e.Error, "no route") {
				t.Errorf("%s %s is in openapi.json but not served: %d %s", strings.ToUpper(method), path, rec.Code, rec.Body)
			}
		}
	}
	if ops != len(testAPI().routes()) {
		t.Errorf("openapi.json has %d operations; the API serves %d routes", ops, len(testAPI().routes()))
	}
	// The check can fail: a path the API does not serve is caught.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/nowhere", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /v1/nowhere = %d; want 404", rec.Code)
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	refs := regexp.MustCompile(`"\$ref":\s*"#/components/schemas/([A-Za-z]+)"`).FindAllSubmatch(openAPI, -1)
	if len(refs) == 0 {
		t.Fatal("no $ref in openapi.json")
	}
	for _, m := range refs {
		if _, ok := schemas[string(m[1])]; !ok {
			t.Errorf("$ref to %s, which components.schemas lacks", m[1])
		}
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	rec := httptest.NewRecorder()
	testAPI().handler().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || !bytes.Equal(rec.Body.Bytes(), openAPI) {
		t.Errorf("GET /openapi.json = %d %s, %d bytes; want 200 application/json, the embedded file", rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
	}
}

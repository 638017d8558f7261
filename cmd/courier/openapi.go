package main

import (
	_ "embed"
	"net/http"
)

// openAPI describes every route of the API (OpenAPI 3.1);
// openapi_test.go holds it to api.routes, both ways.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}

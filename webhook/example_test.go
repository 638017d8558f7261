// Examples: a receiver verifying what courier signs; the output proves it verified.
package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/courierlab/courier/webhook"
)

// A receiver verifies each request before it trusts the body. (The
// receiver package's middleware does this and deduplicates too.)
func ExampleVerifier() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // from your secret store, never from code
	v, err := webhook.NewVerifier([]string{secret}, webhook.DefaultTolerance, nil)
	if err != nil {
		panic(err) // a malformed secret: refuse to start
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := v.Verify(r.Header, body); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Println("verified", r.Header.Get(webhook.HeaderID))
	})

	// What courier sends:
	s, _ := webhook.ParseSecret(secret)
	signer, _ := webhook.NewSigner(s)
	body := `{"order": 42}`
	req := httptest.NewRequest("POST", "/hooks", strings.NewReader(body))
	signer.SetHeaders(req.Header, "evt_42", time.Now(), []byte(body))
	handler.ServeHTTP(httptest.NewRecorder(), req)
	// Output: verified evt_42
}

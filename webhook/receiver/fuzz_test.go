// Fuzz test: whatever headers and body a request carries, the middleware
// never answers 5xx and never lets a request reach the application unless
// it carries the true signature of what it got. Seeds in testdata/fuzz run
// in plain go test.
package receiver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/webhook"
)

func FuzzMiddleware(f *testing.F) {
	const fuzzSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	now := time.Unix(1614265330, 0)
	f.Add("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "s", "1", "1", `{"test": 2432232314}`)
	f.Add("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", "", "+1", "0", `{"test": 2432232314}`)
	f.Add("", "", "", "", "", "", "")
	f.Add("a", "99999999999", "v1,", "s p", "18446744073709551616", "-1", "x")
	sec, _ := webhook.ParseSecret(fuzzSecret)
	sg, _ := webhook.NewSigner(sec)
	f.Fuzz(func(t *testing.T, id, ts, sig, stream, seq, attempt, body string) {
		var reached bool
		app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true })
		h, err := New(Config{Secrets: []string{fuzzSecret}, Window: time.Hour, Store: NewMemory(), Strict: len(body)%2 == 0,
			Now: func() time.Time { return now }, Logger: quiet}, app)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		for k, v := range map[string]string{webhook.HeaderID: id, webhook.HeaderTimestamp: ts, webhook.HeaderSignature: sig,
			webhook.HeaderStream: stream, webhook.HeaderSequence: seq, webhook.HeaderAttempt: attempt} {
			if v != "" && !strings.ContainsAny(v, "\r\n") {
				req.Header.Set(k, v)
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("HTTP %d: %s", w.Code, w.Body)
		}
		if reached {
			got, _ := webhook.ParseTimestamp(req.Header.Get(webhook.HeaderTimestamp))
			want := sg.Sign(req.Header.Get(webhook.HeaderID), got, []byte(body))
			if !strings.Contains(" "+strings.Join(strings.Fields(sig), " ")+" ", " "+want+" ") {
				t.Fatalf("the app was reached without the true signature (id %q ts %q sig %q)", id, ts, sig)
			}
		}
		_, _ = io.Copy(io.Discard, w.Body)
	})
}

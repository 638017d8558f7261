// Tests that SendResponse, against a real loopback server, returns the
// receiver's headers and the first MaxKeptBodyBytes of its body with the
// very outcome Send gives, and nothing when no answer came.
package httpchannel

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
)

func TestSendResponseKeepsHeadersAndBoundedBody(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB
	for _, c := range []struct {
		name     string
		status   int
		body     []byte
		want     []byte
		wantKind machine.Outcome
	}{
		{"short-body-kept-whole", http.StatusServiceUnavailable, []byte("busy, try later"), []byte("busy, try later"), machine.OutcomeFailed},
		{"long-body-cut-at-4KiB", http.StatusOK, long, long[:MaxKeptBodyBytes], machine.OutcomeDelivered},
		{"gone", http.StatusGone, []byte("bye"), []byte("bye"), machine.OutcomeRefused},
		{"no-body", http.StatusNoContent, nil, []byte{}, machine.OutcomeDelivered},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Receiver", "r1")
				w.WriteHeader(c.status)
				_, _ = w.Write(c.body)
			}))
			defer s.Close()
			ch := newChannel(t, Config{Endpoint: s.URL})
			got, resp := ch.SendResponse(context.Background(), attempt(1))
			plain := ch.Send(context.Background(), attempt(2))
			if got != plain {
				t.Errorf("SendResponse's outcome %+v differs from Send's %+v", got, plain)
			}
			if got.Result != c.wantKind || got.Status != c.status {
				t.Errorf("outcome = %+v; want %v with status %d", got, c.wantKind, c.status)
			}
			if h := resp.Header.Get("X-Receiver"); h != "r1" {
				t.Errorf("header X-Receiver = %q; want r1", h)
			}
			if d := cmp.Diff(c.want, resp.Body); d != "" {
				t.Errorf("body (-want +got):\n%s", d)
			}
		})
	}
}

// A MaxResponseBytes below MaxKeptBodyBytes bounds the body kept too:
// the channel never reads more than it is configured to.
func TestSendResponseHonoursMaxResponseBytes(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1000))
	}))
	defer s.Close()
	_, resp := newChannel(t, Config{Endpoint: s.URL, MaxResponseBytes: 100}).SendResponse(context.Background(), attempt(1))
	if len(resp.Body) != 100 {
		t.Errorf("kept %d bytes; want 100 (MaxResponseBytes)", len(resp.Body))
	}
}

func TestSendResponseWithoutAnswerIsEmpty(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close() // nothing listens there now
	got, resp := newChannel(t, Config{Endpoint: url}).SendResponse(context.Background(), attempt(1))
	if got.Result != machine.OutcomeFailed || got.Status != 0 {
		t.Errorf("outcome = %+v; want failed with no status", got)
	}
	if resp.Header != nil || resp.Body != nil {
		t.Errorf("response = %+v; want none", resp)
	}
}

// Tests that SendResponse, against a real loopback server, returns the
// receiver's headers and the first MaxKeptBodyBytes of its body with the
// very outcome Send gives, and nothing when no answer came; and that
// neither reads more of an answer than MaxResponseBytes.
package httpchannel

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/channel"
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

// countingBody is an endless response body that counts the bytes read
// from it.
type countingBody struct{ n int64 }

func (b *countingBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	b.n += int64(len(p))
	return len(p), nil
}

func (b *countingBody) Close() error { return nil }

// An endless answer is read up to MaxResponseBytes in all, the bytes kept
// included, by SendResponse as by Send: a receiver cannot hold an attempt
// by talking, and what SendResponse keeps is not read on top of the bound.
func TestEndlessAnswerIsReadUpToMaxResponseBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		max  int64
	}{
		{"bound-above-kept", 3 * MaxKeptBodyBytes},
		{"bound-below-kept", 100},
	} {
		for _, keep := range []bool{false, true} {
			var body *countingBody
			ch := newChannel(t, Config{Endpoint: "http://hooks.example/in", MaxResponseBytes: c.max,
				Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
					body = &countingBody{}
					return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: body, Request: r}, nil
				})})
			var got channel.Outcome
			if keep {
				got, _ = ch.SendResponse(context.Background(), attempt(1))
			} else {
				got = ch.Send(context.Background(), attempt(1))
			}
			if got.Result != machine.OutcomeDelivered {
				t.Fatalf("%s, keep %v: %+v, want delivered", c.name, keep, got)
			}
			if body.n > c.max {
				t.Errorf("%s, keep %v: read %d bytes of the answer; want at most MaxResponseBytes, %d", c.name, keep, body.n, c.max)
			}
		}
	}
}

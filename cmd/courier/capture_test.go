package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// captured is one request a capture received.
type captured struct {
	header http.Header
	body   []byte
}

// capture is a loopback receiver that keeps every POST it gets (headers
// and body) and answers 204, for tests that look at what courier sends.
type capture struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []captured
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			c.mu.Lock()
			c.got = append(c.got, captured{header: r.Header.Clone(), body: b})
			c.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// requests is a copy of what came so far.
func (c *capture) requests() []captured {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// await waits until n requests came and returns the n-th.
func (c *capture) await(t *testing.T, n int) captured {
	t.Helper()
	eventually(t, "a request reached the receiver", func() bool { return len(c.requests()) >= n })
	return c.requests()[n-1]
}

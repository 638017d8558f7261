// Benchmarks: the middleware's cost per delivery (read, verify, claim,
// apply, commit) with the memory store, as the body grows (0, 1 KiB,
// 100 KiB, 1 MiB), for fresh IDs and for duplicates.
package receiver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func BenchmarkMiddleware(b *testing.B) {
	now := time.Now()
	for _, dup := range []bool{false, true} {
		for _, n := range []int{0, 1 << 10, 100 << 10, 1 << 20} {
			body := make([]byte, n)
			h, err := New(Config{Secrets: []string{secret}, Window: time.Hour, Store: NewMemory(), Now: func() time.Time { return now }, Logger: quiet},
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("duplicate=%v/body=%d", dup, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					id := "evt_0"
					if !dup {
						i++
						id = "evt_" + strconv.Itoa(i)
					}
					req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
					signer.SetHeaders(req.Header, id, now, body)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusNoContent && w.Code != http.StatusOK {
						b.Fatalf("HTTP %d", w.Code)
					}
				}
			})
		}
	}
}

// Benchmarks: one signed attempt over loopback HTTP, as the body grows (0,
// 1 KiB, 100 KiB, 1 MiB); the receiver reads the body and answers 204.
package httpchannel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
)

func BenchmarkSend(b *testing.B) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer s.Close()
	ch := newChannel(b, Config{Endpoint: s.URL})
	for _, n := range []int{0, 1 << 10, 100 << 10, 1 << 20} {
		a := channel.Attempt{Stream: "s", ID: "evt_1", Seq: 1, Attempt: 1, Payload: make([]byte, n)}
		b.Run(fmt.Sprintf("body=%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if o := ch.Send(context.Background(), a); o.Result != machine.OutcomeDelivered {
					b.Fatal(o)
				}
			}
		})
	}
}

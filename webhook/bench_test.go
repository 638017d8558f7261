// Benchmarks: the cost of signing and verifying grows with the body (0,
// 1 KiB, 100 KiB, 1 MiB) and, when rotating, with the number of secrets.
package webhook

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

var benchSizes = []int{0, 1 << 10, 100 << 10, 1 << 20}

func BenchmarkSign(b *testing.B) {
	for _, secrets := range []int{1, 2} {
		ss := []string{specSecret, NewSecret()}[:secrets]
		sg := mustSigner(b, ss...)
		for _, n := range benchSizes {
			body := make([]byte, n)
			b.Run(fmt.Sprintf("secrets=%d/body=%d", secrets, n), func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				buf := make([]byte, 0, 128)
				for b.Loop() {
					buf = sg.AppendSign(buf[:0], specID, specTS, body)
				}
			})
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	sec := mustSecret(b, specSecret)
	sg := mustSigner(b, specSecret)
	now := time.Unix(specTS, 0)
	for _, n := range benchSizes {
		body := make([]byte, n)
		h := http.Header{}
		sg.SetHeaders(h, specID, now, body)
		b.Run(fmt.Sprintf("body=%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if err := Verify(h, body, now, 0, sec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

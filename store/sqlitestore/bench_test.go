package sqlitestore

import (
	"path/filepath"
	"testing"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/storetest"
)

// BenchmarkStore measures enqueues and full delivery cycles per second on
// a real file with 1, 4 and 16 streams (see storetest.Bench).
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		s, err := Open(b.Context(), filepath.Join(b.TempDir(), "courier.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkClaim measures ClaimDue among 1,000 and 10,000 due streams in
// a real file (see storetest.BenchClaim).
func BenchmarkClaim(b *testing.B) {
	storetest.BenchClaim(b, func(b *testing.B) store.Store {
		s, err := Open(b.Context(), filepath.Join(b.TempDir(), "courier.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkSaveBatch measures one delivery saved on each of 1, 8 and 64
// streams, with one Save each and with one SaveBatch, in a real file
// (see storetest.BenchSaveBatch).
func BenchmarkSaveBatch(b *testing.B) {
	storetest.BenchSaveBatch(b, func(b *testing.B) store.Store {
		s, err := Open(b.Context(), filepath.Join(b.TempDir(), "courier.db"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}

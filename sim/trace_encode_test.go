// The trace encoder's shortcuts are held byte for byte to the plain
// encoding (encoding/binary's varints), over random and extreme inputs.
package sim

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

func TestAppendVarintsMatchBinary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []uint64{0, 1, 0x7f, 0x80, 0xff, 0x3fff, 0x4000, math.MaxInt64, math.MaxUint64, 1 << 63}
	for range 10000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		for _, u := range []uint64{v, -v} {
			if got, want := appendUvarint([]byte{9}, u), binary.AppendUvarint([]byte{9}, u); !bytes.Equal(got, want) {
				t.Fatalf("uvarint %d: got %x, want %x", u, got, want)
			}
			if got, want := appendVarint([]byte{9}, int64(u)), binary.AppendVarint([]byte{9}, int64(u)); !bytes.Equal(got, want) {
				t.Fatalf("varint %d: got %x, want %x", int64(u), got, want)
			}
		}
	}
}

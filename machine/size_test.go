// The size test proves that an entry, the memory one event takes in the
// machine beside its ID and payload, fits a 128-byte allocation: one more
// byte moves every event to the next size class (144 bytes), which
// BenchmarkMemoryPerEvent would show only as a drift.
package machine

import (
	"testing"
	"unsafe"
)

func TestEntryFitsSizeClass(t *testing.T) {
	const sizeClass = 128
	if got := unsafe.Sizeof(entry{}); got > sizeClass {
		t.Fatalf("an entry takes %d bytes, over the %d-byte size class (Record alone: %d)", got, sizeClass, unsafe.Sizeof(Record{}))
	}
}

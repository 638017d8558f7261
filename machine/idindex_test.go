// The ID index test proves that the index finds exactly the entries put
// in it and not removed, against a Go map as the model, under random puts,
// removals and lookups. Each run draws the IDs' hashes from a handful of
// values, so that IDs share full hashes and home slots, runs wrap around
// the end of a small table, and removals shift runs back: the cases a
// real hash makes rare. After every action it checks that every entry can
// be reached from its home slot without crossing an empty one.
package machine

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

func TestIDIndexAgainstMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := make([]string, rapid.IntRange(1, 200).Draw(t, "ids"))
		hashes := rapid.SliceOfN(rapid.Uint64(), 1, 8).Draw(t, "hashes")
		hashOf := map[string]uint64{}
		for i := range ids {
			ids[i] = fmt.Sprintf("id%d", i)
			hashOf[ids[i]] = rapid.SampledFrom(hashes).Draw(t, "hash")
		}
		var x idIndex
		model := map[string]*entry{}
		t.Repeat(map[string]func(*rapid.T){
			"put": func(t *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(t, "id")
				if model[id] != nil {
					t.Skip("already in")
				}
				e := newEntry(Record{ID: id})
				x.putHashed(e, hashOf[id])
				model[id] = e
			},
			"del": func(t *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(t, "id")
				if model[id] == nil {
					t.Skip("not in")
				}
				x.del(model[id])
				delete(model, id)
			},
			"get": func(t *rapid.T) {
				id := rapid.SampledFrom(ids).Draw(t, "id")
				if got, want := x.lookup(id, hashOf[id]), model[id]; got != want {
					t.Fatalf("lookup %s: got %p, want %p", id, got, want)
				}
			},
			"": func(t *rapid.T) { checkIDIndex(t, &x, model, hashOf) },
		})
	})
}

// checkIDIndex checks x's count and that every slot in use is reachable
// from its home slot, then looks every entry of the model up.
func checkIDIndex(t *rapid.T, x *idIndex, model map[string]*entry, hashOf map[string]uint64) {
	if x.n != len(model) {
		t.Fatalf("the index counts %d entries, the model holds %d", x.n, len(model))
	}
	mask := len(x.slots) - 1
	for i, s := range x.slots {
		if s.e == nil {
			continue
		}
		if uint32(s.hash) != s.e.idHash {
			t.Fatalf("slot %d: hash %#x, but the entry %s keeps %#x", i, s.hash, s.e.rec.ID, s.e.idHash)
		}
		for j := int(s.hash) & mask; j != i; j = (j + 1) & mask {
			if x.slots[j].e == nil {
				t.Fatalf("slot %d (%s) is cut off from its home %d by the empty slot %d", i, s.e.rec.ID, int(s.hash)&mask, j)
			}
		}
	}
	for id, e := range model {
		if got := x.lookup(id, hashOf[id]); got != e {
			t.Fatalf("lookup %s: got %p, want %p", id, got, e)
		}
	}
}

// TestHashIDSpreads proves that the hash spreads IDs that differ in one
// byte, wherever it is, over a table's home slots: a hash that ignored a
// byte (the tail, or one of a word) would put them all in one run.
func TestHashIDSpreads(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 23, 64} {
		for pos := range n {
			homes := map[uint64]bool{}
			for c := range 256 {
				b := make([]byte, n)
				for i := range b {
					b[i] = 'a'
				}
				b[pos] = byte(c)
				homes[hashID(1, string(b))&1023] = true
			}
			// 256 keys over 1024 slots at random fill about 227 of them.
			if len(homes) < 200 {
				t.Errorf("IDs of %d bytes differing in byte %d: %d distinct homes of 1024, want about 227", n, pos, len(homes))
			}
		}
	}
}

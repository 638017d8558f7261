package machine

import "math/bits"

// The ID index finds the entry an input names. It replaced a
// map[string]*entry, which cost about 40% of a steady accept→deliver
// cycle once the idempotency window held its 100,000 settled IDs: every
// cycle inserts a new ID and forgets the oldest, and in a large Go map
// each of those reads a control word, a slot and then, to compare keys,
// the key's bytes behind the string pointer — three cache misses, and a
// rehash now and then to clear the tombstones that deletes leave.
//
// The index is an open-addressing hash table with linear probing. A slot
// holds an entry and the 64-bit hash of its ID, so that a probe compares
// hashes in the slot array alone, and reads an entry's ID only when the
// hashes match: an Accept of a new ID, the common case, touches one or
// two cache lines of the array and no entry at all. Two IDs with the same
// hash are still told apart by that comparison: a lookup goes on probing
// past a slot whose hash matches but whose ID does not. The entry keeps
// the low half of its hash (entry.idHash), so forgetting an old entry
// finds its slot without reading its ID's bytes again, and the slot is
// matched by the entry's pointer. A removal shifts the later slots of the
// same run back into the hole (backward-shift deletion) instead of
// leaving a tombstone, so the table never needs cleaning, and its probe
// runs stay as short as its load allows.
//
// The hash is seeded with Config.Seed; its values never reach the
// machine's output, and nothing walks the table in slot order, so the
// batches do not depend on it. Unlike a Go map's random seed, this one is
// only as secret as Config.Seed: a producer that knows it could choose
// IDs whose hashes share a home slot, and make their steps slow (a probe
// run as long as those IDs are many), never wrong.

// idSlot is one slot of the index: empty when e is nil.
type idSlot struct {
	hash uint64 // hashID of e.rec.ID
	e    *entry
}

// idIndex maps every entry not forgotten by its ID.
type idIndex struct {
	slots []idSlot // a power of two of them, or none
	n     int      // slots in use
	seed  uint64
}

// firstIndexSlots is the size of the first table: enough for a machine
// of a dozen events (a simulator's swarm starts dozens of machines of a
// few each), 256 bytes. minIndexSlots is the size of the table after
// it, as of every table before there was a smaller first one.
const (
	firstIndexSlots = 16
	minIndexSlots   = 64
)

// hash is the hash of id in this index.
func (x *idIndex) hash(id string) uint64 { return hashID(x.seed, id) }

// get returns the entry whose ID is id, or nil.
func (x *idIndex) get(id string) *entry { return x.lookup(id, x.hash(id)) }

// lookup is get for an ID whose hash is h.
func (x *idIndex) lookup(id string, h uint64) *entry {
	if x.n == 0 {
		return nil
	}
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == nil {
			return nil
		}
		if s.hash == h && s.e.rec.ID == id {
			return s.e
		}
	}
}

// put indexes e, whose ID must not be in the index.
func (x *idIndex) put(e *entry) { x.putHashed(e, x.hash(e.rec.ID)) }

// putHashed is put for an entry whose ID's hash is h; it records the hash
// in the entry.
func (x *idIndex) putHashed(e *entry, h uint64) {
	// Grow at three quarters full: a probe run then stays short (about
	// eight slots, two or three cache lines, for a miss at worst).
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	e.idHash = uint32(h)
	x.insert(idSlot{hash: h, e: e})
	x.n++
}

// insert puts s in the first empty slot of its run.
func (x *idIndex) insert(s idSlot) {
	mask := len(x.slots) - 1
	i := int(s.hash) & mask
	for x.slots[i].e != nil {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

// grow doubles the table and moves every slot to its place in the new one.
// The hashes are in the slots: no ID is read or hashed again.
func (x *idIndex) grow() {
	old := x.slots
	if uint64(len(old)) >= 1<<32 {
		// entry.idHash keeps 32 bits of the hash, enough for the home
		// slot of a table of up to 2^32 slots (3 billion entries).
		panic("machine: the ID index cannot grow past 2^32 slots")
	}
	n := max(minIndexSlots, 2*len(old))
	if len(old) == 0 {
		n = firstIndexSlots
	}
	x.slots = make([]idSlot, n)
	for _, s := range old {
		if s.e != nil {
			x.insert(s)
		}
	}
}

// del removes e, which must be in the index.
func (x *idIndex) del(e *entry) {
	mask := len(x.slots) - 1
	i := int(e.idHash) & mask // the table has at most 2^32 slots: see grow
	for x.slots[i].e != e {
		i = (i + 1) & mask
	}
	// Backward shift: the hole at i would end the run early for every
	// later slot of it, so each of them that may sit at i (its home is
	// not after i in the run) moves there, and the hole moves to where it
	// was, until the run ends.
	for j := (i + 1) & mask; x.slots[j].e != nil; j = (j + 1) & mask {
		home := int(x.slots[j].hash) & mask
		if (j-home)&mask >= (j-i)&mask {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = idSlot{}
	x.n--
}

// hashID hashes an ID with the multiply-and-fold mix of wyhash: eight
// bytes at a time, then the last eight (or, for a short ID, two
// overlapping loads of four, or three single bytes), which cover every
// byte of the ID once the length is mixed in. It needs to spread IDs over
// the table, nothing more: it is no part of the machine's contract, and a
// port may use another.
func hashID(seed uint64, id string) uint64 {
	const (
		k0 = 0xa0761d6478bd642f
		k1 = 0xe7037ed1a0b428db
		k2 = 0x8ebc6af09c88c6e3
	)
	n := len(id)
	h := seed ^ k0 ^ uint64(n)
	var w uint64
	switch {
	case n > 8:
		for rest := id; len(rest) > 8; rest = rest[8:] {
			h = mix(h^load64(rest), k1)
		}
		w = load64(id[n-8:])
	case n == 8:
		w = load64(id)
	case n >= 4:
		w = uint64(load32(id)) | uint64(load32(id[n-4:]))<<32
	case n > 0:
		w = uint64(id[0])<<16 | uint64(id[n/2])<<8 | uint64(id[n-1])
	}
	return mix(mix(h^w, k1), k2)
}

// load64 reads the first eight bytes of s, little-endian (the compiler
// makes one load of it).
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// load32 reads the first four bytes of s, little-endian.
func load32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// mix multiplies a by b and folds the 128-bit product into 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

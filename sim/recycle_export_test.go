package sim

import (
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// PoisonRecycled fills all the room of every pooled buffer of entries and
// of Final records with junk, for the tests that hold a later run on them
// to a run on new memory: Recycle no longer clears them, so nothing may
// read what a past run left before writing it whole.
func PoisonRecycled() {
	junk := machine.Record{ID: "junk", Seq: 99, Payload: []byte("junk"), State: machine.Dead, Attempts: 9, Reason: 1}
	poison(&slabPool, invariants.Entry{Step: 7, Kind: invariants.Kind(3), ID: "junk", Seq: 9, Attempt: 9, Record: junk, Worker: "junk", Token: 9, RetryAfter: 9, Detail: "junk"})
	poison(&finalsPool, junk)
}

// poison sets every value a buffer in p has room for to junk.
func poison[T any](p *pool[[]T], junk T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.free {
		s = s[:cap(s)]
		for i := range s {
			s[i] = junk
		}
	}
}

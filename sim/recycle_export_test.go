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
	entry := invariants.Entry{Step: 7, Kind: invariants.Kind(3), ID: "junk", Seq: 9, Attempt: 9, Record: junk, Worker: "junk", Token: 9, RetryAfter: 9, Detail: "junk"}
	slabPool.mu.Lock()
	for _, s := range slabPool.free {
		s = s[:cap(s)]
		for i := range s {
			s[i] = entry
		}
	}
	slabPool.mu.Unlock()
	finalsPool.mu.Lock()
	for _, f := range finalsPool.free {
		f = f[:cap(f)]
		for i := range f {
			f[i] = junk
		}
	}
	finalsPool.mu.Unlock()
}

// forget removes only its own stream's entry: a stream the store granted
// again under a new lease keeps the new entry when the old one is
// forgotten late (the lost session's swap bug: a release of the old
// lease, refused as stale, deleted the new lease's entry, and the new
// machine probed for minutes while every reply was dropped).
package worker

import (
	"testing"

	"github.com/courierlab/courier/store"
)

func TestForgetKeepsTheNewLeasesEntry(t *testing.T) {
	w := &Worker{streams: map[string]*stream{}}
	old := &stream{lease: store.Lease{Stream: "s", Token: 1}}
	renewed := &stream{lease: store.Lease{Stream: "s", Token: 2}}
	w.streams["s"], w.order = renewed, []*stream{renewed}
	w.forget(old)
	if w.streams["s"] != renewed || len(w.order) != 1 {
		t.Fatalf("forgetting the old lease's stream left streams[s] = %+v, order %d long; want the new lease's kept", w.streams["s"], len(w.order))
	}
	w.forget(renewed)
	if w.streams["s"] != nil || len(w.order) != 0 {
		t.Errorf("forgetting the new lease's stream left streams[s] = %+v, order %d long", w.streams["s"], len(w.order))
	}
}

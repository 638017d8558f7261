package killtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
)

// witness is what the parent knows: what the children were told was
// durable, and what it read itself after earlier kills.
type witness struct {
	acked    map[string]bool
	attempts map[string]int          // the highest attempt count known durable
	terminal map[string]store.Record // terminal records as first known
	told     map[string]string       // "STATE REASON N" a child was told
	leases   []store.Lease           // the last child's leases

	attemptsChecked, leasesRefused int
}

func newWitness() *witness {
	return &witness{acked: map[string]bool{}, attempts: map[string]int{}, terminal: map[string]store.Record{}, told: map[string]string{}}
}

// learn reads a dead child's lines.
func (w *witness) learn(t *testing.T, lines []string) {
	t.Helper()
	w.leases = w.leases[:0]
	for _, line := range lines {
		f := strings.Fields(line)
		switch f[0] {
		case "ack":
			w.acked[f[1]] = true
		case "try":
			var n int
			fmt.Sscan(f[2], &n)
			w.attempts[f[1]] = max(w.attempts[f[1]], n)
		case "end":
			w.told[f[1]] = strings.Join(f[2:], " ")
		case "lease":
			var token uint64
			var us int64
			fmt.Sscan(f[3], &token)
			fmt.Sscan(f[4], &us)
			w.leases = append(w.leases, store.Lease{Stream: f[1], Owner: f[2], Token: token, Expires: time.UnixMicro(us)})
		}
	}
}

// check reopens the store and holds it to everything the witness knows.
func (w *witness) check(t *testing.T, run int, open Open) {
	t.Helper()
	ctx := t.Context()
	s, closeStore, err := open(ctx)
	if err != nil {
		t.Fatalf("reopen after kill %d: %v", run, err)
	}
	defer closeStore()
	for id := range w.acked {
		r, err := s.Get(ctx, id)
		if err != nil {
			t.Errorf("after kill %d: acknowledged %s: %v", run, id, err)
			continue
		}
		w.attemptsChecked++
		if r.Attempts < w.attempts[id] {
			t.Errorf("after kill %d: %s has %d attempts, fell from %d", run, id, r.Attempts, w.attempts[id])
		}
		w.attempts[id] = r.Attempts
		if told, ok := w.told[id]; ok && told != fmt.Sprintf("%d %d %d", r.State, r.Reason, r.Attempts) {
			t.Errorf("after kill %d: %s is %v %v attempts=%d, but a child was told %q", run, id, r.State, r.Reason, r.Attempts, told)
		}
		if was, ok := w.terminal[id]; ok && (was.Delivery != r.Delivery || was.Last != r.Last || !was.SettledAt.Equal(r.SettledAt)) {
			t.Errorf("after kill %d: terminal %s changed from %+v to %+v", run, id, was.Delivery, r.Delivery)
		}
		if r.State.Terminal() {
			if _, ok := w.terminal[id]; !ok {
				w.terminal[id] = r
			}
		}
	}
	w.refuseDeadLeases(t, run, s)
}

// refuseDeadLeases waits for the dead child's leases to expire, takes
// each stream, and requires a Save under the dead lease to be refused.
func (w *witness) refuseDeadLeases(t *testing.T, run int, s store.Store) {
	t.Helper()
	ctx := t.Context()
	for _, dead := range w.leases {
		var l store.Lease
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if l, err = s.Acquire(ctx, dead.Stream, "checker", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
				break
			}
		}
		if err != nil {
			t.Errorf("after kill %d: taking %s from the dead child: %v", run, dead.Stream, err)
			continue
		}
		recs, err := s.Pending(ctx, l, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 0 {
			u := store.UpdateOf(recs[0])
			u.Attempts++
			if err := s.Save(ctx, dead, []store.Update{u}); !errors.Is(err, store.ErrStaleLease) {
				t.Errorf("after kill %d: Save under the dead child's lease %+v: %v, want %v", run, dead, err, store.ErrStaleLease)
			}
		}
		if _, err := s.Renew(ctx, dead, time.Minute); !errors.Is(err, store.ErrStaleLease) {
			t.Errorf("after kill %d: Renew of the dead child's lease: %v, want %v", run, err, store.ErrStaleLease)
		}
		w.leasesRefused++
		if err := s.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
}

package memstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// hasDue is the plain computation dueAt's summary stands for: a parked
// record, or a pending or retry one whose NextAt has come.
func hasDue(recs []*rec, now time.Time) bool {
	for _, r := range recs {
		switch r.State {
		case machine.Parked:
			return true
		case machine.Pending, machine.Retry:
			if !r.NextAt.After(now) {
				return true
			}
		}
	}
	return false
}

// TestDueSummaryKeptUpToDate: after every random change, each stream's
// due summary, read at instants around every NextAt, agrees with the
// plain computation, and says when the stream first comes due.
func TestDueSummaryKeptUpToDate(t *testing.T) {
	ctx := context.Background()
	const tick = 250 * time.Millisecond
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 7))
		now := epoch
		s := New(func() time.Time { return now })
		streams := []string{"a", "b", "c"}
		for range 600 {
			stream, id := streams[rng.IntN(3)], fmt.Sprintf("e%d", rng.IntN(20))
			switch rng.IntN(6) {
			case 0:
				s.Enqueue(ctx, stream, id, nil)
			case 1, 2:
				changeOne(ctx, s, rng, stream, now, tick)
			case 3:
				s.Replay(ctx, id, "op")
			case 4:
				s.Discard(ctx, id, "op")
				s.DeleteSettled(ctx, time.Duration(1+rng.IntN(8))*tick, 2)
			case 5:
				now = now.Add(time.Duration(rng.IntN(8)) * tick)
			}
			for _, st := range s.byName {
				for _, at := range []time.Time{now, now.Add(-tick), now.Add(time.Duration(rng.IntN(40)) * tick)} {
					due, first := s.dueAt(st, at)
					if want := hasDue(st.recs, at); due != want {
						t.Fatalf("seed %d: stream %s due at %v = %v, want %v", seed, st.name, at, due, want)
					}
					if !due && first != endOfTime && (hasDue(st.recs, first.Add(-1)) || !hasDue(st.recs, first)) {
						t.Fatalf("seed %d: stream %s not due at %v, first due at %v: wrong", seed, st.name, at, first)
					}
				}
			}
		}
	}
}

// changeOne takes stream's lease and saves one of its records in a new
// state, as a machine might.
func changeOne(ctx context.Context, s *Store, rng *rand.Rand, stream string, now time.Time, tick time.Duration) {
	st := s.streams[stream]
	if st == nil || len(st.recs) == 0 {
		return
	}
	st.lease = store.Held{} // whoever held it, it is this test's now
	l, err := s.Acquire(ctx, stream, "w", time.Hour)
	if err != nil {
		panic(err)
	}
	r := st.recs[rng.IntN(len(st.recs))]
	u := store.UpdateOf(r.Machine())
	u.State = []machine.State{machine.Pending, machine.Retry, machine.Retry, machine.Parked, machine.Delivered, machine.Dead}[rng.IntN(6)]
	u.Reason = machine.NotDead
	if u.State == machine.Dead {
		u.Reason = machine.Expired
	}
	if !u.State.Terminal() {
		u.Attempts++
	}
	u.NextAt = now.Add(time.Duration(rng.IntN(40)-8) * tick)
	s.Save(ctx, l, []store.Update{u}) // refused now and then: no matter
	s.Release(ctx, l)
}

// TestRecFitsSlab: newRec allocates recSlab records at once, and a record
// of 256 bytes makes that exactly a 4096-byte size class. One more word
// moves the slab to the next class (4864 bytes), 48 bytes more a record.
func TestRecFitsSlab(t *testing.T) {
	const size = 4096 / recSlab
	if got := unsafe.Sizeof(rec{}); got > size {
		t.Fatalf("a record takes %d bytes, over the %d that fit %d to a 4096-byte slab", got, size, recSlab)
	}
}

// TestStoreFitsSizeClass: New allocates a Store for every simulated run,
// and its tables (granted, found, named) are most of it. It fits the
// 2048-byte size class; a few words more move it to 2304 bytes, and a
// larger found table to 3072.
func TestStoreFitsSizeClass(t *testing.T) {
	if got := unsafe.Sizeof(Store{}); got > 2048 {
		t.Fatalf("a Store takes %d bytes, over the 2048 of its size class", got)
	}
}

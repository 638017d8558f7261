// This file proves that a Store emptied by Reset is a new one: it passes
// the conformance suite and answers every random call as a store New
// built does, keeps no more than a bound across a Reset, and never
// reuses memory a caller was handed.
package memstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/store/storetest"
)

// used returns a store that served a run of random calls (a twin's, so
// its streams, leases, records and payloads are all in use) and then,
// with big, thousands of records more than Reset keeps room for, and was
// then Reset with the clock now.
func used(t *testing.T, seed uint64, big bool, now func() time.Time) *memstore.Store {
	t.Helper()
	tw := newTwin(t, seed)
	for range 400 {
		tw.step(t.Context())
	}
	if big {
		enqueueMany(t, tw.fast, 5000)
	}
	tw.fast.Reset(now, nil)
	return tw.fast
}

// enqueueMany enqueues n records on a few streams.
func enqueueMany(t *testing.T, s *memstore.Store, n int) {
	t.Helper()
	for i := range n {
		if _, _, err := s.Enqueue(t.Context(), fmt.Sprintf("big%d", i%300), fmt.Sprintf("big%d", i), []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConformanceAfterReset(t *testing.T) {
	for _, big := range []bool{false, true} {
		t.Run(fmt.Sprint("big=", big), func(t *testing.T) {
			seed := uint64(0)
			storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
				seed++
				return used(t, seed, big, now)
			})
		})
	}
}

// TestResetAgreesWithNew: a store Reset after rounds of random calls,
// some of them with more records than Reset keeps room for, answers the
// next round's calls, each with its plain twin, as a store New built:
// the twin's fast store is reset, its plain one built anew. The leases of
// past rounds are still presented, and must be judged as strangers'.
func TestResetAgreesWithNew(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw := newTwin(t, seed)
			clock := func() time.Time { return tw.now }
			for round := range 6 {
				for i := range 100 + tw.rng.IntN(600) {
					tw.quiet = seed%2 == 1 && i >= 300
					tw.step(t.Context())
					if i%50 == 0 {
						tw.agree()
					}
				}
				tw.agree()
				if round%3 == 1 {
					enqueueMany(t, tw.fast, 1000)
				}
				tw.fast.Reset(clock, nil)
				tw.plain = memstore.NewPlain(clock)
			}
		})
	}
}

// TestResetKeepsABoundedAmount: a long run leaves no more room for
// records, and no more streams, to the runs after a Reset than a short
// one does.
func TestResetKeepsABoundedAmount(t *testing.T) {
	s, c := newStore(t)
	enqueueMany(t, s, 20)
	s.Reset(c.Now, nil)
	small := s.KeptRecords()
	enqueueMany(t, s, 100_000)
	s.Reset(c.Now, nil)
	if got := s.KeptRecords(); got > 256 || got < small {
		t.Errorf("after 100,000 records, Reset keeps room for %d; want %d to 256", got, small)
	}
	enqueueMany(t, s, 1000) // on 300 streams
	s.Reset(c.Now, nil)
	if got := s.KeptStreams(); got > 32 {
		t.Errorf("after 300 streams, Reset keeps %d; want at most 32", got)
	}
}

// TestResetKeepsNothingHandedOut: what the callers were handed before a
// Reset (Enqueue's, Get's, Records', Pending's and DeadLetters' copies and
// Pending's pages) is not overwritten by what the store does after it.
func TestResetKeepsNothingHandedOut(t *testing.T) {
	ctx := t.Context()
	s, c := newStore(t)
	var held []any
	var want []string
	hold := func(v any) { held, want = append(held, v), append(want, fmt.Sprintf("%+v", v)) }
	for round := range 3 {
		for i := range 40 {
			id := fmt.Sprintf("e%d", i)
			r, _, err := s.Enqueue(ctx, "s", id, []byte(fmt.Sprintf("p%d-%s", round, id)))
			if err != nil {
				t.Fatal(err)
			}
			hold(r)
		}
		l := acquire(t, s, "s", "w")
		for after := uint64(0); after < 40; after += 3 {
			page, err := s.Pending(ctx, l, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			hold(page)
		}
		dead := get(t, s, "e1").Machine()
		dead.State, dead.Reason = machine.Dead, machine.Expired
		save(t, s, l, dead)
		letters, err := s.DeadLetters(ctx, "s", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		hold(letters)
		hold(get(t, s, "e2"))
		hold(s.Records("s"))
		s.Reset(c.Now, nil)
	}
	for i, v := range held {
		if got := fmt.Sprintf("%+v", v); got != want[i] {
			t.Errorf("copy %d changed after Reset:\n got %s\nwant %s", i, got, want[i])
		}
	}
}

// TestResetInstallsTheInjector: Reset installs its failure injector,
// replacing SetUnavailable's, and a nil one makes the store available.
func TestResetInstallsTheInjector(t *testing.T) {
	ctx := t.Context()
	s, c := newStore(t)
	s.SetUnavailable(func() bool { return true })
	s.Reset(c.Now, nil)
	enqueue(t, s, "s", "e1")
	s.Reset(c.Now, func() bool { return true })
	if _, _, err := s.Enqueue(ctx, "s", "e1", nil); err == nil {
		t.Fatal("Enqueue after Reset with a failing injector succeeded")
	}
	if _, err := s.Get(ctx, "e1"); err == nil {
		t.Fatal("Get after Reset found a record of before it")
	}
}

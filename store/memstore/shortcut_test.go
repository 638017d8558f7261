// This file proves that the store's shortcuts (the stream found by token,
// a valid lease judged in place, records and streams found by the address
// of their name, Pending's nothing-new answer, ClaimDue's nothing-claimable
// answer, the batch marks of Save, the machine's record built in place)
// change no answer: a store with them and a plain
// store (memstore.NewPlain) take the same random calls, and every answer,
// error text included, and every record must agree.
package memstore_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// twin drives a store and its plain twin with the same calls.
type twin struct {
	t      *testing.T
	rng    *rand.Rand
	now    time.Time
	fast   *memstore.Store
	plain  *memstore.Store
	leases []store.Lease // every lease either store granted, stale or not
	ids    []string
	// quiet stops the enqueues, each of which makes ClaimDue scan again:
	// the records then run their course, and ClaimDue answers from its
	// bound for long stretches.
	quiet bool
}

var (
	twinStreams = []string{"a", "b", "c", "d", "e"}
	twinOwners  = []string{"w1", "w2", "w3"}
)

func newTwin(t *testing.T, seed uint64) *twin {
	tw := &twin{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: epoch}
	clock := func() time.Time { return tw.now }
	tw.fast, tw.plain = memstore.New(clock), memstore.NewPlain(clock)
	for i := range 30 {
		tw.ids = append(tw.ids, fmt.Sprintf("e%d", i))
	}
	return tw
}

// same fails the test unless both stores answered alike.
func (tw *twin) same(what string, fast, plain any) {
	tw.t.Helper()
	if diff := cmp.Diff(plain, fast); diff != "" {
		tw.t.Fatalf("%s: store and plain store differ (-plain +store):\n%s", what, diff)
	}
}

// errText makes errors comparable by their text.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (tw *twin) pick(xs []string) string { return xs[tw.rng.IntN(len(xs))] }

func (tw *twin) ttl() time.Duration { return time.Duration(1+tw.rng.IntN(20)) * time.Second }

// lease is a lease either store granted, or now and then a forged one.
func (tw *twin) lease() store.Lease {
	if len(tw.leases) == 0 || tw.rng.IntN(10) == 0 {
		return store.Lease{Stream: tw.pick(twinStreams), Owner: tw.pick(twinOwners), Token: uint64(tw.rng.IntN(64))}
	}
	// Recent leases are the likely valid ones.
	n := len(tw.leases)
	l := tw.leases[n-1-min(n-1, tw.rng.IntN(8))]
	if tw.rng.IntN(4) == 0 {
		// The same lease in equal strings that are not the ones it was
		// granted in: the store compares a lease's strings by pointer
		// first, and must not take equal ones for a stranger's.
		l.Stream, l.Owner = strings.Clone(l.Stream), strings.Clone(l.Owner)
	}
	return l
}

func (tw *twin) granted(ls ...store.Lease) { tw.leases = append(tw.leases, ls...) }

func (tw *twin) step(ctx context.Context) {
	switch tw.rng.IntN(15) {
	case 0, 1:
		if tw.quiet {
			tw.advance()
			return
		}
		stream, id := tw.pick(twinStreams), tw.pick(tw.ids)
		r1, c1, e1 := tw.fast.Enqueue(ctx, stream, id, []byte("p-"+id))
		r2, c2, e2 := tw.plain.Enqueue(ctx, stream, id, []byte("p-"+id))
		tw.same("Enqueue", []any{r1, c1, errText(e1)}, []any{r2, c2, errText(e2)})
	case 2, 13, 14:
		owner, ttl, max := tw.pick(twinOwners), tw.ttl(), 1+tw.rng.IntN(3)
		l1, e1 := tw.fast.ClaimDue(ctx, owner, ttl, max)
		l2, e2 := tw.plain.ClaimDue(ctx, owner, ttl, max)
		tw.same("ClaimDue", []any{l1, errText(e1)}, []any{l2, errText(e2)})
		tw.granted(l1...)
	case 3:
		stream, owner, ttl := tw.pick(twinStreams), tw.pick(twinOwners), tw.ttl()
		l1, e1 := tw.fast.Acquire(ctx, stream, owner, ttl)
		l2, e2 := tw.plain.Acquire(ctx, stream, owner, ttl)
		tw.same("Acquire", []any{l1, errText(e1)}, []any{l2, errText(e2)})
		if e1 == nil {
			tw.granted(l1)
		}
	case 4, 5:
		l, ttl := tw.lease(), tw.ttl()
		l1, e1 := tw.fast.Renew(ctx, l, ttl)
		l2, e2 := tw.plain.Renew(ctx, l, ttl)
		tw.same("Renew", []any{l1, errText(e1)}, []any{l2, errText(e2)})
	case 6:
		if tw.rng.IntN(3) == 0 {
			l := tw.lease()
			tw.same("Release", errText(tw.fast.Release(ctx, l)), errText(tw.plain.Release(ctx, l)))
		}
	case 7, 8:
		l, limit := tw.lease(), 1+tw.rng.IntN(4)
		after := uint64(tw.rng.IntN(12))
		if tw.rng.IntN(20) == 0 {
			after = math.MaxUint64
		}
		p1, e1 := tw.fast.Pending(ctx, l, after, limit)
		p2, e2 := tw.plain.Pending(ctx, l, after, limit)
		tw.same("Pending", []any{p1, errText(e1)}, []any{p2, errText(e2)})
	case 9, 10:
		l := tw.lease()
		ups := tw.updates(l.Stream)
		tw.same("Save", errText(tw.fast.Save(ctx, l, ups)), errText(tw.plain.Save(ctx, l, ups)))
	case 11:
		tw.operate(ctx)
	case 12:
		tw.advance()
	}
}

// tick is the clock's step and the grain of every NextAt and ttl, so that
// calls land on every expiry and NextAt exactly as well as either side.
const tick = 250 * time.Millisecond

// advance moves the clock, mostly by a tick or two.
func (tw *twin) advance() {
	n := 3
	if tw.rng.IntN(4) == 0 {
		n = 32
	}
	tw.now = tw.now.Add(time.Duration(tw.rng.IntN(n)) * tick)
}

// operate is a rarer call: an operator's action, or retention.
func (tw *twin) operate(ctx context.Context) {
	id := tw.pick(tw.ids)
	switch tw.rng.IntN(4) {
	case 0:
		r1, e1 := tw.fast.Replay(ctx, id, "op")
		r2, e2 := tw.plain.Replay(ctx, id, "op")
		tw.same("Replay", []any{r1, errText(e1)}, []any{r2, errText(e2)})
	case 1:
		r1, e1 := tw.fast.Discard(ctx, id, "op")
		r2, e2 := tw.plain.Discard(ctx, id, "op")
		tw.same("Discard", []any{r1, errText(e1)}, []any{r2, errText(e2)})
	case 2:
		keep, limit := time.Duration(1+tw.rng.IntN(30))*time.Second, 1+tw.rng.IntN(3)
		n1, e1 := tw.fast.DeleteSettled(ctx, keep, limit)
		n2, e2 := tw.plain.DeleteSettled(ctx, keep, limit)
		tw.same("DeleteSettled", []any{n1, errText(e1)}, []any{n2, errText(e2)})
	case 3:
		r1, e1 := tw.fast.Get(ctx, id)
		r2, e2 := tw.plain.Get(ctx, id)
		tw.same("Get", []any{r1, errText(e1)}, []any{r2, errText(e2)})
	}
}

// updates is a batch for stream: mostly moves a machine could make, now
// and then one it could not, a record named twice, an unknown ID or one
// of another stream.
func (tw *twin) updates(stream string) []store.Update {
	recs := tw.plain.Records(stream)
	var ups []store.Update
	for range 1 + tw.rng.IntN(3) {
		if len(recs) == 0 || tw.rng.IntN(12) == 0 {
			ups = append(ups, store.Update{ID: tw.pick(tw.ids), Delivery: store.Delivery{State: machine.Pending}})
			continue
		}
		ups = append(ups, tw.move(recs[tw.rng.IntN(len(recs))]))
	}
	if tw.rng.IntN(15) == 0 {
		ups = append(ups, ups[0])
	}
	return ups
}

// move is a next state for r, often one Save accepts.
func (tw *twin) move(r machine.Record) store.Update {
	u := store.UpdateOf(r)
	// Few parked records: a stream holding one is always due, and
	// ClaimDue's bound is tested by streams that wait.
	u.State = []machine.State{
		machine.Pending, machine.Pending, machine.Retry, machine.Retry, machine.Retry, machine.Retry,
		machine.Delivered, machine.Delivered, machine.Dead, machine.Parked,
	}[tw.rng.IntN(10)]
	u.Reason = machine.NotDead
	if u.State == machine.Dead {
		u.Reason = machine.DeadReason(1 + tw.rng.IntN(3))
	}
	if !u.State.Terminal() && tw.rng.IntN(2) == 0 {
		u.Attempts++
	}
	u.NextAt = tw.now.Add(time.Duration(tw.rng.IntN(80)-16) * tick)
	if u.Attempts > 0 && tw.rng.IntN(2) == 0 {
		u.Outcome = &store.Outcome{Attempt: u.Attempts, Status: 500, Detail: "no"}
	}
	if tw.rng.IntN(25) == 0 {
		u.Attempts += 3 // a jump no machine makes
	}
	return u
}

// agree fails the test unless both stores hold the same records.
func (tw *twin) agree() {
	tw.t.Helper()
	for _, s := range twinStreams {
		tw.same("Records("+s+")", tw.fast.Records(s), tw.plain.Records(s))
	}
	tw.same("Streams", tw.fast.Streams(), tw.plain.Streams())
}

// TestShortcutsAgree: thousands of random calls, each answered alike by
// the store and its plain twin.
func TestShortcutsAgree(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw := newTwin(t, seed)
			for i := range 1500 {
				tw.quiet = seed%2 == 1 && i >= 300
				tw.step(t.Context())
				if i%50 == 0 {
					tw.agree()
				}
			}
			tw.agree()
		})
	}
}

// TestShortcutsAgreeOnMonotonicClock: the store's clock reads instants
// that carry a monotonic reading, as time.Now's do, and its plain twin's
// the same instants without one. Pending judges a lease at the reading as
// it comes (no rounding): every answer must still agree.
func TestShortcutsAgreeOnMonotonicClock(t *testing.T) {
	// An instant at epoch's wall time with a monotonic reading: time.Now
	// moved there by Add, which keeps the reading.
	now := time.Now()
	monoEpoch := now.Add(epoch.Sub(now.Round(0)))
	if monoEpoch == monoEpoch.Round(0) || !monoEpoch.Equal(epoch) {
		t.Fatalf("no monotonic instant at epoch: %v", monoEpoch)
	}
	for seed := range uint64(10) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw := newTwin(t, seed)
			tw.fast = memstore.New(func() time.Time { return monoEpoch.Add(tw.now.Sub(epoch)) })
			for range 1500 {
				tw.step(t.Context())
			}
			tw.agree()
		})
	}
}

// TestClaimAfterAcquireAndSave: a stream a scan saw waiting, then
// acquired and saved due, is claimable the instant its lease expires,
// though no scan has seen it due: Save lowers ClaimDue's bound.
func TestClaimAfterAcquireAndSave(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	enqueue(t, s, "s", "e1")
	l := acquire(t, s, "s", "w1")
	e1 := get(t, s, "e1").Machine()
	e1.State, e1.Attempts, e1.NextAt = machine.Retry, 1, epoch.Add(time.Hour)
	save(t, s, l, e1)
	clock.Advance(ttl)
	if got, err := s.ClaimDue(ctx, "w", ttl, 1); err != nil || len(got) != 0 {
		t.Fatalf("ClaimDue while e1 waits = %v, %v; want nothing", got, err)
	}
	l = acquire(t, s, "s", "w2")
	e1.NextAt = clock.Now()
	save(t, s, l, e1)
	clock.Advance(ttl - time.Nanosecond)
	if got, err := s.ClaimDue(ctx, "w", ttl, 1); err != nil || len(got) != 0 {
		t.Fatalf("ClaimDue before the lease expires = %v, %v; want nothing", got, err)
	}
	clock.Advance(time.Nanosecond)
	if got, err := s.ClaimDue(ctx, "w", ttl, 1); err != nil || len(got) != 1 {
		t.Fatalf("ClaimDue as the lease expires = %v, %v; want s", got, err)
	}
}

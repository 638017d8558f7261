// Tests the streams' due times (stream.due) against the plain
// computation: two workers share a flaky memstore under random clocks
// (wall readings, monotonic ones, or a mix), enqueues, replies, drains
// and stops, and after every call each stream's due time must be the
// one computed afresh, and Next the instant the plain scan of every
// timer gives.
package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// plainNext is Next as a scan of every timer, with no cache: the
// reference the cached Next must agree with.
func plainNext(w *Worker) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !next.IsZero() && !t.Before(next) {
			return
		}
		if t.Before(w.now) {
			t = w.now
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if !w.draining && len(w.order) < w.cfg.MaxStreams {
		consider(w.claimAt)
	}
	if !w.draining && len(w.order) >= w.cfg.MaxStreams {
		// Full: the claim poll that may yield, once a stream that is not
		// closing has been owned for YieldAfter.
		for _, st := range w.order {
			if st.closing == "" {
				consider(later(w.claimAt, st.since.Add(w.cfg.YieldAfter)))
			}
		}
	}
	if !w.draining && w.cfg.Retention > 0 {
		consider(w.purgeAt)
	}
	for _, st := range w.order {
		consider(st.renewAt)
		consider(st.expiresAt)
		switch {
		case st.closing != "":
			consider(st.closeBy)
		case w.draining:
		case st.m == nil:
			consider(st.rebuildAt)
		default:
			consider(st.adoptAt)
			if !st.wakeAt.IsZero() {
				consider(st.wakeAt)
			}
			if !st.idleSince.IsZero() {
				consider(st.releaseAt)
			}
		}
	}
	return next
}

// flakyStore fails a share of calls: writes before or after they commit,
// reads before.
type flakyStore struct {
	*memstore.Store
	r    *rand.Rand
	rate float64
}

var errFlaky = errors.New("flaky")

func (f *flakyStore) fail() bool { return f.r.Float64() < f.rate }

func (f *flakyStore) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	if f.fail() {
		return nil, fmt.Errorf("%w: %w", store.ErrUnavailable, errFlaky)
	}
	return f.Store.Pending(ctx, l, after, limit)
}

func (f *flakyStore) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	if f.fail() {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, errFlaky)
	}
	err := f.Store.Save(ctx, l, ups)
	if err == nil && f.fail() {
		return fmt.Errorf("%w: reply lost", store.ErrUnknown)
	}
	return err
}

func (f *flakyStore) Renew(ctx context.Context, l store.Lease, d time.Duration) (store.Lease, error) {
	if f.fail() {
		return store.Lease{}, fmt.Errorf("%w: %w", store.ErrUnavailable, errFlaky)
	}
	return f.Store.Renew(ctx, l, d)
}

// checkCache fails the test unless every stream's due time is fresh
// and Next is the plain scan's instant.
func checkCache(t *testing.T, w *Worker, step int) {
	t.Helper()
	for _, st := range w.order {
		if want := st.earliest(w.draining); !st.due.Equal(want) {
			t.Fatalf("step %d: %s: due %v, computed %v", step, st.lease.Stream, st.due, want)
		}
	}
	if got, want := w.Next(), plainNext(w); !got.Equal(want) {
		t.Fatalf("step %d: Next %v, plain scan %v", step, got, want)
	}
}

func TestCachedTimersMatchPlainScan(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { cachedTimersRun(t, seed) })
	}
}

func cachedTimersRun(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Every fourth run reads a monotonic clock, and every fourth after it
	// hands the workers readings with and without one: their timers must
	// then fall back to time.Time's own comparisons where those differ
	// from the wall clock's.
	mono, mixed := seed%4 == 2, seed%4 == 3
	if mono || mixed {
		epoch = time.Now()
	}
	reading := func(t time.Time) time.Time {
		if mixed && r.IntN(2) == 0 {
			return t.Round(0)
		}
		return t
	}
	now := epoch
	mem := memstore.New(func() time.Time { return reading(now) })
	fs := &flakyStore{Store: mem, r: r, rate: []float64{0, 0.05, 0.3}[seed%3]}
	retention := []time.Duration{0, 5 * time.Second}[seed%2]
	boot := func(i int) *Worker {
		policy := machine.DefaultConfig()
		policy.BaseBackoff, policy.MaxBackoff = 200*time.Millisecond, 2*time.Second
		w, err := New(Config{
			Owner: fmt.Sprintf("w%d-%d", i, r.Int()), Store: fs,
			Policy:     func(string) (machine.Config, error) { return policy, nil },
			MaxStreams: 1 + r.IntN(4), LeaseTTL: 6 * time.Second, Poll: 700 * time.Millisecond,
			Retention: retention, RetentionEvery: 3 * time.Second,
			IdleRelease: []time.Duration{0, 200 * time.Millisecond, 2 * time.Second}[r.IntN(3)],
		})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ws := []*Worker{boot(0), boot(1)}
	skew := []time.Duration{0, time.Duration(r.IntN(400)) * time.Millisecond}
	var outs [2][]Reply
	ctx := t.Context()
	for step := range 3000 {
		i := r.IntN(2)
		w := ws[i]
		at := reading(now.Add(skew[i]))
		switch op := r.IntN(20); {
		case op < 4:
			now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
		case op < 5:
			now = now.Add(time.Duration(r.IntN(12)) * time.Second)
		case op < 7:
			s := fmt.Sprintf("s%d", r.IntN(5))
			if _, _, err := mem.Enqueue(ctx, s, fmt.Sprintf("e%d", step), nil); err == nil {
				w.Notify(s)
			}
		case op < 12:
			collect(&outs[i], w.Advance(ctx, at))
		case op < 14:
			if n := w.Next(); !n.IsZero() && n.After(at) {
				now = now.Add(n.Sub(at))
			}
			collect(&outs[i], w.Advance(ctx, now.Add(skew[i])))
		case op < 18 && len(outs[i]) > 0:
			k := r.IntN(len(outs[i]))
			rep := outs[i][k]
			outs[i] = append(outs[i][:k], outs[i][k+1:]...)
			rep.Outcome = []channel.Outcome{
				{Result: machine.OutcomeDelivered, Status: 200},
				{Result: machine.OutcomeFailed, Status: 503, RetryAfter: time.Duration(r.IntN(3)) * time.Second},
				{Result: machine.OutcomeFailed, Status: 500, Detail: "boom"},
			}[r.IntN(3)]
			collect(&outs[i], w.Deliver(ctx, at.Add(-time.Duration(r.IntN(50))*time.Millisecond), rep))
		case op < 19 && r.IntN(10) == 0:
			w.Drain()
		case op < 20 && r.IntN(20) == 0:
			w.Stop(ctx, at)
			ws[i], outs[i] = boot(i), nil
			w = ws[i]
		}
		checkCache(t, w, step)
	}
}

// collect keeps the replies a call's sends and probes are owed.
func collect(out *[]Reply, fx Effects) {
	for _, s := range fx.Sends {
		*out = append(*out, s.Reply(channel.Outcome{}))
	}
	for _, p := range fx.Probes {
		*out = append(*out, p.Reply(channel.Outcome{}))
	}
}

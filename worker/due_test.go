// Tests the cached timers against the plain computation: two workers
// share a flaky memstore under random clocks (wall readings, monotonic
// ones, or a mix), enqueues, replies, drains and stops, and after every
// call each stream's cached earliest instant must be the one computed
// afresh, every timer's integer must order it as time.Time does, and Next
// must be the instant the plain scan of every timer gives. The stamps'
// integers are checked against time.Time's own Before and Add directly,
// too.
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
		if t.Before(w.now.t) {
			t = w.now.t
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if !w.draining && len(w.order) < w.cfg.MaxStreams {
		consider(w.claimAt.t)
	}
	if !w.draining && w.cfg.Retention > 0 {
		consider(w.purgeAt.t)
	}
	for _, st := range w.order {
		consider(st.renewAt.t)
		consider(st.expiresAt.t)
		switch {
		case w.draining:
		case st.m == nil:
			consider(st.rebuildAt.t)
		default:
			consider(st.adoptAt.t)
			if !st.wakeAt.t.IsZero() {
				consider(st.wakeAt.t)
			}
			if !st.idleSince.IsZero() {
				consider(st.releaseAt.t)
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

// checkCache fails the test unless every cached earliest is fresh, every
// timer's integer is sound, a still stream has nothing for quiet to do,
// and Next is the plain scan's instant.
func checkCache(t *testing.T, w *Worker, step int) {
	t.Helper()
	stamps := []*stamp{&w.claimAt, &w.purgeAt, &w.now, &w.origin, &w.pollLo, &w.pollHi}
	for _, st := range w.order {
		if st.dueOK && st.due != st.earliest(st.dueDraining) { // the very timer, not an equal one
			t.Fatalf("step %d: %s: cached earliest %+v, computed %+v", step, st.lease.Stream, *st.due, *st.earliest(st.dueDraining))
		}
		if st.still && !w.draining && st.m != nil && (st.m.Queued() > 0) != st.idleSince.IsZero() {
			t.Fatalf("step %d: %s: still, but its idle clock is to start or stop", step, st.lease.Stream)
		}
		stamps = append(stamps, &st.renewAt, &st.expiresAt, &st.rebuildAt, &st.adoptAt, &st.wakeAt, &st.releaseAt)
	}
	for i, s := range stamps {
		checkStamp(t, s, fmt.Sprintf("step %d: stamp %d", step, i))
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

// TestNextPollCacheMatchesGrid checks nextPoll's cached interval against
// the grid's formula, on and between grid points, going back and forth.
func TestNextPollCacheMatchesGrid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		poll := time.Duration(1+r.IntN(5000)) * time.Millisecond
		origin := time.Date(2026, 1, 1, 0, 0, 0, r.IntN(1e9), time.UTC)
		if r.IntN(2) == 0 {
			origin = time.Now() // a monotonic reading: the stamps' fallback
		}
		w := &Worker{cfg: Config{Poll: poll}, origin: stampOf(origin)}
		var last time.Duration
		for range 200 {
			var off time.Duration
			switch r.IntN(4) {
			case 0: // on a grid point, or just before one
				off = time.Duration(r.IntN(20))*poll - time.Duration(r.IntN(2))
			case 1: // in the interval after the last, as a next poll is
				off = last + time.Duration(r.Int64N(int64(2*poll)))
			default:
				off = time.Duration(r.Int64N(int64(20 * poll)))
			}
			last = max(off, 0)
			now := origin.Add(last)
			want := origin.Add((now.Sub(origin)/poll + 1) * poll)
			at := stampOf(now)
			got := *w.nextPoll(&at)
			if !got.t.Equal(want) || got.t != want {
				t.Fatalf("poll %v, now origin+%v: nextPoll %v, want %v", poll, now.Sub(origin), got.t, want)
			}
			checkStamp(t, &got, "nextPoll")
		}
	}
}

// checkStamp fails the test unless s's integer, when it has one, is the
// one stampOf gives its instant.
func checkStamp(t *testing.T, s *stamp, what string) {
	t.Helper()
	if !s.ok {
		return
	}
	if fresh := stampOf(s.t); !fresh.ok || fresh.ns != s.ns {
		t.Fatalf("%s: %+v has the integer %d; stampOf gives %+v", what, *s, s.ns, fresh)
	}
}

// TestStampsOrderAsTime checks stamp.before and stamp.add against
// time.Time's Before and Add: near the zero instant, the ends of the
// integer's range, with and without monotonic readings.
func TestStampsOrderAsTime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bases := []time.Time{
		{}, wall, wall.In(time.FixedZone("x", 3600)), time.Now(), time.Now().Round(0),
		time.Unix(maxStampSec, 999_999_999), time.Unix(-maxStampSec, 0), time.Unix(maxStampSec+1, 0),
		time.Unix(-maxStampSec-1, 999_999_999), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		// The ends of the range again in UTC, where setAdd builds the sum
		// with time.Unix rather than Add.
		time.Unix(maxStampSec, 999_999_999).UTC(), time.Unix(-maxStampSec, 0).UTC(), time.Unix(maxStampSec+1, 0).UTC(),
		time.Unix(-maxStampSec-1, 999_999_999).UTC(), time.Unix(0, 0).UTC(), time.Unix(-1, 999_999_999).UTC(),
	}
	durations := []time.Duration{0, 1, -1, time.Second, -time.Second, 1<<63 - 1, -1 << 63}
	pick := func() time.Time {
		b := bases[r.IntN(len(bases))]
		switch r.IntN(3) {
		case 0:
			return b
		case 1:
			return b.Add(time.Duration(r.Int64N(int64(time.Hour))) - time.Minute)
		default:
			return b.Add(durations[r.IntN(len(durations))])
		}
	}
	for range 200_000 {
		a, b := stampOf(pick()), stampOf(pick())
		checkStamp(t, &a, "stampOf")
		if got, want := a.before(&b), a.t.Before(b.t); got != want {
			t.Fatalf("%+v before %+v: %v; time.Time says %v", a, b, got, want)
		}
		d := durations[r.IntN(len(durations))]
		if r.IntN(2) == 0 {
			d = time.Duration(r.Int64N(int64(time.Hour))) - time.Minute
		}
		sum := a.add(d)
		if sum.t != a.t.Add(d) {
			t.Fatalf("%+v add %v: %v; time.Time says %v", a, d, sum.t, a.t.Add(d))
		}
		checkStamp(t, &sum, fmt.Sprintf("%+v add %v", a, d))
		reset := sum // set over a stamp already set, as executeAnswer's wakeAt
		if reset.set(a.t); reset != a {
			t.Fatalf("%+v set to %v: %+v; stampOf gives %+v", sum, a.t, reset, a)
		}
		self := a // setAdd onto its own operand, as nextPoll's may be
		if self.setAdd(&self, d); self != sum {
			t.Fatalf("%+v setAdd itself %v: %+v; add gives %+v", a, d, self, sum)
		}
		if got, want := sum.before(&b), sum.t.Before(b.t); got != want {
			t.Fatalf("%+v before %+v: %v; time.Time says %v", sum, b, got, want)
		}
	}
}

// plainClock is clock as it was written first: the reading's stamp
// taken apart, made the origin if there is none, and the latest if it is
// not earlier. The reference clock must agree with.
func plainClock(w *Worker, reading time.Time) {
	now := stampOf(reading)
	if w.origin.t.IsZero() {
		w.origin = now
	}
	if !now.before(&w.now) {
		w.now = now
	}
}

// TestClockMatchesPlain feeds a worker's clock and the plain one the
// same readings (the zero instant, wall readings, monotonic ones, some
// stepped back) and checks that both keep the same origin and latest
// stamp, to the bit.
func TestClockMatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	wall := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bases := []time.Time{{}, wall, wall.In(time.FixedZone("x", 3600)), time.Now(), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour)}
	for range 2000 {
		w, plain := &Worker{}, &Worker{}
		for range 50 {
			reading := bases[r.IntN(len(bases))]
			if r.IntN(4) > 0 && !reading.IsZero() {
				reading = reading.Add(time.Duration(r.Int64N(int64(time.Minute))) - time.Second)
			}
			got := w.clock(reading)
			plainClock(plain, reading)
			if got != &w.now || w.now != plain.now || w.origin != plain.origin {
				t.Fatalf("reading %v: clock keeps %+v from %+v; plain keeps %+v from %+v",
					reading, w.now, w.origin, plain.now, plain.origin)
			}
		}
	}
}

// This file proves worker behaviour the scenario tests leave implicit:
// config errors name the bound they computed, an IdleRelease given is kept
// (not replaced by the Poll default), a rebuild reads every page of a
// stream, a worker claims only what it has room for and does not ask the
// store when it is full, a receiver's Retry-After hint postpones the
// retry of a failed attempt, a policy that fails validation is
// reported as the policy's fault and its lease given back cleanly, and a
// record handed over (Enqueued) that the owner knows already costs no
// read.
package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

func TestConfigErrorsNameTheComputedBound(t *testing.T) {
	base := worker.Config{Owner: "w", Store: memstore.New(time.Now), Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 1, LeaseTTL: ttl, Poll: time.Second}
	cases := []struct {
		edit func(*worker.Config)
		want string
	}{
		{func(c *worker.Config) { c.RenewEvery = ttl }, "LeaseTTL/2 = 15s"},
		{func(c *worker.Config) { c.ClockMargin = ttl }, "LeaseTTL-RenewEvery = 20s"}, // RenewEvery defaults to ttl/3
	}
	for _, c := range cases {
		cfg := base
		c.edit(&cfg)
		if _, err := worker.New(cfg); !errors.Is(err, worker.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want ErrInvalidConfig saying %q", err, c.want)
		}
	}
}

func TestIdleReleaseGivenIsKept(t *testing.T) {
	// With IdleRelease ten Polls, an idle stream is still held after five
	// Polls; the Poll default would have given it back.
	e := newEnv(t, func(c *worker.Config) { c.IdleRelease = 10 * time.Second })
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.deliver(x.Reply(delivered()))
	idleFrom := e.now()
	for e.now().Before(idleFrom.Add(5 * time.Second)) {
		e.clock.Advance(e.w.Next().Sub(e.now()))
		e.advance()
	}
	if !e.w.Owns("s") {
		t.Fatalf("the stream was given back after %v idle; IdleRelease is 10s", e.now().Sub(idleFrom))
	}
	for i := 0; i < 20 && e.w.Owns("s"); i++ {
		e.clock.Advance(e.w.Next().Sub(e.now()))
		e.advance()
	}
	if e.w.Owns("s") {
		t.Fatalf("the stream is still held %v after it went idle", e.now().Sub(idleFrom))
	}
}

func TestRebuildReadsEveryPage(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) { c.PageSize = 2 })
	for _, id := range []string{"e1", "e2", "e3", "e4", "e5"} {
		e.enqueue("s", id)
	}
	e.advance()
	st := e.w.Streams()
	if len(st) != 1 || st[0].Queued != 5 {
		t.Fatalf("after the rebuild with PageSize 2: %+v, want one stream with 5 queued", st)
	}
}

// claimCounter counts ClaimDue calls and the most it was asked for.
type claimCounter struct {
	*memstore.Store
	calls, maxAsked int
}

func (c *claimCounter) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	c.calls++
	c.maxAsked = max
	return c.Store.ClaimDue(ctx, owner, ttl, max)
}

func TestClaimsOnlyTheRoomLeft(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) { c.MaxStreams = 3 })
	cc := &claimCounter{Store: e.mem}
	w, err := worker.New(worker.Config{Owner: "w2", Store: cc, Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 3, LeaseTTL: ttl, Poll: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.enqueue("a", "a1")
	w.Advance(e.ctx, e.now())
	for _, s := range []string{"b", "c", "d", "f"} {
		e.enqueue(s, s+"1")
	}
	e.clock.Advance(w.Next().Sub(e.now()))
	w.Advance(e.ctx, e.now())
	if w.Owned() != 3 || cc.maxAsked != 2 {
		t.Fatalf("owns %d streams, last asked the store for %d; want 3 owned after asking for the 2 left", w.Owned(), cc.maxAsked)
	}
	// Full: later polls do not ask the store for streams at all.
	calls := cc.calls
	for i := 0; i < 3; i++ {
		e.clock.Advance(time.Second)
		w.Advance(e.ctx, e.now())
	}
	if cc.calls != calls {
		t.Errorf("a full worker called ClaimDue %d more times", cc.calls-calls)
	}
}

func TestRetryAfterHintPostponesTheRetry(t *testing.T) {
	// The owner keeps the stream through the hint's 40 s (not released
	// as far off), so that the retry is its own, not a new owner's probe.
	e := newEnv(t, func(c *worker.Config) { c.FarRelease = time.Hour })
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	failedAt := e.now()
	e.deliver(x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503, RetryAfter: 40 * time.Second}))
	oneSend(t, e.nextSends(), "e1", 2)
	if waited := e.now().Sub(failedAt); waited < 40*time.Second {
		t.Errorf("the retry went out %v after a failure that asked for 40s", waited)
	}
}

func TestInvalidPolicyIsThePolicysFault(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) { return machine.Config{}, nil } // zero Ordering: invalid
	})
	e.enqueue("bad", "b1")
	e.advance()
	var faults []string
	for _, ev := range e.events {
		if ev.Kind == worker.Faulted {
			faults = append(faults, ev.Err.Error())
		}
	}
	if len(faults) != 1 || !strings.Contains(faults[0], `policy for stream "bad"`) {
		t.Errorf("faults %q, want one naming the policy for stream \"bad\"", faults)
	}
	if n := e.count(worker.StoreFailed); n != 0 {
		t.Errorf("%d store failures reported for a release that succeeded", n)
	}
	if _, err := e.mem.Acquire(e.ctx, "bad", "other", ttl); err != nil {
		t.Errorf("the stream was not given back: %v", err)
	}
}

// purgeCounter counts DeleteSettled calls.
type purgeCounter struct {
	*memstore.Store
	calls int
}

func (p *purgeCounter) DeleteSettled(ctx context.Context, retention time.Duration, limit int) (int, error) {
	p.calls++
	return p.Store.DeleteSettled(ctx, retention, limit)
}

func TestRetentionEveryPacesThePurge(t *testing.T) {
	e := newEnv(t, nil)
	pc := &purgeCounter{Store: e.mem}
	w, err := worker.New(worker.Config{Owner: "w2", Store: pc, Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 1, LeaseTTL: ttl, Poll: time.Second, Retention: time.Hour, RetentionEvery: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// An hour with nothing to delete: one purge per RetentionEvery (the
	// first at the first reading), not one per Poll nor per minute.
	for until := e.now().Add(time.Hour); e.now().Before(until); {
		w.Advance(e.ctx, e.now())
		e.clock.Advance(max(time.Millisecond, w.Next().Sub(e.now())))
	}
	if pc.calls < 6 || pc.calls > 7 {
		t.Errorf("DeleteSettled called %d times in an hour with RetentionEvery 10m, want 6 or 7", pc.calls)
	}
}

func TestFullPurgePageComesBackAtTheNextPoll(t *testing.T) {
	// Five settled records, pages of two: a full page means more are due,
	// so the purge comes back a Poll later, and all five are gone within a
	// few Polls, long before the next RetentionEvery.
	e := newEnv(t, func(c *worker.Config) {
		c.Retention = time.Hour
		c.RetentionEvery = 10 * time.Minute
		c.PageSize = 2
	})
	ids := []string{"e1", "e2", "e3", "e4", "e5"}
	for _, id := range ids {
		e.enqueue("s", id)
	}
	fx := e.advance()
	for len(fx.Sends) > 0 {
		e.clock.Advance(time.Millisecond)
		fx = e.deliver(fx.Sends[0].Reply(delivered()))
	}
	e.clock.Advance(time.Hour + time.Second) // all five past the retention
	for until := e.now().Add(10 * time.Second); e.now().Before(until); {
		e.advance()
		e.clock.Advance(max(time.Millisecond, e.w.Next().Sub(e.now())))
	}
	for _, id := range ids {
		if _, err := e.mem.Get(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s still there 10s after its purge began: %v", id, err)
		}
	}
}

// pendingFault fails the next Pending call when armed.
type pendingFault struct {
	*memstore.Store
	fail bool
}

func (p *pendingFault) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	if p.fail {
		p.fail = false
		return nil, errors.New("pending: connection reset")
	}
	return p.Store.Pending(ctx, l, after, limit)
}

func TestFailedAdoptionReadDoesNotHoldBackADueRetry(t *testing.T) {
	e := newEnv(t, nil)
	pf := &pendingFault{Store: e.mem}
	w, err := worker.New(worker.Config{Owner: "w2", Store: pf, Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 1, LeaseTTL: ttl, Poll: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.enqueue("s", "e1")
	x := oneSend(t, w.Advance(e.ctx, e.now()), "e1", 1)
	// Failed at once: the retry (BaseBackoff 1s, no jitter) falls due on
	// the same instant as the next adoption poll.
	w.Deliver(e.ctx, e.now(), x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 500}))
	e.clock.Advance(time.Second)
	pf.fail = true
	fx := w.Advance(e.ctx, e.now())
	if pf.fail {
		t.Fatal("the adoption read was not tried at this instant; the test's timing is off")
	}
	oneSend(t, fx, "e1", 2)
}

func TestNothingToPersistWritesNothing(t *testing.T) {
	// A whole life of a stream, with a failure, a retry, a late duplicate
	// reply and an idle stretch: every Save carries updates, and every
	// Persisted event names the records it wrote.
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	e.deliver(x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 500}))
	x2 := oneSend(t, e.nextSends(), "e1", 2)
	e.deliver(x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 500})) // late reply to attempt 1
	x3 := oneSend(t, e.deliver(x2.Reply(delivered())), "e2", 1)
	e.deliver(x3.Reply(delivered()))
	for i := 0; i < 10 && e.w.Owns("s"); i++ {
		e.clock.Advance(e.w.Next().Sub(e.now()))
		e.advance()
	}
	persisted := 0
	for _, ev := range e.events {
		if ev.Kind == worker.Persisted {
			persisted++
			if len(ev.Records) == 0 {
				t.Errorf("a Persisted event with no records: %+v", ev)
			}
		}
	}
	if saves := e.st.calls["Save"]; saves != persisted {
		t.Errorf("%d Saves for %d Persisted events: a Save wrote nothing", saves, persisted)
	}
}

func TestConfigEdges(t *testing.T) {
	// Each bound at its edge: the last value allowed passes, the first
	// refused one is refused with the error naming that field as its
	// subject (not merely mentioning it in another field's bound).
	base := worker.Config{Owner: "w", Store: memstore.New(time.Now), Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 1, LeaseTTL: ttl, Poll: time.Second}
	ok := []struct {
		name string
		edit func(*worker.Config)
	}{
		{"RenewEvery = LeaseTTL/2", func(c *worker.Config) { c.RenewEvery = ttl / 2 }},
		{"ClockMargin just below LeaseTTL-RenewEvery", func(c *worker.Config) { c.RenewEvery = ttl / 2; c.ClockMargin = ttl/2 - 1 }},
		{"PageSize 1", func(c *worker.Config) { c.PageSize = 1 }},
		{"Poll 3ns (its RetryAfterFailure default, Poll/4, is 0)", func(c *worker.Config) { c.Poll = 3 }},
		{"LeaseTTL 2ns (its RenewEvery and ClockMargin defaults are 0)", func(c *worker.Config) { c.LeaseTTL = 2 }},
	}
	for _, c := range ok {
		cfg := base
		c.edit(&cfg)
		if _, err := worker.New(cfg); err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
	}
	bad := []struct {
		field string
		edit  func(*worker.Config)
	}{
		{"LeaseTTL", func(c *worker.Config) { c.LeaseTTL = 0 }},
		{"RenewEvery", func(c *worker.Config) { c.RenewEvery = ttl/2 + 1 }},
		{"ClockMargin", func(c *worker.Config) { c.RenewEvery = ttl / 2; c.ClockMargin = ttl / 2 }},
		{"Poll", func(c *worker.Config) { c.Poll = 0 }},
		{"PageSize", func(c *worker.Config) { c.PageSize = -1 }}, // 0 means the default
	}
	for _, c := range bad {
		cfg := base
		c.edit(&cfg)
		_, err := worker.New(cfg)
		if !errors.Is(err, worker.ErrInvalidConfig) || !strings.Contains(err.Error(), ": "+c.field+" is") {
			t.Errorf("%s at its edge: %v, want ErrInvalidConfig about %s", c.field, err, c.field)
		}
	}
}

func TestKindStringEdges(t *testing.T) {
	if got := worker.LeaseGranted.String(); got != "lease-granted" {
		t.Errorf("LeaseGranted.String() = %q", got)
	}
	if got := worker.Adopted.String(); got != "adopted" {
		t.Errorf("Adopted.String() = %q", got)
	}
	for _, k := range []worker.Kind{0, worker.Adopted + 1} {
		if got := k.String(); got != "Kind(?)" {
			t.Errorf("Kind(%d).String() = %q, want Kind(?)", k, got)
		}
	}
}

func TestIdleClockStartsAtTheFirstAdvanceAfterTheQueueEmpties(t *testing.T) {
	// The last event is delivered between two polls, and the driver
	// calls Advance soon after, before anything timed is due: the idle
	// clock starts at that Advance, not at the next poll, and the stream
	// is given back IdleRelease later.
	e := newEnv(t, func(c *worker.Config) { c.IdleRelease = 2 * time.Second })
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(300 * time.Millisecond)
	e.deliver(x.Reply(delivered()))
	e.clock.Advance(200 * time.Millisecond)
	emptied := e.now()
	e.advance()
	for i := 0; i < 20 && e.w.Owns("s"); i++ {
		e.clock.Advance(max(0, e.w.Next().Sub(e.now())))
		e.advance()
	}
	var releasedAt time.Time
	for _, ev := range e.events {
		if ev.Kind == worker.LeaseReleased {
			releasedAt = ev.At
		}
	}
	if want := emptied.Add(2 * time.Second); !releasedAt.Equal(want) {
		t.Errorf("released at %v, want %v (IdleRelease after the first Advance with the queue empty)", releasedAt, want)
	}
}

func TestHandedRecordKnownAlreadyIsNotReadAgain(t *testing.T) {
	// A producer's hand-over (Enqueued) may come after the owner read the
	// record itself: here the claim's rebuild. The owner skips it and
	// reads nothing at its next Advance.
	e := newEnv(t, nil)
	r, _, err := e.mem.Enqueue(e.ctx, "s", "e1", []byte("payload of e1"))
	if err != nil {
		t.Fatal(err)
	}
	oneSend(t, e.advance(), "e1", 1) // claimed and rebuilt: e1 known
	reads := e.st.calls["Pending"]
	e.w.Enqueued(r)
	fx := e.advance() // the same instant: no adoption poll is due
	if n := e.st.calls["Pending"] - reads; n != 0 {
		t.Errorf("the owner read the store %d times for a handed record it knew; want none", n)
	}
	if len(fx.Sends) != 0 || e.count(worker.Adopted) != 0 {
		t.Errorf("sends %+v, %d adoptions; want none", fx.Sends, e.count(worker.Adopted))
	}
}

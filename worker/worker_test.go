// Tests that the worker, driven step by step with a fake clock against
// memstore, claims, renews, rebuilds, adopts, persists before it sends,
// stops acting on a stream whose lease is stale, re-reads after a write
// whose outcome is unknown, never hands out a send past its lease by its
// own clock, drains without spending attempts and gives idle streams back.
package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/store/storetest"
	"github.com/courierlab/courier/worker"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const ttl = 30 * time.Second

// env is one test's store, clock, worker and the events it reported.
type env struct {
	t      testing.TB
	ctx    context.Context
	clock  *storetest.Clock
	mem    *memstore.Store
	st     *faultStore
	w      *worker.Worker
	events []worker.Event
}

// faultStore wraps memstore: loseSaveReply commits the next Save and
// reports an error, as a network that lost the reply would; calls counts
// calls per method.
type faultStore struct {
	*memstore.Store
	loseSaveReply bool
	// loseRenewReply, if set, says whether a renewal the store made
	// loses its reply (store.ErrUnknown).
	loseRenewReply func() bool
	calls          map[string]int
}

func (f *faultStore) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	f.calls["Save"]++
	err := f.Store.Save(ctx, l, ups)
	if err == nil && f.loseSaveReply {
		f.loseSaveReply = false
		return fmt.Errorf("%w: reply lost after commit", store.ErrUnknown)
	}
	return err
}

func (f *faultStore) Pending(ctx context.Context, l store.Lease, after uint64, limit int) ([]machine.Record, error) {
	f.calls["Pending"]++
	return f.Store.Pending(ctx, l, after, limit)
}

func (f *faultStore) Renew(ctx context.Context, l store.Lease, d time.Duration) (store.Lease, error) {
	f.calls["Renew"]++
	nl, err := f.Store.Renew(ctx, l, d)
	if err == nil && f.loseRenewReply != nil && f.loseRenewReply() {
		return store.Lease{}, fmt.Errorf("%w: reply lost after commit", store.ErrUnknown)
	}
	return nl, err
}

func policy() machine.Config {
	c := machine.DefaultConfig()
	c.JitterPercent = 0
	return c
}

func newEnv(t testing.TB, edit func(*worker.Config)) *env {
	e := &env{t: t, ctx: t.Context(), clock: storetest.NewClock(epoch)}
	e.mem = memstore.New(e.clock.Now)
	e.st = &faultStore{Store: e.mem, calls: map[string]int{}}
	cfg := worker.Config{
		Owner:      "w1",
		Store:      e.st,
		Policy:     func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 4,
		LeaseTTL:   ttl,
		Poll:       time.Second,
		Observer:   worker.ObserverFunc(func(ev worker.Event) { e.events = append(e.events, ev) }),
	}
	if edit != nil {
		edit(&cfg)
	}
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	return e
}

func (e *env) now() time.Time { return e.clock.Now() }

func (e *env) enqueue(stream, id string) {
	e.t.Helper()
	if _, _, err := e.mem.Enqueue(e.ctx, stream, id, []byte("payload of "+id)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) advance() worker.Effects { return e.w.Advance(e.ctx, e.now()) }

// nextSends moves the clock from one Next to the next, advancing the
// worker each time, until it hands out sends (or a minute of its time
// passes).
func (e *env) nextSends() worker.Effects {
	until := e.now().Add(time.Minute)
	for e.now().Before(until) {
		e.clock.Advance(max(0, e.w.Next().Sub(e.now())))
		if fx := e.advance(); len(fx.Sends) > 0 {
			return fx
		}
	}
	return worker.Effects{}
}

func (e *env) deliver(r worker.Reply) worker.Effects { return e.w.Deliver(e.ctx, e.now(), r) }

func (e *env) record(id string) store.Record {
	e.t.Helper()
	r, err := e.mem.Get(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) count(k worker.Kind) int {
	n := 0
	for _, ev := range e.events {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func delivered() channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func oneSend(t *testing.T, fx worker.Effects, id string, attempt int) worker.Send {
	t.Helper()
	if len(fx.Sends) != 1 || fx.Sends[0].ID != id || fx.Sends[0].Attempt.Attempt != attempt {
		t.Fatalf("want one send of %s#%d, got %+v", id, attempt, fx.Sends)
	}
	return fx.Sends[0]
}

func TestConfigRejectedNamingTheField(t *testing.T) {
	base := worker.Config{Owner: "w", Store: memstore.New(time.Now), Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 1, LeaseTTL: ttl, Poll: time.Second}
	cases := []struct {
		field string
		edit  func(*worker.Config)
	}{
		{"Owner", func(c *worker.Config) { c.Owner = "" }},
		{"Store", func(c *worker.Config) { c.Store = nil }},
		{"Policy", func(c *worker.Config) { c.Policy = nil }},
		{"MaxStreams", func(c *worker.Config) { c.MaxStreams = 0 }},
		{"LeaseTTL", func(c *worker.Config) { c.LeaseTTL = 0 }},
		{"RenewEvery", func(c *worker.Config) { c.RenewEvery = ttl }},
		{"ClockMargin", func(c *worker.Config) { c.ClockMargin = ttl }},
		{"Poll", func(c *worker.Config) { c.Poll = -time.Second }},
		{"PageSize", func(c *worker.Config) { c.PageSize = -1 }},
	}
	for _, c := range cases {
		cfg := base
		c.edit(&cfg)
		_, err := worker.New(cfg)
		if !errors.Is(err, worker.ErrInvalidConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: got %v, want ErrInvalidConfig naming %s", c.field, err, c.field)
		}
	}
	if _, err := worker.New(base); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
}

// The whole life of a stream: claim, persist the attempt before the send
// is handed out, deliver in order, no wake-up once idle, give it back.
func TestClaimDeliverInOrderThenRelease(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	fx := e.advance()
	x := oneSend(t, fx, "e1", 1)
	if got := e.record("e1").Attempts; got != 1 {
		t.Fatalf("the send was handed out with %d attempts persisted, want 1", got)
	}
	if want := epoch.Add(ttl - ttl/10); !x.Deadline.Equal(want) {
		t.Errorf("send deadline %v, want the lease's end less the margin %v", x.Deadline, want)
	}
	if x.Token == 0 || x.Timeout != policy().AttemptTimeout || x.Seq != 1 || string(x.Payload) != "payload of e1" {
		t.Errorf("send carries the wrong lease, timeout or event: %+v", x)
	}
	e.clock.Advance(10 * time.Millisecond)
	x = oneSend(t, e.deliver(x.Reply(delivered())), "e2", 1)
	if r := e.record("e1"); r.State != machine.Delivered {
		t.Fatalf("e1 is %s after its delivery, want delivered", r.State)
	}
	e.clock.Advance(10 * time.Millisecond)
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends)+len(fx.Probes) != 0 {
		t.Fatalf("nothing is left, yet the worker asks for %+v", fx)
	}
	// A zero WakeAt adds no wake-up: the next thing due is the adoption
	// poll, not now.
	if next := e.w.Next(); !next.After(e.now()) {
		t.Fatalf("Next is %v at %v: a worker with nothing to do must not spin", next, e.now())
	}
	for i := 0; i < 5 && e.w.Owns("s"); i++ {
		e.clock.Advance(e.w.Next().Sub(e.now()))
		e.advance()
	}
	if e.w.Owns("s") || e.count(worker.LeaseReleased) != 1 {
		t.Fatalf("an idle stream was not given back (owns=%v, released=%d)", e.w.Owns("s"), e.count(worker.LeaseReleased))
	}
	if _, err := e.mem.Acquire(e.ctx, "s", "other", ttl); err != nil {
		t.Fatalf("the released stream cannot be acquired: %v", err)
	}
}

// A stale lease ends everything: no write, no send, replies dropped.
func TestStaleLeaseDropsTheStream(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	// Another worker steals the stream mid-send.
	l := store.Lease{Stream: "s", Owner: "w1", Token: x.Token}
	if err := e.mem.Release(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mem.Acquire(e.ctx, "s", "thief", ttl); err != nil {
		t.Fatal(err)
	}
	fx := e.deliver(x.Reply(delivered()))
	if len(fx.Sends)+len(fx.Probes) != 0 {
		t.Fatalf("a fenced-off worker still asks for %+v", fx)
	}
	if e.w.Owns("s") || e.count(worker.LeaseLost) != 1 {
		t.Fatalf("the worker still owns the stream after its write was fenced off")
	}
	if r := e.record("e1"); r.State != machine.Pending || r.Attempts != 1 {
		t.Fatalf("e1 is %s/%d: the fenced-off write changed the store", r.State, r.Attempts)
	}
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 || e.count(worker.ReplyDropped) != 1 {
		t.Fatalf("a reply for a lost stream was not dropped")
	}
}

// A write whose reply was lost may have committed: the worker re-reads
// before acting, so it neither resends the delivered event nor skips the
// next one.
func TestUnknownWriteOutcomeRereads(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	e.st.loseSaveReply = true
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 {
		t.Fatalf("sent %+v after a write whose outcome is unknown", fx.Sends)
	}
	if e.count(worker.StoreFailed) != 1 {
		t.Fatalf("the failed write was not reported")
	}
	if r := e.record("e1"); r.State != machine.Delivered {
		t.Fatalf("the fault store did not commit: e1 is %s", r.State)
	}
	// The lost write had also started e2's first attempt: the rebuilt
	// machine must count it, check the channel first, and never resend e1.
	if r := e.record("e2"); r.Attempts != 1 {
		t.Fatalf("e2 has %d attempts in the store, want the committed 1", r.Attempts)
	}
	e.clock.Advance(e.w.Next().Sub(e.now()))
	fx := e.advance()
	if e.count(worker.Rebuilt) != 2 || len(fx.Sends) != 0 || len(fx.Probes) != 1 {
		t.Fatalf("after the rebuild: %d rebuilds, sends %+v, probes %+v; want a rebuild and one probe", e.count(worker.Rebuilt), fx.Sends, fx.Probes)
	}
	e.deliver(fx.Probes[0].Reply(delivered()))
	oneSend(t, e.nextSends(), "e2", 2)
}

// Leases are renewed at a third of their TTL; when renewals keep failing,
// sends carry the deadline the lease had, and the worker lets the stream
// go when its own clock says the lease ran out.
func TestRenewalAndLossByOwnClock(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) { c.Poll = time.Minute })
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	if next := e.w.Next(); !next.Equal(epoch.Add(ttl / 3)) {
		t.Fatalf("Next is %v after the claim, want the renewal at ttl/3 (%v)", next.Sub(epoch), ttl/3)
	}
	e.clock.Advance(ttl / 3)
	e.advance()
	if e.st.calls["Renew"] != 1 || e.count(worker.LeaseRenewed) != 1 {
		t.Fatalf("no renewal at ttl/3: %d calls", e.st.calls["Renew"])
	}
	// The store goes down for writes: renewals fail from now on.
	e.mem.SetUnavailable(func() bool { return true })
	renewed := e.now()
	for e.w.Owns("s") {
		next := e.w.Next()
		if next.After(renewed.Add(ttl)) {
			t.Fatalf("the worker plans to act at %v, past its lease's end %v", next.Sub(epoch), renewed.Add(ttl).Sub(epoch))
		}
		e.clock.Advance(next.Sub(e.now()))
		e.advance()
	}
	if lostAt := e.now(); lostAt.After(renewed.Add(ttl - ttl/10)) {
		t.Fatalf("the stream was given up at %v, after the lease's end less the margin", lostAt.Sub(renewed))
	}
	if x.Deadline.After(epoch.Add(ttl)) {
		t.Fatalf("a send's deadline %v is past the lease it was persisted under", x.Deadline.Sub(epoch))
	}
	if e.count(worker.LeaseLost) != 1 {
		t.Fatalf("the loss was not reported")
	}
}

// Records a producer enqueues later are adopted at the next poll, or at
// once after Notify.
func TestAdoptsLaterEnqueues(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(time.Millisecond)
	e.deliver(x.Reply(delivered()))
	e.enqueue("s", "e2")
	e.w.Notify("s")
	if next := e.w.Next(); next.After(e.now()) {
		t.Fatalf("Notify did not make the owner look at once (Next %v)", next.Sub(e.now()))
	}
	oneSend(t, e.advance(), "e2", 1)
	// A stream the worker does not own: Notify makes it claim at once.
	e.enqueue("t", "f1")
	e.w.Notify("t")
	fx := e.advance()
	if !e.w.Owns("t") || len(fx.Sends) != 1 || fx.Sends[0].ID != "f1" {
		t.Fatalf("Notify on an unowned stream did not claim it: %+v", fx.Sends)
	}
}

// A record a local producer hands over (Enqueued) is adopted at once
// without a read when it follows the last the owner knows; one that
// follows a record of another producer makes the owner read them all.
func TestAdoptsHandedRecordsUnread(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(time.Millisecond)
	e.deliver(x.Reply(delivered()))
	publish := func(id string) store.Record {
		r, _, err := e.mem.Enqueue(e.ctx, "s", id, []byte("payload of "+id))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	reads := e.st.calls["Pending"]
	e.w.Enqueued(publish("e2"))
	if next := e.w.Next(); next.After(e.now()) {
		t.Fatalf("Enqueued did not make the owner act at once (Next %v)", next.Sub(e.now()))
	}
	x = oneSend(t, e.advance(), "e2", 1)
	if n := e.st.calls["Pending"] - reads; n != 0 {
		t.Errorf("the owner read the store %d times to adopt a record handed to it; want none", n)
	}
	e.clock.Advance(time.Millisecond)
	e.deliver(x.Reply(delivered()))

	// e3 comes from another producer (no hand-over), then e4 is handed:
	// the owner must read, and adopt both in order.
	e.enqueue("s", "e3")
	e.w.Enqueued(publish("e4"))
	fx := e.advance()
	if n := e.st.calls["Pending"] - reads; n != 1 {
		t.Errorf("%d reads after a hand-over with a gap; want 1", n)
	}
	oneSend(t, fx, "e3", 1) // strict: e4 waits behind it
	if e.count(worker.Adopted) != 3 {
		t.Errorf("%d adoptions; want e2, e3 and e4", e.count(worker.Adopted))
	}

	// A stream the worker does not own: Enqueued makes it claim at once.
	e.w.Enqueued(func() store.Record {
		r, _, err := e.mem.Enqueue(e.ctx, "t", "f1", []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}())
	fx = e.advance()
	if !e.w.Owns("t") || len(fx.Sends) != 1 || fx.Sends[0].ID != "f1" {
		t.Fatalf("Enqueued on an unowned stream did not claim it: %+v", fx.Sends)
	}
}

// Draining persists the replies of attempts in flight and starts nothing,
// so a shutdown costs no event an attempt.
func TestDrainSpendsNoAttempt(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	e.w.Drain()
	e.clock.Advance(time.Millisecond)
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 {
		t.Fatalf("a draining worker started %+v", fx.Sends)
	}
	if r := e.record("e1"); r.State != machine.Delivered {
		t.Fatalf("the reply was not persisted while draining: e1 is %s", r.State)
	}
	if r := e.record("e2"); r.Attempts != 0 {
		t.Fatalf("draining spent an attempt of e2: %d", r.Attempts)
	}
	e.w.Stop(e.ctx, e.now())
	if e.w.Owns("s") {
		t.Fatal("Stop kept the stream")
	}
	if _, err := e.mem.Acquire(e.ctx, "s", "next", ttl); err != nil {
		t.Fatalf("Stop did not release the lease: %v", err)
	}
}

// A stream whose policy is invalid is given back, not delivered with a
// policy nobody chose.
func TestBadPolicyGivesTheStreamBack(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(s string) (machine.Config, error) {
			if s == "bad" {
				return machine.Config{}, nil // zero Ordering: invalid
			}
			return policy(), nil
		}
	})
	e.enqueue("bad", "b1")
	e.enqueue("good", "g1")
	fx := e.advance()
	if e.w.Owns("bad") || !e.w.Owns("good") || len(fx.Sends) != 1 || fx.Sends[0].ID != "g1" {
		t.Fatalf("owns bad=%v good=%v, sends %+v", e.w.Owns("bad"), e.w.Owns("good"), fx.Sends)
	}
	if e.count(worker.Faulted) != 1 {
		t.Fatal("the bad policy was not reported")
	}
}

// The worker owns at most MaxStreams streams, and Owned counts them.
func TestMaxStreams(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) { c.MaxStreams = 2 })
	for _, s := range []string{"a", "b", "c"} {
		e.enqueue(s, s+"1")
	}
	if e.w.Owned() != 0 {
		t.Fatalf("Owned is %d before the first Advance; want 0", e.w.Owned())
	}
	fx := e.advance()
	if len(e.w.Streams()) != 2 || len(fx.Sends) != 2 {
		t.Fatalf("owns %d streams with %d sends; MaxStreams is 2", len(e.w.Streams()), len(fx.Sends))
	}
	if e.w.Owned() != len(e.w.Streams()) {
		t.Fatalf("Owned is %d; Streams lists %d", e.w.Owned(), len(e.w.Streams()))
	}
}

// Streams taken over at different instants still look for new records at
// the same instants (one grid of Polls from the worker's first reading),
// so one Advance serves them all: a worker with many streams is not woken
// once per stream per Poll.
func TestPollsShareOneGrid(t *testing.T) {
	e := newEnv(t, nil) // Poll is 1s
	e.enqueue("a", "a1")
	oneSend(t, e.advance(), "a1", 1)
	e.clock.Advance(300 * time.Millisecond)
	e.enqueue("b", "b1")
	e.w.Notify("b")
	oneSend(t, e.advance(), "b1", 1)
	if got, want := e.w.Next(), epoch.Add(time.Second); !got.Equal(want) {
		t.Fatalf("Next is %v after taking b over at 300ms; want the grid's next poll at %v", got.Sub(epoch), want.Sub(epoch))
	}
	e.clock.Advance(700 * time.Millisecond)
	e.enqueue("a", "a2")
	e.enqueue("b", "b2")
	e.advance() // one call adopts on both streams
	if got := e.count(worker.Adopted); got != 2 {
		t.Fatalf("one Advance at the grid's poll adopted %d records; want a2 and b2", got)
	}
}

// The outcome of the attempt a batch answers is saved with its record
// (status and bounded, valid detail), so an operator sees why it retries.
func TestLastOutcomeKeptWithTheRecord(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(time.Millisecond)
	long := "upstream down \xff" + strings.Repeat("x", 1000)
	e.deliver(x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503, Detail: long}))
	r := e.record("e1")
	if r.State != machine.Retry || r.Last.Attempt != 1 || r.Last.Status != 503 {
		t.Fatalf("record after a failed attempt: %s, last %+v; want retry with attempt 1's 503", r.State, r.Last)
	}
	if len(r.Last.Detail) > store.MaxDetailBytes || !strings.HasPrefix(r.Last.Detail, "upstream down ?") {
		t.Fatalf("detail not bounded and made valid: %q", r.Last.Detail[:20])
	}
}

// A reply to an earlier attempt (one the machine timed out and tried
// again) is stale, but the batch of the step it arrives in may start the
// next attempt: the stale outcome must not go with that write, or the store
// refuses it as older than the last recorded outcome and the worker never
// saves the attempt (found by the swarm, seed 912).
func TestLateReplyToAnEarlierAttempt(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	x1 := oneSend(t, e.advance(), "e1", 1)
	x2 := oneSend(t, e.nextSends(), "e1", 2) // attempt 1 timed out
	e.deliver(x2.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503}))
	e.clock.Advance(e.record("e1").NextAt.Sub(e.now())) // attempt 3 is due
	fx := e.deliver(x1.Reply(channel.Outcome{Result: machine.OutcomeTimedOut}))
	if n := e.count(worker.StoreFailed); n != 0 {
		t.Fatalf("the write that came with the late reply failed: %v", e.events[len(e.events)-1].Err)
	}
	oneSend(t, fx, "e1", 3)
	if r := e.record("e1"); r.Attempts != 3 || r.Last.Attempt != 2 || r.Last.Status != 503 {
		t.Fatalf("record: %d attempts, last %+v; want 3 attempts with attempt 2's 503 kept", r.Attempts, r.Last)
	}
}

// Settled records are deleted once they are older than Retention; e2,
// never answered (retrying, then a dead letter no operator discarded),
// never is.
func TestRetentionDeletesSettledRecords(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) {
		c.Retention = time.Hour
		c.RetentionEvery = time.Minute
	})
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(time.Millisecond)
	e.deliver(x.Reply(delivered())) // e1 settled; e2's attempt 1 is out
	for until := e.now().Add(2 * time.Hour); e.now().Before(until); {
		e.clock.Advance(max(0, e.w.Next().Sub(e.now())))
		e.advance()
	}
	if _, err := e.mem.Get(e.ctx, "e1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("e1, delivered two hours ago with a retention of one, is still there: %v", err)
	}
	if e.count(worker.Purged) != 1 {
		t.Fatalf("the deletion was not reported (%d)", e.count(worker.Purged))
	}
	if r := e.record("e2"); r.State == machine.Delivered { // e.record fails the test if e2 was deleted
		t.Fatalf("e2 was never answered, yet it is delivered")
	}
}

// In independent order, a reply during the drain that would start the
// next event does not stop the other replies from being persisted.
func TestDrainPersistsEveryReplyInFlight(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) {
			p := policy()
			p.Ordering, p.Window = machine.Independent, 2
			return p, nil
		}
	})
	for _, id := range []string{"e1", "e2", "e3"} {
		e.enqueue("s", id)
	}
	fx := e.advance()
	if len(fx.Sends) != 2 {
		t.Fatalf("want e1 and e2 in flight, got %+v", fx.Sends)
	}
	e.w.Drain()
	e.clock.Advance(time.Millisecond)
	for _, x := range fx.Sends {
		if more := e.deliver(x.Reply(delivered())); len(more.Sends) != 0 {
			t.Fatalf("a draining worker started %+v", more.Sends)
		}
	}
	for id, want := range map[string]machine.State{"e1": machine.Delivered, "e2": machine.Delivered, "e3": machine.Pending} {
		if r := e.record(id); r.State != want || (id == "e3" && r.Attempts != 0) {
			t.Errorf("%s is %s with %d attempts after the drain; want %s (and e3 untouched)", id, r.State, r.Attempts, want)
		}
	}
}

// Deliver takes the stream of the reply before without a lookup while it
// is still owned: a reply to a stream's machine from before the worker
// lost the stream and took it over again is dropped, even right after a
// reply for the lost one, and the new machine's replies are taken.
func TestReplyAfterTheStreamWasTakenOverAgain(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x1 := oneSend(t, e.advance(), "e1", 1)
	x2 := oneSend(t, e.deliver(x1.Reply(delivered())), "e2", 1)
	// Another worker takes the stream over, and gives it back.
	l := store.Lease{Stream: "s", Owner: "w1", Token: x2.Token}
	if err := e.mem.Release(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	thief, err := e.mem.Acquire(e.ctx, "s", "thief", ttl)
	if err != nil {
		t.Fatal(err)
	}
	e.deliver(x2.Reply(delivered())) // the stream's last reply before the loss
	if e.w.Owns("s") {
		t.Fatalf("the worker still owns the stream after its write was fenced off")
	}
	if err := e.mem.Release(e.ctx, thief); err != nil {
		t.Fatal(err)
	}
	// Taken over again: e2's attempt may have reached the receiver, so the
	// new machine probes first.
	var fx worker.Effects
	for i := 0; i < 200 && len(fx.Probes) == 0; i++ {
		e.clock.Advance(max(0, e.w.Next().Sub(e.now())))
		fx = e.advance()
	}
	if len(fx.Probes) != 1 || fx.Probes[0].Gen == x2.Gen {
		t.Fatalf("the worker did not take the stream over again with a new machine: %+v", fx)
	}
	dropped := e.count(worker.ReplyDropped)
	if fx := e.deliver(x2.Reply(delivered())); len(fx.Sends) != 0 || e.count(worker.ReplyDropped) != dropped+1 {
		t.Fatalf("a reply to the machine from before the loss was not dropped")
	}
	x3 := oneSend(t, e.deliver(fx.Probes[0].Reply(delivered())), "e2", 2)
	e.deliver(x3.Reply(delivered()))
	if r := e.record("e2"); r.State != machine.Delivered {
		t.Fatalf("e2 is %s after the new machine's reply, want delivered", r.State)
	}
}

// A driver's clock stepped back (a wall clock corrected by NTP) is held at
// the latest reading: the machines never see a reading go back, so they
// refuse no input (no Faulted), and what is persisted carries the latest
// reading. Readings jump back and forth around every call of the run.
func TestClockSteppedBackIsHeldAtTheLatestReading(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 3 {
		e.enqueue("s", fmt.Sprintf("e%d", i))
	}
	back := func() time.Time { return e.now().Add(-time.Hour) } // well before every reading so far
	fx := e.advance()
	for i := range 3 {
		id := fmt.Sprintf("e%d", i)
		x := oneSend(t, fx, id, 1)
		e.clock.Advance(time.Millisecond)
		latest := e.now()
		e.w.Advance(e.ctx, latest)
		e.w.Advance(e.ctx, back())                            // nothing due at the latest reading
		fx = e.w.Deliver(e.ctx, back(), x.Reply(delivered())) // a reply read at a stepped-back clock
		var last worker.Event
		for _, ev := range e.events {
			if ev.Kind == worker.Persisted {
				last = ev
			}
		}
		if !last.At.Equal(latest) {
			t.Fatalf("%s: the delivery was persisted at %v, want the latest reading %v", id, last.At, latest)
		}
		if r := e.record(id); r.State != machine.Delivered {
			t.Fatalf("%s is %s after its delivery at a stepped-back clock, want delivered", id, r.State)
		}
	}
	if n := e.count(worker.Faulted); n != 0 {
		t.Fatalf("%d machine faults: a machine saw the clock go back", n)
	}
}

// An owner asks Policy again at each renewal: once an operator paused the
// stream, it starts no attempt more, persists the replies still due, and
// gives the stream back when none is left; the events it did not start
// keep their attempts for the next owner.
func TestPauseSeenAtRenewal(t *testing.T) {
	paused := false
	e := newPausableEnv(t, &paused)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	paused = true
	e.clock.Advance(ttl / 3)
	if fx := e.advance(); len(fx.Sends) != 0 {
		t.Fatalf("a renewal that found the pause started %+v", fx.Sends)
	}
	if !e.w.Owns("s") || e.count(worker.Faulted) != 1 {
		t.Fatalf("owns=%v faults=%d: the owner must keep the stream for the reply due, and report the refusal", e.w.Owns("s"), e.count(worker.Faulted))
	}
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 {
		t.Fatalf("a paused owner started %+v", fx.Sends)
	}
	if r := e.record("e1"); r.State != machine.Delivered {
		t.Fatalf("the reply due was not persisted: e1 is %s", r.State)
	}
	if r := e.record("e2"); r.Attempts != 0 {
		t.Fatalf("the pause cost e2 an attempt: %d", r.Attempts)
	}
	if e.w.Owns("s") {
		t.Fatal("the owner kept the paused stream after its last reply")
	}
	if _, err := e.mem.Acquire(e.ctx, "s", "next", ttl); err != nil {
		t.Fatalf("the lease was not released: %v", err)
	}
}

// A paused owner whose reply never comes gives the stream back an
// AttemptTimeout after it saw the pause, not never.
func TestPausedOwnerReleasesWithoutReply(t *testing.T) {
	paused := false
	e := newPausableEnv(t, &paused)
	e.enqueue("s", "e1")
	oneSend(t, e.advance(), "e1", 1)
	paused = true
	e.clock.Advance(ttl / 3)
	e.advance()
	saw := e.now()
	for e.w.Owns("s") && e.now().Sub(saw) < 2*policy().AttemptTimeout {
		e.clock.Advance(max(time.Millisecond, e.w.Next().Sub(e.now())))
		e.advance()
	}
	if e.w.Owns("s") {
		t.Fatal("the paused owner never gave the stream back")
	}
	if got := e.now().Sub(saw); got != policy().AttemptTimeout {
		t.Fatalf("released %v after it saw the pause, want the AttemptTimeout %v", got, policy().AttemptTimeout)
	}
}

// newPausableEnv is an env whose Policy refuses every stream while
// *paused, as a paused stream's policy does.
func newPausableEnv(t *testing.T, paused *bool) *env {
	return newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) {
			if *paused {
				return machine.Config{}, errors.New("paused by an operator")
			}
			return policy(), nil
		}
	})
}

// A worker that wakes from a stall to a reply queued ahead of its overdue
// renewal renews and asks Policy first: the reply frees the window, and
// must not start the next event on a stream an operator paused meanwhile
// (seed 615000000421 of the swarm).
func TestOverdueRecheckBeforeReply(t *testing.T) {
	paused := false
	e := newPausableEnv(t, &paused)
	e.enqueue("s", "e1")
	e.enqueue("s", "e2")
	x := oneSend(t, e.advance(), "e1", 1)
	paused = true
	e.clock.Advance(ttl / 2) // frozen past the renewal, not past the lease
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 {
		t.Fatalf("the reply to a stalled owner started %+v on a paused stream", fx.Sends)
	}
	if e.st.calls["Renew"] != 1 || e.count(worker.Faulted) != 1 {
		t.Fatalf("renewals=%d faults=%d: the overdue renewal and its Policy check must come before the reply", e.st.calls["Renew"], e.count(worker.Faulted))
	}
	if r := e.record("e1"); r.State != machine.Delivered {
		t.Fatalf("the reply was not persisted: e1 is %s", r.State)
	}
	if r := e.record("e2"); r.Attempts != 0 {
		t.Fatalf("the pause cost e2 an attempt: %d", r.Attempts)
	}
}

// A reply that comes after the lease ran out by the worker's clock is
// dropped, and the stream given up, as Advance would at that reading.
func TestReplyPastTheLeaseByOwnClockIsDropped(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.clock.Advance(ttl)
	if fx := e.deliver(x.Reply(delivered())); len(fx.Sends) != 0 || e.w.Owns("s") {
		t.Fatalf("owns=%v sends=%+v: a lease past its end by the worker's clock was acted on", e.w.Owns("s"), fx.Sends)
	}
	if e.count(worker.LeaseLost) != 1 || e.count(worker.ReplyDropped) != 1 {
		t.Fatalf("lost=%d dropped=%d, want 1 and 1", e.count(worker.LeaseLost), e.count(worker.ReplyDropped))
	}
	if r := e.record("e1"); r.State == machine.Delivered {
		t.Fatal("a reply past the lease's end was persisted")
	}
}

// A worker whose renewals' replies were all lost renews once more when
// its own clock says the lease ran out: the store renewed it meanwhile,
// so the worker keeps the stream rather than leave it unserved until the
// store's lease runs out.
func TestLastRenewalBeforeALeaseIsGivenUp(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) { c.Poll = time.Minute })
	e.enqueue("s", "e1")
	oneSend(t, e.advance(), "e1", 1)
	end := epoch.Add(ttl - ttl/10) // the lease's end by the worker's clock
	e.st.loseRenewReply = func() bool { return e.now().Before(end) }
	for e.now().Before(end) {
		e.clock.Advance(e.w.Next().Sub(e.now()))
		e.advance()
		if !e.w.Owns("s") {
			t.Fatalf("the stream was given up at %v, though the store still held it", e.now().Sub(epoch))
		}
	}
	if !e.w.Owns("s") || e.count(worker.LeaseLost) != 0 {
		t.Fatalf("owns=%v lost=%d at %v: the last renewal did not keep a lease the store still held",
			e.w.Owns("s"), e.count(worker.LeaseLost), e.now().Sub(epoch))
	}
	if e.count(worker.LeaseRenewed) != 1 {
		t.Fatalf("%d renewals reported, want the last one", e.count(worker.LeaseRenewed))
	}
}

// A last renewal the store does not answer gives the lease up by the
// worker's clock, at its end: no later.
func TestFailedLastRenewalGivesTheLeaseUp(t *testing.T) {
	e := newEnv(t, func(c *worker.Config) { c.Poll = time.Minute })
	e.enqueue("s", "e1")
	oneSend(t, e.advance(), "e1", 1)
	e.st.loseRenewReply = func() bool { return true }
	for e.w.Owns("s") {
		e.clock.Advance(e.w.Next().Sub(e.now()))
		e.advance()
	}
	if got, want := e.now(), epoch.Add(ttl-ttl/10); !got.Equal(want) {
		t.Fatalf("given up at %v, want at its end by the worker's clock %v", got.Sub(epoch), want.Sub(epoch))
	}
	if e.count(worker.LeaseLost) != 1 {
		t.Fatal("the loss was not reported")
	}
}

// slowClaimStore is memstore whose next ClaimDue, once armed, is slow
// before the store acts: the store's clock moves past every lease first.
type slowClaimStore struct {
	*faultStore
	clock *storetest.Clock
	armed bool
}

func (s *slowClaimStore) ClaimDue(ctx context.Context, owner string, d time.Duration, max int) ([]store.Lease, error) {
	if s.armed {
		s.armed = false
		s.clock.Advance(ttl + time.Second)
	}
	return s.faultStore.ClaimDue(ctx, owner, d, max)
}

// A call that hands out a send, then loses its lease in a slow claim that
// grants the same stream anew, takes the old lease's send back: only the
// new lease's machine acts on the stream.
func TestSendOfALeaseLostInTheSameCallIsWithdrawn(t *testing.T) {
	var slow *slowClaimStore
	e := newEnv(t, func(c *worker.Config) {
		slow = &slowClaimStore{faultStore: c.Store.(*faultStore)}
		c.Store = slow
	})
	slow.clock = e.clock
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.deliver(x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503}))
	e.clock.Advance(e.w.Next().Sub(e.now()))
	slow.armed = true
	fx := e.advance()
	if slow.armed {
		t.Fatal("the retry's call made no claim: the test does not reach the loss")
	}
	if e.count(worker.LeaseLost) != 1 || e.count(worker.Sent) < 2 {
		t.Fatalf("lost=%d sent=%d: the call must send the retry, then lose the lease to the claim", e.count(worker.LeaseLost), e.count(worker.Sent))
	}
	for _, s := range fx.Sends {
		if s.Token == x.Token {
			t.Fatalf("the call handed out %s#%d under the lease it lost (token %d)", s.ID, s.Attempt.Attempt, s.Token)
		}
	}
}

// slowGrantStore is memstore whose ClaimDue reply comes after the leases
// it granted ran out, as a slow call's may.
type slowGrantStore struct {
	*faultStore
	clock *storetest.Clock
}

func (s *slowGrantStore) ClaimDue(ctx context.Context, owner string, d time.Duration, max int) ([]store.Lease, error) {
	ls, err := s.faultStore.ClaimDue(ctx, owner, d, max)
	s.clock.Advance(d + time.Second)
	return ls, err
}

// A grant Policy refuses is given back; when its reply came so late that
// the store calls the lease stale, it ran out already: nothing is left to
// give back, and no store failure is reported (swarm seed 7, slow calls).
func TestRefusedGrantThatRanOutIsNoStoreFailure(t *testing.T) {
	paused := true
	e := newPausableEnv(t, &paused)
	cfg := e.w.Config()
	cfg.Store = &slowGrantStore{faultStore: e.st, clock: e.clock}
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	e.enqueue("s", "e1")
	e.advance()
	if e.w.Owns("s") || e.count(worker.Faulted) != 1 {
		t.Fatalf("owns=%v faults=%d: the refused grant must be given back and reported", e.w.Owns("s"), e.count(worker.Faulted))
	}
	if n := e.count(worker.StoreFailed); n != 0 {
		t.Fatalf("%d store failures reported for a release of a lease that ran out", n)
	}
}

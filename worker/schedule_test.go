// Tests the worker's part in store-driven scheduling (schedule.go): a
// parked stream whose next probe is far off is released until then and
// claimed again when it falls due; a full worker yields a stream it has owned
// for YieldAfter only when the store grants a waiting stream in its
// place; a swap whose grant replaces the candidate itself keeps the new
// lease, and one whose grant replaces a candidate before granting a
// waiting stream yields the next candidate instead; a stream exactly
// FarRelease from its next work is kept; WaitBound counts turns of the
// room.
package worker_test

import (
	"testing"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
)

// parkedEnv is a worker whose streams probe 40 s apart, with stream s
// parked in the store (its one event failed, its circuit open). edit, if
// not nil, changes the worker's config further.
func parkedEnv(t *testing.T, edit func(*worker.Config)) *env {
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) {
			p := policy()
			p.ProbeBaseInterval, p.ProbeMaxInterval = 40*time.Second, 40*time.Second
			return p, nil
		}
		if edit != nil {
			edit(c)
		}
	})
	e.enqueue("s", "e1")
	l, err := e.mem.Acquire(e.ctx, "s", "setup", ttl)
	if err != nil {
		t.Fatal(err)
	}
	r := e.record("e1").Machine()
	r.Attempts = 1
	for _, state := range []machine.State{machine.Pending, machine.Parked} {
		r.State = state
		if err := e.mem.Save(e.ctx, l, store.UpdatesOf([]machine.Record{r})); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.mem.Release(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestParkedStreamIsReleasedUntilItsProbe(t *testing.T) {
	e := parkedEnv(t, nil) // FarRelease: LeaseTTL, 30 s
	fx := e.advance()
	if len(fx.Probes) != 1 {
		t.Fatalf("want one probe of the parked stream, got %+v", fx)
	}
	e.deliver(fx.Probes[0].Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503}))
	e.clock.Advance(time.Second)
	e.advance()
	if e.w.Owns("s") {
		t.Fatal("the worker kept a parked stream whose next probe is 40 s away")
	}
	// An event enqueued meanwhile is parked behind the probe: no claim sooner.
	e.enqueue("s", "e2")
	e.w.Notify("s")
	for e.now().Before(epoch.Add(40*time.Second - time.Second)) {
		e.clock.Advance(time.Second)
		e.advance()
		if e.w.Owns("s") {
			t.Fatalf("claimed again at %v, before the probe at 40 s", e.now().Sub(epoch))
		}
	}
	e.clock.Advance(time.Second)
	if fx := e.advance(); !e.w.Owns("s") || len(fx.Probes) != 1 {
		t.Errorf("at %v, when the probe fell due: owned %v, probes %d; want claimed and probed", e.now().Sub(epoch), e.w.Owns("s"), len(fx.Probes))
	}
}

func TestStreamInALongBackoffIsKept(t *testing.T) {
	e := newEnv(t, nil)
	e.enqueue("s", "e1")
	x := oneSend(t, e.advance(), "e1", 1)
	e.deliver(x.Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503, RetryAfter: 40 * time.Second}))
	e.clock.Advance(time.Second)
	e.advance()
	if !e.w.Owns("s") {
		t.Error("released a stream in backoff: its next owner would probe before the retry")
	}
}

// yieldEnv is a worker with room for one stream, yielding after 5 s.
func yieldEnv(t *testing.T) *env {
	return newEnv(t, func(c *worker.Config) { c.MaxStreams, c.YieldAfter = 1, 5*time.Second })
}

func TestFullWorkerYieldsOnlyForAWaitingStream(t *testing.T) {
	e := yieldEnv(t)
	e.enqueue("a", "a1")
	e.enqueue("a", "a2")
	oneSend(t, e.advance(), "a1", 1) // in flight, never answered here
	for range 10 {
		e.clock.Advance(time.Second)
		e.advance()
	}
	if !e.w.Owns("a") {
		t.Fatal("yielded a stream with no stream waiting")
	}
	e.enqueue("b", "b1")
	e.clock.Advance(time.Second)
	e.advance()
	if !e.w.Owns("b") || !e.w.Owns("a") {
		t.Fatalf("after b fell due: owns a %v, b %v; want both while a's attempt is out", e.w.Owns("a"), e.w.Owns("b"))
	}
	// a is given back once its attempt is out of time (AttemptTimeout),
	// not before; then the two rotate, each yielding to the other.
	released := func(stream string) (at []time.Duration) {
		for _, ev := range e.events {
			if ev.Kind == worker.LeaseReleased && ev.Stream == stream {
				at = append(at, ev.At.Sub(epoch))
			}
		}
		return at
	}
	for range 60 {
		e.clock.Advance(time.Second)
		e.advance()
	}
	ra, rb := released("a"), released("b")
	if want := 11*time.Second + policy().AttemptTimeout; len(ra) == 0 || ra[0] != want {
		t.Errorf("a released at %v, want first at %v (its attempt's timeout after the yield)", ra, want)
	}
	if len(rb) == 0 {
		t.Error("b never yielded back to a")
	}
}

func TestSwapKeepsTheNewLeaseOfAReplacedCandidate(t *testing.T) {
	e := yieldEnv(t)
	e.enqueue("a", "a1")
	oneSend(t, e.advance(), "a1", 1)
	// The store's clock runs past the lease while the worker's reads
	// 6 s: to the store the lease ran out, so the swap's claim grants a
	// again, to this worker, under a new token.
	e.clock.Advance(ttl + time.Second)
	e.w.Advance(e.ctx, epoch.Add(6*time.Second))
	if !e.w.Owns("a") {
		t.Fatal("the worker forgot a, granted to it again under a new lease")
	}
	st := e.w.Streams()
	if len(st) != 1 || st[0].Token < 2 {
		t.Fatalf("streams %+v, want a under the new token", st)
	}
	// It acts on a under the new lease: it renews it.
	e.clock.Advance(10 * time.Second)
	e.w.Advance(e.ctx, epoch.Add(16*time.Second))
	if got := e.w.Streams(); len(got) != 1 || got[0].Token != st[0].Token {
		t.Errorf("after a renewal: %+v, want a kept under token %d", got, st[0].Token)
		for _, ev := range e.events {
			t.Logf("%s %s %s %d %s %v", ev.At.Sub(epoch), ev.Kind, ev.Stream, ev.Token, ev.Detail, ev.Err)
		}
	}
}

func TestFarReleaseIsMoreThanFarReleaseAway(t *testing.T) {
	// At the first look after the failed probe, the next probe is 39 s
	// away: a stream exactly FarRelease from its probe is kept, one a
	// nanosecond further is released.
	for _, c := range []struct {
		far  time.Duration
		kept bool
	}{{39 * time.Second, true}, {39*time.Second - time.Nanosecond, false}} {
		e := parkedEnv(t, func(cfg *worker.Config) { cfg.FarRelease = c.far })
		fx := e.advance()
		if len(fx.Probes) != 1 {
			t.Fatalf("want one probe of the parked stream, got %+v", fx)
		}
		e.deliver(fx.Probes[0].Reply(channel.Outcome{Result: machine.OutcomeFailed, Status: 503}))
		e.clock.Advance(time.Second)
		e.advance()
		if e.w.Owns("s") != c.kept {
			t.Errorf("FarRelease %v, probe 39 s away: owned %v, want %v", c.far, e.w.Owns("s"), c.kept)
		}
	}
}

func TestSwapPassesOverACandidateReplacedByTheSameClaim(t *testing.T) {
	// a and b are owned with an attempt out each. The store's clock runs
	// past a's lease while the worker's reads 7 s, so the swap's claim
	// grants a again (due at its attempt's timeout, 30 s) and then c
	// (enqueued at 31 s). The new lease of a replaces a, which takes no
	// room; for c the worker yields b, the candidate left, not a.
	e := newEnv(t, nil)
	pf := &pendingFault{Store: e.mem}
	var events []worker.Event
	w, err := worker.New(worker.Config{Owner: "w2", Store: pf, Policy: func(string) (machine.Config, error) { return policy(), nil },
		MaxStreams: 2, LeaseTTL: ttl, Poll: time.Second, YieldAfter: 5 * time.Second, RetryAfterFailure: 10 * time.Second,
		Observer: worker.ObserverFunc(func(ev worker.Event) { events = append(events, ev) })})
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	e.enqueue("a", "a1")
	oneSend(t, w.Advance(e.ctx, at(0)), "a1", 1)
	e.clock.Advance(2 * time.Second)
	e.enqueue("b", "b1")
	xb := oneSend(t, w.Advance(e.ctx, at(2*time.Second)), "b1", 1)
	// a's adoption read fails at 3 s: its next look is at 13 s, so the
	// worker does not read through a's lease before the swap.
	e.clock.Advance(time.Second)
	pf.fail = true
	w.Advance(e.ctx, at(3*time.Second))
	if pf.fail {
		t.Fatal("a's adoption read was not tried at 3 s; the test's timing is off")
	}
	e.clock.Advance(28 * time.Second) // the store reads 31 s
	e.enqueue("c", "c1")
	w.Advance(e.ctx, at(7*time.Second))
	if !w.Owns("a") || !w.Owns("c") {
		t.Fatalf("after the swap: owns a %v, c %v; want both", w.Owns("a"), w.Owns("c"))
	}
	lost := 0
	for _, ev := range events {
		if ev.Kind == worker.LeaseLost && ev.Stream == "a" {
			lost++
		}
	}
	if lost != 1 {
		t.Errorf("a's old lease was lost %d times, want once (by the new grant)", lost)
	}
	// b yields: given back as soon as its attempt is answered.
	w.Deliver(e.ctx, at(7*time.Second), xb.Reply(delivered()))
	if w.Owns("b") {
		t.Error("b is still owned after its attempt was answered; it was to yield to c")
	}
}

func TestWaitBoundCountsTurnsOfTheRoom(t *testing.T) {
	// One turn of the room is YieldAfter + AttemptTimeout + 2 Polls:
	// 60 s + 30 s + 2 s here. A stream waits for ⌈streams ÷ room⌉ turns
	// at most; no room at all counts as one slot.
	c := worker.Config{YieldAfter: time.Minute, Poll: time.Second}
	turn := 92 * time.Second
	for _, k := range []struct{ streams, room, turns int }{
		{5, 2, 3}, {4, 2, 2}, {1, 3, 1}, {5, 0, 5}, {3, -1, 3},
	} {
		if got, want := worker.WaitBound(c, 30*time.Second, k.streams, k.room), time.Duration(k.turns)*turn; got != want {
			t.Errorf("WaitBound(%d streams, room %d) = %v, want %v", k.streams, k.room, got, want)
		}
	}
}

// A parked stream with a probe out is kept, however far the probe's
// timeout: released, the probe's answer would be dropped, and owners that
// released it after each probe would never close the circuit (swarm seed
// 148331270897, where a producer's resend woke the owner mid-probe).
func TestParkedStreamWithAProbeOutIsKept(t *testing.T) {
	e := parkedEnv(t, func(c *worker.Config) {
		c.FarRelease = time.Second
		parked := c.Policy
		c.Policy = func(s string) (machine.Config, error) {
			p, err := parked(s)
			p.ProbeTimeout = 10 * time.Second // the probe's timeout is far
			return p, err
		}
	})
	fx := e.advance()
	if len(fx.Probes) != 1 {
		t.Fatalf("want one probe of the parked stream, got %+v", fx)
	}
	e.clock.Advance(500 * time.Millisecond)
	e.enqueue("s", "e2") // a publish wakes the owner while the probe is out
	e.w.Notify("s")
	e.advance()
	if !e.w.Owns("s") {
		t.Fatal("the worker released a parked stream while its probe was out")
	}
	got := e.deliver(fx.Probes[0].Reply(channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}))
	got.Sends = append(got.Sends, e.advance().Sends...)
	if len(got.Sends) == 0 {
		t.Error("after a healthy probe nothing was sent")
	}
}

// Tests the shell's edges under testing/synctest: a graceful shutdown lets
// attempts in flight finish and persists their outcomes, a shutdown
// whose attempts outlast ShutdownTimeout cancels them, both release every
// lease and leave no goroutine; a send that waited past its lease's end
// by the worker's clock is never started; Run refuses to run twice.
package courier_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

// slowChannel answers every send after delay (or when its context ends),
// and counts the sends it saw.
type slowChannel struct {
	delay time.Duration
	mu    sync.Mutex
	sent  []string
}

func (c *slowChannel) Send(ctx context.Context, a channel.Attempt) channel.Outcome {
	c.mu.Lock()
	c.sent = append(c.sent, a.ID)
	c.mu.Unlock()
	if !sleep(ctx, c.delay) {
		return channel.Outcome{Result: machine.OutcomeTimedOut, Detail: "cancelled"}
	}
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (c *slowChannel) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (c *slowChannel) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sent)
}

func newSlowService(t *testing.T, st *memstore.Store, ch channel.Channel, pol machine.Config, maxInFlight int, grace time.Duration) *courier.Service {
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "w1", Store: st, MaxStreams: 4, LeaseTTL: 15 * time.Second, Poll: time.Second,
			Policy: func(string) (machine.Config, error) { return pol, nil },
		},
		Channel:         ch,
		MaxInFlight:     maxInFlight,
		ShutdownTimeout: grace,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestShutdownLetsAttemptsFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(time.Now)
		// The answer must come well inside the attempt's own timeout. With
		// shellPolicy's 5s, the answer and the attempt's deadline fell on
		// the same instant: two timers due at once, and when the context's
		// fired first (its cancel runs on a goroutine of its own, which
		// another P can run before the channel's timer is sent), the
		// channel saw its context done and reported "cancelled": a timed
		// out attempt, rightly retried. Nothing of the shutdown was at fault.
		pol := shellPolicy(machine.Strict)
		pol.AttemptTimeout = time.Minute
		ch := &slowChannel{delay: 5 * time.Second}
		svc := newSlowService(t, st, ch, pol, 8, 30*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		for _, id := range []string{"a", "b"} {
			if _, err := svc.Publish(ctx, "s", id, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // Run is serving
		if err := svc.Run(ctx); !errors.Is(err, courier.ErrRunning) {
			t.Errorf("a second Run returned %v, want ErrRunning", err)
		}
		time.Sleep(time.Second) // a is in flight
		cancel()
		stopAt := time.Now()
		if err := await(t, "Run after its context ended", done, runLimit); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(stopAt); took < 3*time.Second || took > 5*time.Second {
			t.Errorf("shutdown took %v; the attempt in flight needed 4s more", took)
		}
		a, _ := st.Get(context.Background(), "a")
		b, _ := st.Get(context.Background(), "b")
		if a.State != machine.Delivered || b.Attempts != 0 || ch.count() != 1 {
			t.Errorf("after the shutdown: a %s, b has %d attempts, %d sends; want a delivered, b untouched, 1 send", a.State, b.Attempts, ch.count())
		}
		if _, err := st.Acquire(context.Background(), "s", "next", time.Second); err != nil {
			t.Errorf("the lease was not released: %v", err)
		}
	})
}

func TestShutdownCancelsAttemptsAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(time.Now)
		pol := shellPolicy(machine.Strict)
		pol.AttemptTimeout = time.Hour
		ch := &slowChannel{delay: time.Hour}
		svc := newSlowService(t, st, ch, pol, 8, 10*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		if _, err := svc.Publish(ctx, "s", "a", []byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cancel()
		stopAt := time.Now()
		if err := await(t, "Run after its context ended", done, runLimit); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(stopAt); took != 10*time.Second {
			t.Errorf("shutdown took %v, want ShutdownTimeout (10s)", took)
		}
		if _, err := st.Acquire(context.Background(), "s", "next", time.Second); err != nil {
			t.Errorf("the lease was not released: %v", err)
		}
	})
}

// A send that waited for a slot past its lease's end (by the worker's
// clock) is not started: a late copy leaves the worker no later than one
// lease after the grant or renewal it was persisted under.
func TestNoSendPastTheLeaseDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(time.Now)
		pol := shellPolicy(machine.Independent)
		pol.AttemptTimeout = time.Minute
		ch := &slowChannel{delay: 20 * time.Second} // longer than the lease's 13.5s by the worker's clock
		svc := newSlowService(t, st, ch, pol, 1, time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		for _, id := range []string{"a", "b"} {
			if _, err := svc.Publish(ctx, "s", id, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		// One of them took the only slot for 20s; the other got it after
		// its lease's end by the worker's clock (13.5s) and was reported
		// failed unsent. (It is retried later, under a renewed lease.)
		time.Sleep(20*time.Second + 100*time.Millisecond)
		if got := ch.count(); got != 1 {
			t.Errorf("%d sends started; the one that waited past its lease's end must not have been", got)
		}
		a, _ := st.Get(context.Background(), "a")
		b, _ := st.Get(context.Background(), "b")
		first, waited := a, b
		ch.mu.Lock()
		bFirst := ch.sent[0] == "b"
		ch.mu.Unlock()
		if bFirst {
			first, waited = b, a
		}
		if first.Last.Status != 200 || waited.Last.Attempt != 1 || waited.Last.Detail != "not sent: the lease may have run out" {
			t.Errorf("%s's last outcome %+v, %s's %+v; want the first delivered, the other's attempt 1 not sent",
				first.ID, first.Last, waited.ID, waited.Last)
		}
		cancel()
		await(t, "Run after its context ended", done, runLimit)
	})
}

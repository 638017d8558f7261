// Tests that the shell reads a reply even when its timed work is due
// again each time an Advance ends (a store slower than the poll): the
// reply is applied, and the event is delivered by its first attempt,
// not timed out while answered and sent again. Found by the end-to-end
// run under -race (package e2e), where SQLite is slow.
package courier_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

// slowClaims is memstore whose ClaimDue takes longer than the poll.
type slowClaims struct {
	*memstore.Store
	took atomic.Int64 // a time.Duration
}

func (s *slowClaims) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	time.Sleep(time.Duration(s.took.Load()))
	return s.Store.ClaimDue(ctx, owner, ttl, max)
}

func TestRepliesNotStarvedBySlowStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const poll = 50 * time.Millisecond
		st := &slowClaims{Store: memstore.New(time.Now)}
		st.took.Store(int64(2 * poll))
		pol := machine.DefaultConfig()
		pol.AttemptTimeout = time.Second
		recv := &orderedReceiver{applied: map[string]int{}, seqs: map[string][]uint64{}}
		svc, err := courier.New(courier.Config{
			Worker: worker.Config{
				Owner: "w", Store: st, MaxStreams: 4, LeaseTTL: 10 * time.Second, Poll: poll,
				Policy: func(string) (machine.Config, error) { return pol, nil },
			},
			Channel: recv,
			Logger:  slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var running sync.WaitGroup
		running.Go(func() { _ = svc.Run(ctx) })
		if _, err := svc.Publish(ctx, "s", "e1", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * pol.AttemptTimeout)
		r, err := st.Get(ctx, "e1")
		st.took.Store(0) // so that a loop that never looked at ctx can see it now
		cancel()
		waitGroup(t, "Run after its context ended", &running, runLimit)
		if err != nil {
			t.Fatal(err)
		}
		recv.mu.Lock()
		defer recv.mu.Unlock()
		if r.State != machine.Delivered || r.Attempts != 1 || recv.applied["e1"] != 1 {
			t.Errorf("e1 is %s after %d attempts, applied %d times; want delivered by its first attempt, applied once",
				r.State, r.Attempts, recv.applied["e1"])
		}
	})
}

// gatedChannel holds every send until open is closed (or its context
// ends), then answers delivered.
type gatedChannel struct {
	open chan struct{}
	mu   sync.Mutex
	sent int
}

func (c *gatedChannel) Send(ctx context.Context, _ channel.Attempt) channel.Outcome {
	c.mu.Lock()
	c.sent++
	c.mu.Unlock()
	select {
	case <-c.open:
		return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
	case <-ctx.Done():
		return channel.Outcome{Result: machine.OutcomeTimedOut, Detail: "cancelled"}
	}
}

func (c *gatedChannel) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

// A reply that came in while an Advance ran, answering its attempt in
// time, is applied before the next Advance, even when that Advance is
// due and would count the attempt as timed out. The loop's select picks
// at random among ready cases, so one round would catch the old order
// half the time; each round forces the interleaving (the answer comes
// during a ClaimDue that outlasts the attempt's timeout), and twenty
// rounds leave it one chance in a million to slip through.
func TestWaitingReplyGoesBeforeTimedWork(t *testing.T) {
	for round := range 20 {
		synctest.Test(t, func(t *testing.T) {
			const poll = 50 * time.Millisecond
			st := &slowClaims{Store: memstore.New(time.Now)}
			pol := machine.DefaultConfig()
			pol.AttemptTimeout = time.Second
			ch := &gatedChannel{open: make(chan struct{})}
			svc, err := courier.New(courier.Config{
				Worker: worker.Config{
					Owner: "w", Store: st, MaxStreams: 4, LeaseTTL: 10 * time.Second, Poll: poll,
					Policy: func(string) (machine.Config, error) { return pol, nil },
				},
				Channel: ch,
				Logger:  slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			var running sync.WaitGroup
			running.Go(func() { _ = svc.Run(ctx) })
			if _, err := svc.Publish(ctx, "s", "e1", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // e1 is out, held at the gate; the loop waits for the next poll
			st.took.Store(int64(2 * pol.AttemptTimeout))
			time.Sleep(2 * poll) // the loop is in the poll's ClaimDue now, until well past e1's timeout
			close(ch.open)       // e1 is answered in time; the reply waits for the loop
			time.Sleep(3 * pol.AttemptTimeout)
			r, err := st.Get(ctx, "e1")
			st.took.Store(0)
			cancel()
			waitGroup(t, "Run after its context ended", &running, runLimit)
			if err != nil {
				t.Fatal(err)
			}
			ch.mu.Lock()
			defer ch.mu.Unlock()
			if r.State != machine.Delivered || r.Attempts != 1 || ch.sent != 1 {
				t.Errorf("round %d: e1 is %s after %d attempts, %d sends; want delivered by its first attempt, answered in time",
					round, r.State, r.Attempts, ch.sent)
			}
		})
	}
}

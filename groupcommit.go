package courier

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/courierlab/courier/store"
)

// maxPublishBatch bounds how many publishes share one commit.
const maxPublishBatch = 128

// groupCommit is a group commit: the calls that arrive while a commit is
// under way wait, and go to the store together in the next one, as one
// store call. Nothing waits for company: a call that finds no commit
// under way commits at once, alone if it is alone. There is no
// goroutine: the first call of each batch commits it (the leader), and
// hands the lead to the first that waits behind it.
//
// A Service has two. Its publishes share commits (store.EnqueueEach:
// one transaction where the store is a store.BatchEnqueuer), and so do
// its workers' saves (store.SaveEach: one transaction where the store is
// a store.BatchSaver): each worker already sends the saves it has ready
// at once in one call, and with several workers, the calls of the
// others that come in meanwhile go together in the next commit.
type groupCommit[In, Out any] struct {
	run     func(ctx context.Context, in []In) []Out // one store call: an outcome per input, in order
	fail    func(err error) Out                      // the outcome of an input that err kept from its commit
	timeout time.Duration                            // bounds each commit
	max     int                                      // inputs per commit, unless one call alone has more; 0: no bound

	mu      sync.Mutex
	waiting []*groupCall[In, Out] // in arrival order
	busy    bool                  // a leader is committing
}

// groupCall is one call waiting for its commit.
type groupCall[In, Out any] struct {
	in   []In
	out  []Out
	wake chan bool // true: lead the next commit; false: out is set
}

// do commits in with the calls waiting beside it, and returns an outcome
// for each of in, in order.
func (g *groupCommit[In, Out]) do(ctx context.Context, in []In) []Out {
	if err := ctx.Err(); err != nil {
		return g.failed(len(in), err) // ended before it began: nothing committed
	}
	c := &groupCall[In, Out]{in: in, wake: make(chan bool, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	// A follower waits whatever its ctx says: it may be handed the lead,
	// and a commit is bounded by the timeout.
	if !lead && !<-c.wake {
		return c.out
	}
	g.commit(ctx)
	return c.out
}

// commit commits the calls at the head of the queue (the leader's is the
// first), hands each its outcomes, and hands the lead on: even when the
// store panics, so that no follower waits for ever.
func (g *groupCommit[In, Out]) commit(ctx context.Context) {
	g.mu.Lock()
	n, inputs := 1, len(g.waiting[0].in)
	for n < len(g.waiting) && (g.max == 0 || inputs+len(g.waiting[n].in) <= g.max) {
		inputs += len(g.waiting[n].in)
		n++
	}
	batch := g.waiting[:n]
	g.waiting = g.waiting[n:]
	g.mu.Unlock()

	out := g.failed(inputs, errCommitAbandoned)
	defer g.handOn(batch, out)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	in := make([]In, 0, inputs)
	for _, c := range batch {
		in = append(in, c.in...)
	}
	copy(out, g.run(ctx, in))
}

// failed is n outcomes of err.
func (g *groupCommit[In, Out]) failed(n int, err error) []Out {
	out := make([]Out, n)
	for i := range out {
		out[i] = g.fail(err)
	}
	return out
}

// errCommitAbandoned is the outcome of a publish or save whose commit
// never returned (the store panicked): it may or may not have been made.
var errCommitAbandoned = fmt.Errorf("%w: the commit it shared did not return", store.ErrUnknown)

// handOn gives each call of batch its outcomes, and the lead to the
// first call waiting behind the batch, if any.
func (g *groupCommit[In, Out]) handOn(batch []*groupCall[In, Out], out []Out) {
	for i, c := range batch {
		c.out, out = out[:len(c.in):len(c.in)], out[len(c.in):]
		if i > 0 {
			c.wake <- false
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		g.busy = false
		return
	}
	g.waiting[0].wake <- true
}

// publishCommits is the group commit of a Service's publishes.
func publishCommits(st store.Store, timeout time.Duration) *groupCommit[store.NewEvent, store.Enqueued] {
	return &groupCommit[store.NewEvent, store.Enqueued]{
		run: func(ctx context.Context, events []store.NewEvent) []store.Enqueued {
			return store.EnqueueEach(ctx, st, events)
		},
		fail:    func(err error) store.Enqueued { return store.Enqueued{Err: err} },
		timeout: timeout,
		max:     maxPublishBatch,
	}
}

// groupedSaves is the store as the workers of a Service see it when the
// store is a store.BatchSaver: every Save and SaveBatch goes through the
// Service's group commit of saves. Each save's outcome is its own
// (BatchSaver), so fencing stays exact per stream however the workers'
// calls are grouped. A commit holds at most one call per worker (a
// worker makes one store call at a time), so it needs no other bound.
type groupedSaves struct {
	store.Store
	saves *groupCommit[store.LeaseSave, error]
}

// groupSaves returns st as the workers see it: grouped when it is a
// store.BatchSaver, st itself otherwise (a store without SaveBatch has
// no commit to share).
func groupSaves(st store.Store, timeout time.Duration) store.Store {
	if _, ok := st.(store.BatchSaver); !ok {
		return st
	}
	return groupedSaves{Store: st, saves: &groupCommit[store.LeaseSave, error]{
		run: func(ctx context.Context, saves []store.LeaseSave) []error {
			return store.SaveEach(ctx, st, saves)
		},
		fail:    func(err error) error { return err },
		timeout: timeout,
	}}
}

func (g groupedSaves) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	return g.saves.do(ctx, []store.LeaseSave{{Lease: l, Updates: ups}})[0]
}

func (g groupedSaves) SaveBatch(ctx context.Context, saves []store.LeaseSave) ([]error, error) {
	return g.saves.do(ctx, saves), nil
}

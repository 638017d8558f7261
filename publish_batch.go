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

// publishBatches is the group commit of publishes: the publishes that
// arrive while a commit is under way wait, and go to the store together
// in the next one (store.EnqueueEach: one transaction where the store is
// a store.BatchEnqueuer). Nothing waits for company: a publish that finds
// no commit under way commits at once, alone if it is alone. There is no
// goroutine: the first publish of each batch commits it (the leader),
// and hands the lead to the first that waits behind it.
type publishBatches struct {
	st      store.Store
	timeout time.Duration // bounds each commit

	mu      sync.Mutex
	waiting []*publishCall // in arrival order
	busy    bool           // a leader is committing
}

// publishCall is one publish waiting for its batch.
type publishCall struct {
	event  store.NewEvent
	result store.Enqueued
	wake   chan bool // true: lead the next batch; false: result is set
}

// enqueue stores event durably with the publishes waiting beside it and
// returns its own outcome.
func (b *publishBatches) enqueue(ctx context.Context, event store.NewEvent) store.Enqueued {
	if err := ctx.Err(); err != nil {
		return store.Enqueued{Err: err} // ended before it began: nothing stored
	}
	c := &publishCall{event: event, wake: make(chan bool, 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	// A follower waits whatever its ctx says: it may be handed the lead,
	// and a commit is bounded by the timeout.
	if !lead && !<-c.wake {
		return c.result
	}
	b.commit(ctx)
	return c.result
}

// commit commits the batch at the head of the queue (the leader's call is
// its first), hands each call its outcome, and hands the lead on: even
// when the store panics, so that no follower waits for ever.
func (b *publishBatches) commit(ctx context.Context) {
	b.mu.Lock()
	batch := b.waiting[:min(len(b.waiting), maxPublishBatch)]
	b.waiting = b.waiting[len(batch):]
	b.mu.Unlock()

	out := make([]store.Enqueued, len(batch))
	for i := range out {
		out[i].Err = errCommitAbandoned
	}
	defer b.handOn(batch, out)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
	defer cancel()
	events := make([]store.NewEvent, len(batch))
	for i, c := range batch {
		events[i] = c.event
	}
	copy(out, store.EnqueueEach(ctx, b.st, events))
}

// errCommitAbandoned is the outcome of a publish whose batch's commit
// never returned (the store panicked): it may or may not be stored.
var errCommitAbandoned = fmt.Errorf("%w: the commit of this publish's batch did not return", store.ErrUnknown)

// handOn gives each call of batch its outcome, and the lead to the first
// call waiting behind the batch, if any.
func (b *publishBatches) handOn(batch []*publishCall, out []store.Enqueued) {
	for i, c := range batch {
		c.result = out[i]
		if i > 0 {
			c.wake <- false
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.waiting) == 0 {
		b.busy = false
		return
	}
	b.waiting[0].wake <- true
}

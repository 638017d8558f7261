package courier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// gatedBatches is a BatchEnqueuer over memstore whose first batch waits
// at a gate, and which notes the size of every batch.
type gatedBatches struct {
	*memstore.Store
	gate  chan struct{}
	fail  error
	mu    sync.Mutex
	sizes []int
}

func (g *gatedBatches) EnqueueBatch(ctx context.Context, events []store.NewEvent) ([]store.Enqueued, error) {
	g.mu.Lock()
	first := len(g.sizes) == 0
	g.sizes = append(g.sizes, len(events))
	g.mu.Unlock()
	if first {
		<-g.gate
	}
	if g.fail != nil {
		return nil, g.fail
	}
	out := make([]store.Enqueued, len(events))
	for i, e := range events {
		rec, created, err := g.Enqueue(ctx, e.Stream, e.ID, e.Payload)
		out[i] = store.Enqueued{Record: rec, Created: created, Err: err}
	}
	return out, nil
}

// publishAll publishes ids one per goroutine once the first is at the
// gate, and returns each one's outcome once the gate opens.
func publishAll(t *testing.T, g *gatedBatches, ids []string) []store.Enqueued {
	b := &publishBatches{st: g, timeout: time.Minute}
	out := make([]store.Enqueued, len(ids))
	var wg sync.WaitGroup
	wg.Go(func() { out[0] = b.enqueue(t.Context(), store.NewEvent{Stream: "s", ID: ids[0]}) })
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.sizes) == 1 })
	for i := 1; i < len(ids); i++ {
		wg.Go(func() { out[i] = b.enqueue(t.Context(), store.NewEvent{Stream: "s", ID: ids[i]}) })
	}
	// Everyone else queues behind the commit at the gate.
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting) == len(ids)-1 })
	close(g.gate)
	wg.Wait()
	return out
}

// waitFor polls cond until it holds, failing t after a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
	}
}

// TestPublishesWaitingShareACommit: the publishes that arrive while a
// commit is under way go to the store together in the next one, and
// each gets its own outcome.
func TestPublishesWaitingShareACommit(t *testing.T) {
	g := &gatedBatches{Store: memstore.New(time.Now), gate: make(chan struct{})}
	ids := []string{"e0", "e1", "e2", "e3", "e4", "e5"}
	out := publishAll(t, g, ids)
	if !slices.Equal(g.sizes, []int{1, 5}) {
		t.Errorf("batches of %v; want the first alone, then the five that waited together", g.sizes)
	}
	var seqs []uint64
	for i, o := range out {
		if o.Err != nil || !o.Created || o.Record.ID != ids[i] {
			t.Errorf("publish %s: %+v; want it created", ids[i], o)
		}
		seqs = append(seqs, o.Record.Seq)
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("seqs %v; want 1 to 6, each once", seqs)
	}
}

// TestFailedCommitFailsItsPublishes: a commit that fails fails every
// publish in it, and a publish whose context ended first stores nothing.
func TestFailedCommitFailsItsPublishes(t *testing.T) {
	down := fmt.Errorf("%w: the disk is gone", store.ErrUnavailable)
	g := &gatedBatches{Store: memstore.New(time.Now), gate: make(chan struct{}), fail: down}
	for i, o := range publishAll(t, g, []string{"e0", "e1", "e2"}) {
		if !errors.Is(o.Err, store.ErrUnavailable) {
			t.Errorf("publish %d: %v; want the commit's error", i, o.Err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := &publishBatches{st: g, timeout: time.Minute}
	if o := b.enqueue(ctx, store.NewEvent{Stream: "s", ID: "late"}); !errors.Is(o.Err, context.Canceled) {
		t.Errorf("a publish whose context had ended: %v; want context.Canceled", o.Err)
	}
	if _, err := g.Get(t.Context(), "late"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the publish whose context had ended stored its event: %v", err)
	}
}

// panicky panics on its first batch.
type panicky struct {
	*memstore.Store
	calls int
}

func (p *panicky) EnqueueBatch(ctx context.Context, events []store.NewEvent) ([]store.Enqueued, error) {
	if p.calls++; p.calls == 1 {
		panic("the store broke")
	}
	return nil, errors.New("unreachable in this test")
}

// TestPanickingCommitLeavesNoPublishWaiting: a store that panics in a
// commit leaves the lead free for the next publish (net/http recovers a
// handler's panic, and the Service goes on serving).
func TestPanickingCommitLeavesNoPublishWaiting(t *testing.T) {
	b := &publishBatches{st: &panicky{Store: memstore.New(time.Now)}, timeout: time.Minute}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the store's panic did not reach the publish that led the commit")
			}
		}()
		b.enqueue(t.Context(), store.NewEvent{Stream: "s", ID: "e1"})
	}()
	b.mu.Lock()
	busy := b.busy
	b.mu.Unlock()
	if busy {
		t.Fatal("after the panic, the batches are still marked busy: every later publish would wait for ever")
	}
}

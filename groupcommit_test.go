package courier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// gate notes the size of every batch a test's store is given, and holds
// the first until the test closes it.
type gate struct {
	open  chan struct{}
	mu    sync.Mutex
	sizes []int
}

func newGate() gate { return gate{open: make(chan struct{})} }

// enter notes a batch of n, and waits at the gate if it is the first.
func (g *gate) enter(n int) {
	g.mu.Lock()
	first := len(g.sizes) == 0
	g.sizes = append(g.sizes, n)
	g.mu.Unlock()
	if first {
		<-g.open
	}
}

// gatedBatches is a BatchEnqueuer over memstore whose first batch waits
// at a gate.
type gatedBatches struct {
	*memstore.Store
	gate
	fail error
}

func (g *gatedBatches) EnqueueBatch(ctx context.Context, events []store.NewEvent) ([]store.Enqueued, error) {
	g.enter(len(events))
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
	b := publishCommits(g, time.Minute)
	out := make([]store.Enqueued, len(ids))
	var wg sync.WaitGroup
	wg.Go(func() { out[0] = b.do(t.Context(), []store.NewEvent{{Stream: "s", ID: ids[0]}})[0] })
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.sizes) == 1 })
	for i := 1; i < len(ids); i++ {
		wg.Go(func() { out[i] = b.do(t.Context(), []store.NewEvent{{Stream: "s", ID: ids[i]}})[0] })
	}
	// Everyone else queues behind the commit at the gate.
	waitFor(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.waiting) == len(ids)-1 })
	close(g.open)
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
	g := &gatedBatches{Store: memstore.New(time.Now), gate: newGate()}
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
	g := &gatedBatches{Store: memstore.New(time.Now), gate: newGate(), fail: down}
	for i, o := range publishAll(t, g, []string{"e0", "e1", "e2"}) {
		if !errors.Is(o.Err, store.ErrUnavailable) {
			t.Errorf("publish %d: %v; want the commit's error", i, o.Err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := publishCommits(g, time.Minute)
	if o := b.do(ctx, []store.NewEvent{{Stream: "s", ID: "late"}})[0]; !errors.Is(o.Err, context.Canceled) {
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
	b := publishCommits(&panicky{Store: memstore.New(time.Now)}, time.Minute)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the store's panic did not reach the publish that led the commit")
			}
		}()
		b.do(t.Context(), []store.NewEvent{{Stream: "s", ID: "e1"}})
	}()
	b.mu.Lock()
	busy := b.busy
	b.mu.Unlock()
	if busy {
		t.Fatal("after the panic, the batches are still marked busy: every later publish would wait for ever")
	}
}

// gatedSaves is a BatchSaver over memstore whose first batch waits at a
// gate.
type gatedSaves struct {
	*memstore.Store
	gate
}

func (g *gatedSaves) SaveBatch(ctx context.Context, saves []store.LeaseSave) ([]error, error) {
	g.enter(len(saves))
	out := make([]error, len(saves))
	for i, sv := range saves {
		out[i] = g.Save(ctx, sv.Lease, sv.Updates)
	}
	return out, nil
}

// TestWorkersSavesShareACommitFencedEach: saves that workers make while
// another worker's commit is under way go to the store together in the
// next one; a stale lease among them fails its own save only.
func TestWorkersSavesShareACommitFencedEach(t *testing.T) {
	ctx := t.Context()
	g := &gatedSaves{Store: memstore.New(time.Now), gate: newGate()}
	leases := map[string]store.Lease{}
	for _, stream := range []string{"a", "b", "c"} {
		if _, _, err := g.Enqueue(ctx, stream, stream+"1", nil); err != nil {
			t.Fatal(err)
		}
		l, err := g.Acquire(ctx, stream, "w/"+stream, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		leases[stream] = l
	}
	if err := g.Release(ctx, leases["b"]); err != nil { // b's lease is stale from now on
		t.Fatal(err)
	}
	grouped := groupSaves(g, time.Minute)
	firstAttempt := func(stream string) error {
		u := store.Update{ID: stream + "1", Delivery: store.Delivery{State: machine.Pending, Attempts: 1, NextAt: time.Now()}}
		return grouped.Save(ctx, leases[stream], []store.Update{u})
	}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	save := func(stream string) {
		err := firstAttempt(stream)
		mu.Lock()
		errs[stream] = err
		mu.Unlock()
	}
	wg.Go(func() { save("a") })
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.sizes) == 1 })
	wg.Go(func() { save("b") })
	wg.Go(func() { save("c") })
	saves := grouped.(groupedSaves).saves
	waitFor(t, func() bool { saves.mu.Lock(); defer saves.mu.Unlock(); return len(saves.waiting) == 2 })
	close(g.open)
	wg.Wait()
	if !slices.Equal(g.sizes, []int{1, 2}) {
		t.Errorf("batches of %v; want a's alone, then b's and c's together", g.sizes)
	}
	if errs["a"] != nil || errs["c"] != nil || !errors.Is(errs["b"], store.ErrStaleLease) {
		t.Errorf("outcomes a %v, b %v, c %v; want b's stale lease to fail b's save only", errs["a"], errs["b"], errs["c"])
	}
	for stream, want := range map[string]int{"a": 1, "b": 0, "c": 1} {
		r, err := g.Get(ctx, stream+"1")
		if err != nil || r.Attempts != want {
			t.Errorf("%s1 after the saves: %d attempts (%v); want %d", stream, r.Attempts, err, want)
		}
	}
}

// TestStoreWithoutSaveBatchIsNotGrouped: a store with no SaveBatch (no
// commit to share) is what the workers get, unwrapped.
func TestStoreWithoutSaveBatchIsNotGrouped(t *testing.T) {
	st := memstore.New(time.Now)
	if got := groupSaves(st, time.Minute); got != store.Store(st) {
		t.Errorf("groupSaves(memstore) = %T; want the memstore itself", got)
	}
}

package worker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
)

// batchStore is faultStore with a SaveBatch that makes each save through
// faultStore's Save (so the tests' faults apply), records the batches'
// sizes, and fails a whole call with failBatch.
type batchStore struct {
	*faultStore
	batches   []int
	failBatch error
}

func (b *batchStore) SaveBatch(ctx context.Context, saves []store.LeaseSave) ([]error, error) {
	b.batches = append(b.batches, len(saves))
	if b.failBatch != nil {
		return nil, b.failBatch
	}
	out := make([]error, len(saves))
	for i, sv := range saves {
		out[i] = b.faultStore.Save(ctx, sv.Lease, sv.Updates)
	}
	return out, nil
}

// newBatchEnv is newEnv over a batchStore, with three streams of two
// events each, each stream's first attempt handed out.
func newBatchEnv(t *testing.T) (*env, *batchStore, []worker.Send) {
	t.Helper()
	var bs *batchStore
	e := newEnv(t, func(c *worker.Config) {
		bs = &batchStore{faultStore: c.Store.(*faultStore)}
		c.Store = bs
	})
	for _, s := range []string{"a", "b", "c"} {
		e.enqueue(s, s+"1")
		e.enqueue(s, s+"2")
	}
	fx := e.advance()
	if len(fx.Sends) != 3 {
		t.Fatalf("want the first attempt of each of 3 streams, got %+v", fx.Sends)
	}
	if fmt.Sprint(bs.batches) != "[3]" {
		t.Fatalf("the claim of 3 streams saved their first batches as %v, want one SaveBatch of 3", bs.batches)
	}
	bs.batches = nil
	return e, bs, fx.Sends
}

func repliesTo(sends []worker.Send) []worker.Reply {
	out := make([]worker.Reply, len(sends))
	for i, x := range sends {
		out[i] = x.Reply(delivered())
	}
	return out
}

// Replies of several streams delivered together are persisted in one
// store call, and each stream's next attempt goes out after it.
func TestRepliesOfSeveralStreamsShareOneSave(t *testing.T) {
	e, bs, sends := newBatchEnv(t)
	saves := e.st.calls["Save"]
	fx := e.w.DeliverAll(e.ctx, e.now(), repliesTo(sends))
	if len(bs.batches) != 1 || bs.batches[0] != 3 {
		t.Fatalf("three streams' batches went to the store as %v, want one SaveBatch of 3", bs.batches)
	}
	if got := e.st.calls["Save"] - saves; got != 3 {
		t.Fatalf("the batch made %d saves, want 3", got)
	}
	if len(fx.Sends) != 3 {
		t.Fatalf("want each stream's second attempt, got %+v", fx.Sends)
	}
	for _, x := range fx.Sends {
		r := e.record(x.ID)
		if r.Attempts != 1 {
			t.Errorf("%s handed out with %d attempts persisted, want 1", x.ID, r.Attempts)
		}
		if first := e.record(x.Stream + "1"); first.State != machine.Delivered {
			t.Errorf("%s is %s, want delivered", first.ID, first.State)
		}
	}
}

// A stale lease in the middle of a batch loses its own stream only: the
// neighbours' batches are saved and their sends go out.
func TestStaleLeaseInABatchLosesItsStreamOnly(t *testing.T) {
	e, _, sends := newBatchEnv(t)
	l := store.Lease{Stream: "b", Owner: "w1", Token: sends[1].Token}
	if err := e.mem.Release(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	fx := e.w.DeliverAll(e.ctx, e.now(), repliesTo(sends))
	if len(fx.Sends) != 2 || fx.Sends[0].ID != "a2" || fx.Sends[1].ID != "c2" {
		t.Fatalf("want the second attempts of a and c only, got %+v", fx.Sends)
	}
	if e.w.Owns("b") || !e.w.Owns("a") || !e.w.Owns("c") {
		t.Fatalf("owns a=%v b=%v c=%v: want b lost, a and c kept", e.w.Owns("a"), e.w.Owns("b"), e.w.Owns("c"))
	}
	if r := e.record("b1"); r.State != machine.Pending {
		t.Fatalf("b1 is %s: the fenced-off save changed the store", r.State)
	}
}

// A batch call that fails hands nothing out: no stream's attempt is known
// to be durable.
func TestFailedBatchHandsNothingOut(t *testing.T) {
	e, bs, sends := newBatchEnv(t)
	bs.failBatch = fmt.Errorf("%w: connection reset", store.ErrUnknown)
	fx := e.w.DeliverAll(e.ctx, e.now(), repliesTo(sends))
	if len(fx.Sends)+len(fx.Probes) != 0 {
		t.Fatalf("a failed batch handed out %+v", fx)
	}
	if got := e.count(worker.StoreFailed); got != 3 {
		t.Fatalf("%d store failures reported, want one per stream of the batch", got)
	}
	for _, s := range e.w.Streams() {
		if s.Circuit != 0 {
			t.Errorf("stream %s kept its machine after a save of unknown outcome", s.Stream)
		}
	}
}

// Two replies of one stream in one call, and a duplicate: delivered
// replies join, so the stream's batches are saved in one call, in
// order, each checked against the one before it.
func TestDeliveredRepliesOfAStreamJoinOneSave(t *testing.T) {
	e, bs, sends := newBatchEnv(t)
	fx := e.w.DeliverAll(e.ctx, e.now(), repliesTo(sends[:1]))
	second := oneSend(t, fx, "a2", 1)
	bs.batches = nil
	// b's reply, a2's, a2's again (a duplicate: the machine ignores it),
	// then c's.
	rs := []worker.Reply{sends[1].Reply(delivered()), second.Reply(delivered()), second.Reply(delivered()), sends[2].Reply(delivered())}
	fx = e.w.DeliverAll(e.ctx, e.now(), rs)
	if fmt.Sprint(bs.batches) != "[3]" {
		t.Fatalf("batches %v, want [3]: b, a and c in one SaveBatch", bs.batches)
	}
	if r := e.record("a2"); r.State != machine.Delivered {
		t.Fatalf("a2 is %s, want delivered", r.State)
	}
	if len(fx.Sends) != 2 {
		t.Fatalf("want b2 and c2, got %+v", fx.Sends)
	}
	if e.count(worker.Faulted) != 0 {
		t.Fatalf("the duplicate reply faulted a machine")
	}
}

// A window's replies that come back together cost one Save call: each
// reply's batch waits behind the one before it, and the attempts they
// start go out once all are durable.
func TestWindowOfRepliesSharesOneSave(t *testing.T) {
	e, bs, fx := newWindowEnv(t, 4, 6)
	if len(fx.Sends) != 4 {
		t.Fatalf("want a1 to a4, got %+v", fx.Sends)
	}
	bs.batches = nil
	fx = e.w.DeliverAll(e.ctx, e.now(), repliesTo(fx.Sends))
	if fmt.Sprint(bs.batches) != "[4]" {
		t.Fatalf("batches %v, want one SaveBatch of the 4 replies' batches", bs.batches)
	}
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		if r := e.record(id); r.State != machine.Delivered {
			t.Errorf("%s is %s, want delivered", id, r.State)
		}
	}
	if len(fx.Sends) != 2 || fx.Sends[0].ID != "a5" || fx.Sends[1].ID != "a6" {
		t.Fatalf("want a5 and a6, got %+v", fx.Sends)
	}
	for _, x := range fx.Sends {
		if r := e.record(x.ID); r.Attempts != 1 {
			t.Errorf("%s handed out with %d attempts persisted, want 1", x.ID, r.Attempts)
		}
	}
}

// A failure behind a batch of its stream that waits does not join: it
// could trip the circuit while the batch's attempt is still to go out.
// The batch is saved first, and the failure waits for the next call.
func TestFailureBehindAWaitingBatchDoesNotJoin(t *testing.T) {
	e, bs, fx := newWindowEnv(t, 2, 3)
	bs.batches = nil
	failed := channel.Outcome{Result: machine.OutcomeFailed, Status: 503}
	fx = e.w.DeliverAll(e.ctx, e.now(), []worker.Reply{fx.Sends[0].Reply(delivered()), fx.Sends[1].Reply(failed)})
	if fmt.Sprint(bs.batches) != "[1]" {
		t.Fatalf("batches %v, want a1's alone, saved before the failure", bs.batches)
	}
	oneSend(t, fx, "a3", 1)
	if r := e.record("a2"); r.Last.Attempt != 0 {
		t.Fatalf("a2's failure was persisted in the call (%+v); want it held", r.Last)
	}
	if next := e.w.Next(); next.After(e.now()) {
		t.Fatalf("Next is %v with a reply held, want now (%v)", next, e.now())
	}
}

// Once a stream's batch fails, the batches that joined behind it are not
// acted on, even when their own Save went through: the machine that made
// them is gone.
func TestBatchesBehindAFailedSaveAreNotActedOn(t *testing.T) {
	e, bs, fx := newWindowEnv(t, 2, 4)
	bs.loseSaveReply = true
	fx = e.w.DeliverAll(e.ctx, e.now(), repliesTo(fx.Sends))
	if len(fx.Sends)+len(fx.Probes) != 0 {
		t.Fatalf("handed out %+v after the first batch's Save failed", fx)
	}
	if got := e.count(worker.StoreFailed); got != 1 {
		t.Fatalf("%d store failures reported, want 1", got)
	}
	if r := e.record("a2"); r.State != machine.Delivered {
		t.Fatalf("a2 is %s: the second batch's Save went through, want delivered", r.State)
	}
	persisted := 0
	for _, ev := range e.events {
		if ev.Kind == worker.Persisted && len(ev.Records) > 0 && ev.Records[0].ID == "a2" {
			persisted++
		}
	}
	if persisted != 1 {
		t.Fatalf("a2's batch was reported persisted %d times, want once: what the store made is made", persisted)
	}
}

// Once a stream's lease is stale, the stream is lost once, and nothing
// of its batches goes out.
func TestStaleLeaseLosesAStreamOnceWhateverJoined(t *testing.T) {
	e, _, fx := newWindowEnv(t, 2, 4)
	l := store.Lease{Stream: "a", Owner: "w1", Token: fx.Sends[0].Token}
	if err := e.mem.Release(e.ctx, l); err != nil {
		t.Fatal(err)
	}
	fx = e.w.DeliverAll(e.ctx, e.now(), repliesTo(fx.Sends))
	if len(fx.Sends)+len(fx.Probes) != 0 || e.w.Owns("a") {
		t.Fatalf("handed out %+v, owns a: %v; want nothing, a lost", fx, e.w.Owns("a"))
	}
	if got := e.count(worker.LeaseLost); got != 1 {
		t.Fatalf("the stream was lost %d times, want once", got)
	}
}

// newWindowEnv is newEnv over a batchStore with stream a independent, a
// window of window attempts, and events a1 to an, and the first
// Advance's effects.
func newWindowEnv(t *testing.T, window, n int) (*env, *batchStore, worker.Effects) {
	t.Helper()
	var bs *batchStore
	e := newEnv(t, func(c *worker.Config) {
		bs = &batchStore{faultStore: c.Store.(*faultStore)}
		c.Store = bs
		c.Policy = func(string) (machine.Config, error) {
			p := policy()
			p.Ordering, p.Window = machine.Independent, window
			return p, nil
		}
	})
	for i := range n {
		e.enqueue("a", fmt.Sprintf("a%d", i+1))
	}
	return e, bs, e.advance()
}

// A reply behind one that started an attempt of the same stream waits
// until the driver made that attempt: stepped in the same call, its
// failure would trip the circuit while the attempt is still to go out,
// and the driver would send it while the probe is out.
func TestReplyBehindAnAttemptOfItsStreamWaitsForTheNextCall(t *testing.T) {
	e, fx := newWindowTwoEnv(t)
	if len(fx.Sends) != 2 {
		t.Fatalf("want a1#1 and a2#1, got %+v", fx.Sends)
	}
	failed := channel.Outcome{Result: machine.OutcomeFailed, Status: 503}
	fx = e.w.DeliverAll(e.ctx, e.now(), []worker.Reply{fx.Sends[0].Reply(failed), fx.Sends[1].Reply(failed)})
	oneSend(t, fx, "a3", 1)
	if len(fx.Probes) != 0 {
		t.Fatalf("a probe handed out with a3's attempt: %+v", fx.Probes)
	}
	if next := e.w.Next(); next.After(e.now()) {
		t.Fatalf("Next is %v with a reply held, want now (%v)", next, e.now())
	}
	fx = e.advance()
	if len(fx.Sends) != 0 || len(fx.Probes) != 1 {
		t.Fatalf("the held failure must trip the circuit and probe, nothing else; got %+v", fx)
	}
	if s := e.w.Streams(); len(s) != 1 || s[0].Circuit != machine.Checking {
		t.Fatalf("streams %+v, want a checking", s)
	}
}

// A reply held when the worker stops is persisted before the leases
// are released: a stop costs no reply that came in.
func TestHeldReplyIsPersistedAtStop(t *testing.T) {
	e, fx := newWindowTwoEnv(t)
	failed := channel.Outcome{Result: machine.OutcomeFailed, Status: 503}
	e.w.DeliverAll(e.ctx, e.now(), []worker.Reply{fx.Sends[0].Reply(failed), fx.Sends[1].Reply(failed)})
	if r := e.record("a2"); r.State != machine.Pending {
		t.Fatalf("a2 is %s before the stop; want its failure held, not yet persisted", r.State)
	}
	e.w.Drain()
	e.w.Stop(e.ctx, e.now())
	if r := e.record("a2"); r.State == machine.Pending || r.Last.Attempt != 1 {
		t.Fatalf("a2 is %s with last outcome %+v after the stop; want its held failure persisted", r.State, r.Last)
	}
	if e.w.Owned() != 0 {
		t.Fatalf("the worker still owns %d streams after Stop", e.w.Owned())
	}
}

// newWindowTwoEnv is newEnv with stream a independent, a window of two
// and a breaker that opens at two failures, holding a1, a2 and a3, and
// the first Advance's effects: the attempts of a1 and a2.
func newWindowTwoEnv(t *testing.T) (*env, worker.Effects) {
	t.Helper()
	e := newEnv(t, func(c *worker.Config) {
		c.Policy = func(string) (machine.Config, error) {
			p := policy()
			p.Ordering, p.Window, p.BreakerThreshold = machine.Independent, 2, 2
			return p, nil
		}
	})
	for _, id := range []string{"a1", "a2", "a3"} {
		e.enqueue("a", id)
	}
	return e, e.advance()
}

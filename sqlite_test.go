// Tests the shell on real parts: a real SQLite file (sqlitestore), the
// real clock, two workers sharing it and one of them replaced mid-run by
// a new incarnation. Every published event reaches the deduplicating
// receiver and is applied in sequence order per stream, is delivered in
// the file, every lease is released at the end, and no goroutine is left.
package courier_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

// orderedReceiver applies each ID once and records, per stream, the
// sequences in the order it applied them.
type orderedReceiver struct {
	mu      sync.Mutex
	applied map[string]int
	seqs    map[string][]uint64
}

func (r *orderedReceiver) Send(_ context.Context, a channel.Attempt) channel.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied[a.ID] == 0 {
		r.seqs[a.Stream] = append(r.seqs[a.Stream], a.Seq)
	}
	r.applied[a.ID]++
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (r *orderedReceiver) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func TestShellOnSQLite(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "courier.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recv := &orderedReceiver{applied: map[string]int{}, seqs: map[string][]uint64{}}
	start := func(owner string) (*courier.Service, func()) {
		svc, err := courier.New(courier.Config{
			Worker: worker.Config{
				Owner: owner, Store: st, MaxStreams: 2, LeaseTTL: 3 * time.Second, Poll: 50 * time.Millisecond,
				Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
			},
			Channel: recv,
			Logger:  slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := svc.Run(runCtx); err != nil {
				t.Errorf("%s: %v", owner, err)
			}
		}()
		return svc, func() { cancel(); await(t, "Run after its context ended", done, runLimit) }
	}
	w1, stop1 := start("w1")
	w2, stop2 := start("w2")
	const streams, events = 4, 40
	var ids []string
	for i := range events {
		if i == events/2 {
			stop1() // w1 goes away gracefully; a new incarnation takes its place
			w1, stop1 = start("w1b")
		}
		for s := range streams {
			id := fmt.Sprintf("s%d-e%d", s, i)
			svc := w1
			if s%2 == 1 {
				svc = w2
			}
			if _, err := svc.Publish(ctx, fmt.Sprintf("s%d", s), id, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	waitDelivered(t, st, ids)
	stop1()
	stop2()

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, id := range ids {
		if recv.applied[id] < 1 {
			t.Errorf("%s delivered in the store but never applied", id)
		}
	}
	for s, seqs := range recv.seqs {
		if len(seqs) != events {
			t.Errorf("stream %s: %d applied, want %d", s, len(seqs), events)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Errorf("stream %s applied seq %d after %d", s, seqs[i], seqs[i-1])
			}
		}
	}
	for s := range streams {
		if _, err := st.Acquire(ctx, fmt.Sprintf("s%d", s), "after", time.Second); err != nil {
			t.Errorf("stream s%d still held after both shut down: %v", s, err)
		}
	}
	var _ store.Store = st
}

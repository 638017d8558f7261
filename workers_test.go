// Tests a Service with several workers on a real SQLite file: each
// stream keeps one owner at a time, so every event is applied once and
// in order, while the streams are spread over the workers.
package courier_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

func TestWorkersShareTheStreams(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "courier.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recv := &orderedReceiver{applied: map[string]int{}, seqs: map[string][]uint64{}}
	var mu sync.Mutex
	owners := map[string]bool{} // the workers granted a lease
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "p", Store: st, MaxStreams: 6, LeaseTTL: 5 * time.Second, Poll: time.Second,
			Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
			Observer: worker.ObserverFunc(func(e worker.Event) {
				if e.Kind == worker.LeaseGranted {
					mu.Lock()
					owners[e.Owner] = true
					mu.Unlock()
				}
			}),
		},
		Workers: 3,
		Channel: recv,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	const streams, events = 6, 20
	var ids []string
	for i := range events {
		for s := range streams {
			id := fmt.Sprintf("s%d-e%d", s, i)
			if _, err := svc.Publish(ctx, fmt.Sprintf("s%d", s), id, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := svc.Run(runCtx); err != nil {
			t.Error(err)
		}
	}()
	waitDelivered(t, st, ids)
	cancel()
	await(t, "Run after its context ended", done, runLimit)

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, id := range ids {
		if n := recv.applied[id]; n != 1 {
			t.Errorf("%s applied %d times; want once (the receiver does not deduplicate here)", id, n)
		}
	}
	for s, seqs := range recv.seqs {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Errorf("stream %s applied seq %d after %d", s, seqs[i], seqs[i-1])
			}
		}
	}
	// Each worker holds at most two of the six streams: more than one
	// worker must have taken some.
	mu.Lock()
	defer mu.Unlock()
	if len(owners) < 2 {
		t.Errorf("leases went to %v; want several of p/1, p/2, p/3", owners)
	}
	for o := range owners {
		if o != "p/1" && o != "p/2" && o != "p/3" {
			t.Errorf("a lease went to %q; want the workers named p/1 to p/3", o)
		}
	}
}

func TestWorkersConfigRefused(t *testing.T) {
	base := worker.Config{Owner: "p", Store: nil, MaxStreams: 2, LeaseTTL: time.Second, Poll: time.Second,
		Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil }}
	for _, n := range []int{-1, 3} {
		_, err := courier.New(courier.Config{Worker: base, Workers: n, Channel: &orderedReceiver{}})
		if !errors.Is(err, worker.ErrInvalidConfig) {
			t.Errorf("Workers %d with MaxStreams 2: err %v; want worker.ErrInvalidConfig", n, err)
		}
	}
}

func TestNegativeMaxBatchRefused(t *testing.T) {
	base := worker.Config{Owner: "p", Store: nil, MaxStreams: 2, LeaseTTL: time.Second, Poll: time.Second,
		Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil }}
	_, err := courier.New(courier.Config{Worker: base, MaxBatch: -1, Channel: &orderedReceiver{}})
	if !errors.Is(err, worker.ErrInvalidConfig) || !strings.Contains(err.Error(), "MaxBatch") {
		t.Errorf("MaxBatch -1: err %v; want worker.ErrInvalidConfig naming MaxBatch", err)
	}
}

// Command quickstart runs courier end to end in one process: an
// in-memory store, a receiver that fails once, a Service that delivers
// three events in order, retries the one that failed, and shuts down.
//
//	go run ./examples/quickstart
//
// For a real deployment, swap memstore for a durable store and the
// in-process receiver for the HTTP webhook channel; nothing else changes.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// receiver stands in for the downstream system: it applies each event
// once (deduplicating by ID, as a real receiver must) and answers 503 to
// the first attempt of "order-2".
type receiver struct {
	mu      sync.Mutex
	out     io.Writer
	applied map[string]bool
}

func (r *receiver) Send(_ context.Context, a channel.Attempt) channel.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.ID == "order-2" && a.Attempt == 1 {
		fmt.Fprintf(r.out, "receiver: %s attempt %d -> 503\n", a.ID, a.Attempt)
		return channel.Outcome{Result: machine.OutcomeFailed, Status: 503, Detail: "try again later"}
	}
	if !r.applied[a.ID] {
		r.applied[a.ID] = true
		fmt.Fprintf(r.out, "receiver: %s attempt %d -> applied seq %d: %s\n", a.ID, a.Attempt, a.Seq, a.Payload)
	}
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (r *receiver) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func run(ctx context.Context, out io.Writer) error {
	st := memstore.New(time.Now)
	policy := machine.DefaultConfig() // strict order, 8 attempts, a day of age
	policy.BaseBackoff = 100 * time.Millisecond
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner:      "quickstart",
			Store:      st,
			Policy:     func(stream string) (machine.Config, error) { return policy, nil },
			MaxStreams: 16,
			LeaseTTL:   30 * time.Second,
			Poll:       time.Second,
		},
		Channel: &receiver{out: out, applied: map[string]bool{}},
		Logger:  slog.New(slog.DiscardHandler), // slog.Default() to see what it does
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- svc.Run(runCtx) }()

	ids := []string{"order-1", "order-2", "order-3"}
	for _, id := range ids {
		// Publish returns once the event is durable: from here on it is
		// delivered or kept as a dead letter, whatever crashes.
		if _, err := svc.Publish(ctx, "orders", id, []byte(`{"order":"`+id+`"}`)); err != nil {
			stop()
			return err
		}
	}
	var settled []store.Record
	for _, id := range ids {
		r, err := waitSettled(ctx, st, id)
		if err != nil {
			stop()
			return err
		}
		settled = append(settled, r)
	}
	stop() // graceful: in-flight attempts finish, leases are released
	if err := <-stopped; err != nil {
		return err
	}
	for _, r := range settled {
		fmt.Fprintf(out, "store: %s %s after %d attempts (last status %d)\n", r.ID, r.State, r.Attempts, r.Last.Status)
	}
	return nil
}

// waitSettled polls the store until the event is delivered or dead.
func waitSettled(ctx context.Context, st store.Store, id string) (store.Record, error) {
	for {
		r, err := st.Get(ctx, id)
		if err != nil {
			return r, err
		}
		if r.State.Terminal() {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

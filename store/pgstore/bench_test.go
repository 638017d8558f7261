package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/storetest"
)

// BenchmarkStore measures enqueues and full delivery cycles per second on
// the real PostgreSQL with 1, 4 and 16 streams (see storetest.Bench).
func BenchmarkStore(b *testing.B) {
	server(b)
	storetest.Bench(b, func(b *testing.B) store.Store { return open(b, nil) })
}

// BenchmarkClaim measures ClaimDue among 1,000 and 10,000 due streams on
// the real PostgreSQL (see storetest.BenchClaim).
func BenchmarkClaim(b *testing.B) {
	server(b)
	storetest.BenchClaim(b, func(b *testing.B) store.Store { return open(b, nil) })
}

// BenchmarkSaveBatch measures one delivery saved on each of 1, 8 and 64
// streams, with one Save each and with one SaveBatch, on the real
// PostgreSQL (see storetest.BenchSaveBatch).
func BenchmarkSaveBatch(b *testing.B) {
	server(b)
	storetest.BenchSaveBatch(b, func(b *testing.B) store.Store { return open(b, nil) })
}

// BenchmarkVersusRiver runs, in one benchmark and on the same PostgreSQL,
// b.N full courier delivery cycles (storetest.Cycles, one worker per
// stream) and River (v0.51.2) inserting b.N no-op jobs one by one from as
// many producers and working them with as many workers, and reports both
// rates and courier's rate over River's (courier/river above 1: courier
// is faster).
func BenchmarkVersusRiver(b *testing.B) {
	conn := server(b)
	for _, streams := range storetest.BenchStreams {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			s := open(b, nil)
			ctx := b.Context()
			b.ResetTimer()
			start := time.Now()
			fanOut(b, streams, func(i, n int) error { return storetest.Cycles(ctx, s, fmt.Sprintf("s%02d", i), n) })
			ours := time.Since(start)
			theirs := riverRun(b, conn, streams)
			b.ReportMetric(float64(b.N)/ours.Seconds(), "courier-cycles/s")
			b.ReportMetric(float64(b.N)/theirs.Seconds(), "river-jobs/s")
			b.ReportMetric(theirs.Seconds()/ours.Seconds(), "courier/river")
		})
	}
}

// fanOut splits b.N over k goroutines and fails b on the first error.
func fanOut(b *testing.B, k int, work func(i, n int) error) {
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		n := b.N / k
		if i < b.N%k {
			n++
		}
		wg.Go(func() { errs[i] = work(i, n) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "courier_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// riverRun migrates River into a schema of its own, inserts b.N no-op
// jobs from k producers (one Insert each, as courier enqueues one event
// each) while a client with k workers works them, and returns the time
// from the first insert to the last completion.
func riverRun(b *testing.B, conn string, k int) time.Duration {
	ctx := b.Context()
	client := newRiver(b, conn, k)
	done, cancel := client.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer client.Stop(context.WithoutCancel(ctx))
	start := time.Now()
	fanOut(b, k, func(_, n int) error {
		for range n {
			if _, err := client.Insert(ctx, noopArgs{}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	for range b.N {
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatal("River stopped completing jobs")
		}
	}
	return time.Since(start)
}

// newRiver migrates River into a schema of its own and returns a client
// with k workers of no-op jobs, at River's lowest fetch latency (its
// defaults are 100ms and 1s), so that it is not measured waiting for its
// own timers. It is not started.
func newRiver(b *testing.B, conn string, k int) *river.Client[pgx.Tx] {
	ctx := b.Context()
	schema := freshSchema(b, conn)
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	driver := riverpgxv5.New(pool)
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatal(err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		Schema: schema, Workers: workers,
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: k}},
		FetchCooldown: river.FetchCooldownMin, FetchPollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	return client
}

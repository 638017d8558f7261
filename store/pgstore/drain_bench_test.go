package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

// BenchmarkDrain measures the whole runtime where users feel it: b.N
// events already in PostgreSQL, spread over S streams, drained by a
// courier.Service (claim, rebuild, persist each attempt, send, persist
// each outcome) with 1 and 4 workers, and by River working b.N no-op jobs
// inserted beforehand with S workers, in one run on the same database.
// The channel answers at once, so the figure is the store's and the
// runtime's. Each reports events (or jobs) per second; compare with
// benchstat, or run with -benchtime=5000x -count=5 for the shape.
// courier's runs also report the statements (BEGIN and COMMIT
// included), the round trips that carried them, and the transactions the
// store sent per event while draining.
func BenchmarkDrain(b *testing.B) {
	conn := server(b)
	for _, streams := range []int{1, 8, 64} {
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("streams=%d/courier/workers=%d", streams, workers), func(b *testing.B) {
				drainCourier(b, streams, workers)
			})
		}
		b.Run(fmt.Sprintf("streams=%d/river", streams), func(b *testing.B) { drainRiver(b, conn, streams) })
	}
}

// instant answers every attempt and probe at once, delivered.
type instant struct{}

func (instant) Send(context.Context, channel.Attempt) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (instant) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func drainCourier(b *testing.B, streams, workers int) {
	ctx := b.Context()
	conn := server(b)
	var sent counter
	s, err := Open(ctx, conn, Options{Schema: freshSchema(b, conn), MaxConns: 8, Tracer: &sent})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	fanOut(b, streams, func(i, n int) error {
		for j := range n {
			if _, _, err := s.Enqueue(ctx, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d-%d", i, j), []byte(`{}`)); err != nil {
				return err
			}
		}
		return nil
	})
	var delivered atomic.Int64
	done := make(chan struct{})
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "bench", Store: s, MaxStreams: 64, LeaseTTL: time.Minute, Poll: 50 * time.Millisecond,
			Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
			Observer: worker.ObserverFunc(func(e worker.Event) {
				if e.Kind != worker.Persisted {
					return
				}
				for _, r := range e.Records {
					if r.State == machine.Delivered && delivered.Add(1) == int64(b.N) {
						close(done)
					}
				}
			}),
		},
		Workers:     workers,
		Channel:     instant{},
		MaxInFlight: 256,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	sent.statements.Store(0)
	sent.roundTrips.Store(0)
	sent.transactions.Store(0)
	b.ResetTimer()
	start := time.Now()
	go func() { ran <- svc.Run(runCtx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("delivered %d of %d in 10 minutes", delivered.Load(), b.N)
	}
	elapsed := time.Since(start)
	statements, roundTrips, transactions := sent.statements.Load(), sent.roundTrips.Load(), sent.transactions.Load()
	b.StopTimer()
	stop()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(statements)/float64(b.N), "stmts/event")
	b.ReportMetric(float64(roundTrips)/float64(b.N), "trips/event")
	b.ReportMetric(float64(transactions)/float64(b.N), "xacts/event")
}

// counter is a pgx tracer that counts the statements a store sends, the
// round trips that carry them (a query alone, or a batch: pgstore sends a
// transaction's BEGIN and its writes with the query or COMMIT that
// follows them), and the transactions among them by their BEGIN.
type counter struct {
	statements, roundTrips, transactions atomic.Int64
}

func (c *counter) statement(sql string) {
	c.statements.Add(1)
	if len(sql) >= 5 && strings.EqualFold(sql[:5], "begin") {
		c.transactions.Add(1)
	}
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.roundTrips.Add(1)
	c.statement(data.SQL)
	return ctx
}

func (*counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.roundTrips.Add(1)
	return ctx
}

func (c *counter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.statement(data.SQL)
}

func (*counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// drainRiver inserts b.N no-op jobs, untimed, then times a River client
// with k workers working them all.
func drainRiver(b *testing.B, conn string, k int) {
	ctx := b.Context()
	client := newRiver(b, conn, k)
	fanOut(b, k, func(_, n int) error {
		for range n {
			if _, err := client.Insert(ctx, noopArgs{}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	completed, cancel := client.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer client.Stop(context.WithoutCancel(ctx))
	for range b.N {
		select {
		case <-completed:
		case <-time.After(time.Minute):
			b.Fatal("River stopped completing jobs")
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

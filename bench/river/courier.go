package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/pgstore"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

// instant is the no-op channel: every attempt and probe is delivered at
// once, so the figures are the store's and the runtime's.
type instant struct{}

func (instant) Send(context.Context, channel.Attempt) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (instant) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

// Workers per Service, as courier serve chooses them when its config
// leaves workers out.
const (
	pgWorkers     = 4
	sqliteWorkers = 1
)

var owners atomic.Int64

// policy is every stream's machine.Config: strict order, or independent
// with -window.
var policy = machine.DefaultConfig()

// newService builds a Service as courier serve does (its MaxStreams,
// LeaseTTL and Poll defaults, and policy), counting into delivered
// each record persisted as delivered.
func newService(st store.Store, workers int, delivered *atomic.Int64) (*courier.Service, error) {
	return courier.New(courier.Config{
		Worker: worker.Config{
			Owner:      fmt.Sprintf("riverbench/%d/%d", os.Getpid(), owners.Add(1)),
			Store:      st,
			Policy:     func(string) (machine.Config, error) { return policy, nil },
			MaxStreams: 256, LeaseTTL: 30 * time.Second, Poll: time.Second,
			Observer: worker.ObserverFunc(func(e worker.Event) {
				if e.Kind != worker.Persisted {
					return
				}
				for _, r := range e.Records {
					if r.State == machine.Delivered {
						delivered.Add(1)
					}
				}
			}),
		},
		Workers: workers,
		Channel: instant{},
		Logger:  slog.New(slog.DiscardHandler),
	})
}

// backlog publishes n events over streams through a Service that never
// runs, from 16 producers at once (so that the publishes share commits
// as they would under load), as a process that stopped would leave them.
func backlog(ctx context.Context, st store.Store, workers, streams, n int) error {
	var unused atomic.Int64
	svc, err := newService(st, workers, &unused)
	if err != nil {
		return err
	}
	const producers = 16
	return split(producers, func(g int) error {
		for i := g; i < n; i += producers {
			if _, err := svc.Publish(ctx, fmt.Sprintf("s%02d", i%streams), fmt.Sprintf("e%d", i), []byte(`{}`)); err != nil {
				return err
			}
		}
		return nil
	})
}

// drain runs a Service over st until want events are delivered and
// returns the rate, timed from Run to the last delivery.
func drain(ctx context.Context, o options, st store.Store, workers int, want int64) (result, error) {
	var delivered atomic.Int64
	svc, err := newService(st, workers, &delivered)
	if err != nil {
		return result{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	start := time.Now()
	go func() { ran <- svc.Run(runCtx) }()
	err = waitFor(ctx, delivered.Load, want, o.timeout)
	elapsed := time.Since(start)
	stop()
	if runErr := <-ran; err == nil {
		err = runErr
	}
	return result{rate: float64(want) / elapsed.Seconds(), delivered: delivered.Load(), xacts: math.NaN()}, err
}

// courierDrainPG stores o.events over streams in a fresh schema, then
// drains them with a fresh Service and store (its own pool).
func courierDrainPG(ctx context.Context, o options, streams int) (result, error) {
	schema := freshSchema()
	defer dropSchema(context.WithoutCancel(ctx), o.postgres, schema)
	st, err := pgstore.Open(ctx, o.postgres, pgstore.Options{Schema: schema, MaxConns: poolSize})
	if err != nil {
		return result{}, err
	}
	err = backlog(ctx, st, pgWorkers, streams, o.events)
	st.Close()
	if err != nil {
		return result{}, err
	}
	return measured(ctx, o.postgres, func() (result, error) {
		st, err := pgstore.Open(ctx, o.postgres, pgstore.Options{Schema: schema, MaxConns: poolSize})
		if err != nil {
			return result{}, err
		}
		defer st.Close()
		return drain(ctx, o, st, pgWorkers, int64(o.events))
	})
}

// courierSteadyPG runs a Service while producers publish to a stream
// each, as fast as their publishes return, for o.steady, and returns the
// events delivered per second meanwhile.
func courierSteadyPG(ctx context.Context, o options, producers int) (result, error) {
	schema := freshSchema()
	defer dropSchema(context.WithoutCancel(ctx), o.postgres, schema)
	st, err := pgstore.Open(ctx, o.postgres, pgstore.Options{Schema: schema, MaxConns: poolSize})
	if err != nil {
		return result{}, err
	}
	st.Close() // the schema and its tables exist; the measured phase opens its own pool
	return measured(ctx, o.postgres, func() (result, error) { return courierSteadyRun(ctx, o, schema, producers) })
}

// courierSteadyRun is courierSteadyPG's measured phase, with its own
// pool, traced and profiled when o asks.
func courierSteadyRun(ctx context.Context, o options, schema string, producers int) (result, error) {
	var trace *statements
	opts := pgstore.Options{Schema: schema, MaxConns: poolSize}
	if o.profile {
		trace = &statements{}
		opts.Tracer = trace
	}
	st, err := pgstore.Open(ctx, o.postgres, opts)
	if err != nil {
		return result{}, err
	}
	defer st.Close()
	var delivered atomic.Int64
	svc, err := newService(st, pgWorkers, &delivered)
	if err != nil {
		return result{}, err
	}
	if o.cpu != "" {
		stopProfile, err := startCPUProfile(o.cpu)
		if err != nil {
			return result{}, err
		}
		defer stopProfile()
	}
	cpu := cpuTime()
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(runCtx) }()
	n, published := steady(ctx, o.steady, producers, func(ctx context.Context, p, i int) error {
		_, err := svc.Publish(ctx, fmt.Sprintf("s%02d", p), fmt.Sprintf("p%d-%d", p, i), []byte(`{}`))
		return err
	}, delivered.Load)
	stop()
	err = <-ran
	if trace != nil {
		trace.report(os.Stdout, o.steady, delivered.Load(), cpuTime()-cpu)
	}
	return result{rate: float64(n) / o.steady.Seconds(), published: float64(published) / o.steady.Seconds(), delivered: delivered.Load()}, err
}

// steady runs producers that call publish in a loop for d and returns
// how many events were delivered (by the count deliveredNow) and
// published within d.
func steady(ctx context.Context, d time.Duration, producers int, publish func(ctx context.Context, p, i int) error, deliveredNow func() int64) (delivered, published int64) {
	pubCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := deliveredNow()
	done := make(chan int64)
	for p := range producers {
		go func() {
			var ok int64
			for i := 0; pubCtx.Err() == nil; i++ {
				if publish(pubCtx, p, i) == nil { // an error is the deadline's
					ok++
				}
			}
			done <- ok
		}()
	}
	<-pubCtx.Done()
	delivered = deliveredNow() - start
	for range producers {
		published += <-done
	}
	return delivered, published
}

// courierDrainSQLite is courierDrainPG on a fresh SQLite file, with the
// one worker courier serve runs on SQLite.
func courierDrainSQLite(ctx context.Context, o options, streams int) (result, error) {
	dir, err := os.MkdirTemp("", "riverbench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "courier.db")
	st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		return result{}, err
	}
	err = backlog(ctx, st, sqliteWorkers, streams, o.events)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return result{}, err
	}
	st, err = sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		return result{}, err
	}
	defer st.Close()
	return drain(ctx, o, st, sqliteWorkers, int64(o.events))
}

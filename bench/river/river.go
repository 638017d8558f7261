package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

type noopArgs struct{}

func (noopArgs) Kind() string { return "riverbench_noop" }

// noopWorker is River's no-op consumer, as instant is courier's.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// openPool opens a pool of poolSize connections, the same as courier's.
func openPool(ctx context.Context, conn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = poolSize
	return pgxpool.NewWithConfig(ctx, cfg)
}

// riverSchema creates a fresh schema and migrates River's tables into it.
func riverSchema(ctx context.Context, conn string) (string, error) {
	pool, err := openPool(ctx, conn)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	schema := freshSchema()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		return schema, err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return schema, err
}

// newRiver returns a River client in schema with workers no-op workers in
// one queue, not started. Its fetch timers are at their lowest (River's
// defaults, 100ms and 1s, would measure its waits, not its work).
func newRiver(pool *pgxpool.Pool, schema string, workers int) (*river.Client[pgx.Tx], error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, noopWorker{})
	return river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            schema,
		Workers:           ws,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}},
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: 10 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
	})
}

// openRiver opens a pool of its own and a River client on it, as
// newRiver makes it; closePool closes the pool once the client is done.
func openRiver(ctx context.Context, conn, schema string, workers int) (client *river.Client[pgx.Tx], closePool func(), err error) {
	pool, err := openPool(ctx, conn)
	if err != nil {
		return nil, nil, err
	}
	client, err = newRiver(pool, schema, workers)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return client, pool.Close, nil
}

// riverDrain inserts o.events jobs (InsertMany, 1,000 a call), then
// times a fresh client with as many workers as courier has streams
// working them all: River runs at most that many jobs at once, as
// courier's strict streams send one event each at a time.
func riverDrain(ctx context.Context, o options, streams int) (result, error) {
	schema, err := riverSchema(ctx, o.postgres)
	defer dropSchema(context.WithoutCancel(ctx), o.postgres, schema)
	if err != nil {
		return result{}, err
	}
	if err := riverInsert(ctx, o.postgres, schema, o.events); err != nil {
		return result{}, err
	}
	return measured(ctx, o.postgres, func() (result, error) {
		client, closePool, err := openRiver(ctx, o.postgres, schema, streams)
		if err != nil {
			return result{}, err
		}
		defer closePool()
		completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: o.events})
		defer cancel()
		start := time.Now()
		if err := client.Start(ctx); err != nil {
			return result{}, err
		}
		defer client.Stop(context.WithoutCancel(ctx))
		for n := range o.events {
			select {
			case <-completed:
			case <-time.After(o.timeout):
				return result{}, fmt.Errorf("only %d of %d River jobs completed in %v", n, o.events, o.timeout)
			}
		}
		return result{rate: float64(o.events) / time.Since(start).Seconds(), delivered: int64(o.events)}, nil
	})
}

// riverInsert stores n no-op jobs with a pool of its own, closed after.
func riverInsert(ctx context.Context, conn, schema string, n int) error {
	client, closePool, err := openRiver(ctx, conn, schema, 1)
	if err != nil {
		return err
	}
	defer closePool()
	for done := 0; done < n; {
		batch := make([]river.InsertManyParams, min(1000, n-done))
		for i := range batch {
			batch[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return err
		}
		done += len(batch)
	}
	return nil
}

// riverSteady is courierSteadyPG for River: producers insert a job each
// (client.Insert) as fast as the inserts return, for o.steady, while a
// client with as many workers as producers works them.
func riverSteady(ctx context.Context, o options, producers int) (result, error) {
	schema, err := riverSchema(ctx, o.postgres)
	defer dropSchema(context.WithoutCancel(ctx), o.postgres, schema)
	if err != nil {
		return result{}, err
	}
	return measured(ctx, o.postgres, func() (result, error) {
		client, closePool, err := openRiver(ctx, o.postgres, schema, producers)
		if err != nil {
			return result{}, err
		}
		defer closePool()
		completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: 1 << 20})
		defer cancel()
		if err := client.Start(ctx); err != nil {
			return result{}, err
		}
		var total int64
		count := func() int64 {
			for {
				select {
				case _, ok := <-completed:
					if !ok { // closed by Stop
						return total
					}
					total++
				default:
					return total
				}
			}
		}
		n, published := steady(ctx, o.steady, producers, func(ctx context.Context, _, _ int) error {
			_, err := client.Insert(ctx, noopArgs{}, nil)
			return err
		}, count)
		err = client.Stop(context.WithoutCancel(ctx))
		return result{rate: float64(n) / o.steady.Seconds(), published: float64(published) / o.steady.Seconds(), delivered: count()}, err
	})
}

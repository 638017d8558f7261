package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// result is the figures of one run.
type result struct {
	published     time.Duration // first publish to the last one answered
	elapsed       time.Duration // first publish to the last event applied
	rate          float64       // events/s over elapsed
	cpuMs         float64       // CPU of all processes per 1000 events, in ms
	xacts         int64         // PostgreSQL transactions in the run; 0 on SQLite
	xactsPerEvent float64
}

// runOnce runs one variant on a fresh store and a fresh receiver.
func runOnce(o options, v variant) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "servebench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	recv, err := startReceiver(o.events)
	if err != nil {
		return result{}, err
	}
	defer recv.close()
	store, dropSchema := storeConfig(o, dir)
	defer dropSchema()
	procs, err := startAll(ctx, o, v, dir, store, recv.url)
	if err != nil {
		return result{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			stopAll(procs)
		}
	}()

	xactsBefore, err := transactions(ctx, o)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := publish(ctx, o, procs); err != nil {
		return result{}, err
	}
	res := result{published: time.Since(start)}
	select {
	case <-recv.done:
	case <-ctx.Done():
		return result{}, fmt.Errorf("the receiver applied %d of %d events before the timeout", recv.applied.Load(), o.events)
	}
	res.elapsed = time.Since(start)
	res.rate = float64(o.events) / res.elapsed.Seconds()
	res.cpuMs = 1000 * stopAll(procs).Seconds() * 1000 / float64(o.events)
	stopped = true
	if o.postgres != "" {
		time.Sleep(1100 * time.Millisecond) // PostgreSQL flushes its counters at most once a second
		xacts, err := transactions(ctx, o)
		if err != nil {
			return result{}, err
		}
		res.xacts = xacts - xactsBefore
		res.xactsPerEvent = float64(res.xacts) / float64(o.events)
	}
	return res, nil
}

// startAll starts v.processes serve processes, each in a directory of its
// own under dir, one after the other; on an error it stops those started.
func startAll(ctx context.Context, o options, v variant, dir, store, recvURL string) ([]*process, error) {
	var procs []*process
	for k := range v.processes {
		p, err := startServe(ctx, o, v.courier, filepath.Join(dir, strconv.Itoa(k)), store, recvURL)
		if err != nil {
			stopAll(procs)
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// stopAll stops the processes and returns the CPU time they used in all.
func stopAll(procs []*process) time.Duration {
	var cpu time.Duration
	for _, p := range procs {
		cpu += p.stop()
	}
	return cpu
}

// storeConfig returns the config lines of the store, and what removes it:
// a SQLite file in dir (removed with dir), or a fresh PostgreSQL schema.
func storeConfig(o options, dir string) (string, func()) {
	if o.postgres == "" {
		return fmt.Sprintf("database = %q\n", filepath.Join(dir, "courier.db")), func() {}
	}
	schema := fmt.Sprintf("servebench_%d_%08x", os.Getpid(), rand.Uint32())
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, o.postgres)
		if err != nil {
			fmt.Fprintln(os.Stderr, "servebench: dropping the schema:", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "servebench: dropping the schema:", err)
		}
	}
	return fmt.Sprintf("postgres = %q\npostgres_schema = %q\n", o.postgres, schema), drop
}

// transactions is how many transactions the PostgreSQL database has
// committed or rolled back so far (pg_stat_database); 0 on SQLite.
func transactions(ctx context.Context, o options) (int64, error) {
	if o.postgres == "" {
		return 0, nil
	}
	c, err := pgx.Connect(ctx, o.postgres)
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	// The statistics are sent at each transaction's end, but read from a
	// snapshot: clear it so the figure is current.
	if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return 0, err
	}
	var n int64
	err = c.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
	return n, err
}

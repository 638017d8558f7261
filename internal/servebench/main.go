// Command servebench measures `courier serve` end to end, as a team
// running it would feel it: a real courier binary, a real receiver (the
// receiver kit, verifying every signature, on loopback), events published
// through the HTTP API by concurrent producers, and the time until the
// receiver has applied every one. It prints one line of figures.
//
//	go build -o /tmp/courier ./cmd/courier
//	go run ./internal/servebench -courier /tmp/courier -streams 8 -events 5000
//	go run ./internal/servebench -courier /tmp/courier -postgres 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// The binary is a flag so that two builds (before and after a change)
// can be timed side by side. The store starts empty each run: a fresh
// SQLite file, or a fresh PostgreSQL schema dropped at the end.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/courierlab/courier/webhook/receiver"
)

const (
	token  = "servebench-token-0123456789"
	secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

type options struct {
	courier   string
	streams   int
	events    int
	producers int
	postgres  string
	workers   int
	timeout   time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.courier, "courier", "", "the courier binary to run (required)")
	flag.IntVar(&o.streams, "streams", 8, "streams, each to the same receiver")
	flag.IntVar(&o.events, "events", 5000, "events published in all")
	flag.IntVar(&o.producers, "producers", 16, "concurrent API clients publishing")
	flag.StringVar(&o.postgres, "postgres", "", "a PostgreSQL URL: use it (a fresh schema) instead of a SQLite file")
	flag.IntVar(&o.workers, "workers", 0, "the config's workers (0: leave it out, the binary's default)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if o.courier == "" || o.streams < 1 || o.events < 1 || o.producers < 1 {
		fmt.Fprintln(os.Stderr, "servebench: -courier is required; -streams, -events and -producers must be positive")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "servebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	recv, err := startReceiver(o.events)
	if err != nil {
		return err
	}
	defer recv.close()
	store, dropSchema, err := storeConfig(ctx, o, dir)
	if err != nil {
		return err
	}
	defer dropSchema()
	api, stop, err := startServe(ctx, o, dir, store, recv.url)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	xactsBefore, err := transactions(ctx, o)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := publish(ctx, o, api); err != nil {
		return err
	}
	published := time.Since(start)
	select {
	case <-recv.done:
	case <-ctx.Done():
		return fmt.Errorf("the receiver applied %d of %d events before the timeout", recv.applied.Load(), o.events)
	}
	elapsed := time.Since(start)
	cpu := stop()
	stopped = true
	time.Sleep(1100 * time.Millisecond) // PostgreSQL flushes its counters at most once a second
	xacts, err := transactions(ctx, o)
	if err != nil {
		return err
	}
	if o.postgres != "" {
		// Counted over the whole database, shutdown included: give it
		// a database of its own for a clean figure.
		fmt.Printf("servebench: %.2f PostgreSQL transactions per event (%d in all)\n", float64(xacts-xactsBefore)/float64(o.events), xacts-xactsBefore)
	}
	fmt.Printf("servebench: %d events over %d streams (%s, workers %s): published in %.2fs, all applied in %.2fs: %.0f events/s end to end; courier used %.0f ms of CPU per 1000 events\n",
		o.events, o.streams, storeName(o), workersName(o), published.Seconds(), elapsed.Seconds(), float64(o.events)/elapsed.Seconds(),
		1000*cpu.Seconds()*1000/float64(o.events))
	return nil
}

func storeName(o options) string {
	if o.postgres != "" {
		return "PostgreSQL"
	}
	return "SQLite"
}

func workersName(o options) string {
	if o.workers == 0 {
		return "default"
	}
	return fmt.Sprint(o.workers)
}

// benchReceiver applies each event ID once and closes done when all
// events were applied.
type benchReceiver struct {
	srv     *http.Server
	url     string
	applied atomic.Int64
	done    chan struct{}
}

func startReceiver(events int) (*benchReceiver, error) {
	r := &benchReceiver{done: make(chan struct{})}
	var once sync.Once
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if r.applied.Add(1) == int64(events) {
			once.Do(func() { close(r.done) })
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: 24 * time.Hour, Store: receiver.NewMemory()}, app)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	r.url = "http://" + ln.Addr().String() + "/hooks"
	return r, nil
}

func (r *benchReceiver) close() { r.srv.Close() }

// storeConfig returns the config lines of the store, and what removes it.
func storeConfig(ctx context.Context, o options, dir string) (string, func(), error) {
	if o.postgres == "" {
		return fmt.Sprintf("database = %q\n", filepath.Join(dir, "courier.db")), func() {}, nil
	}
	schema := fmt.Sprintf("servebench_%d_%08x", os.Getpid(), rand.Uint32())
	drop := func() {
		c, err := pgx.Connect(context.Background(), o.postgres)
		if err != nil {
			fmt.Fprintln(os.Stderr, "servebench: dropping the schema:", err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "servebench: dropping the schema:", err)
		}
	}
	return fmt.Sprintf("postgres = %q\npostgres_schema = %q\n", o.postgres, schema), drop, nil
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

// startServe writes the config and starts the binary; it returns the
// API's base URL once /healthz answers (serve listens only once its store
// is open; older builds have no /readyz), and what stops the process.
func startServe(ctx context.Context, o options, dir, store, recvURL string) (string, func() time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "listen = %q\napi_tokens = [%q]\nallow_loopback = true\n%s", addr, token, store)
	if o.workers > 0 {
		fmt.Fprintf(&cfg, "workers = %d\n", o.workers)
	}
	for i := range o.streams {
		fmt.Fprintf(&cfg, "\n[streams.s%02d]\nurl = %q\nsecrets = [%q]\n", i, recvURL, secret)
	}
	path := filepath.Join(dir, "courier.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		return "", nil, err
	}
	var logs bytes.Buffer
	cmd := exec.Command(o.courier, "serve", "-config", path)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &logs, &logs
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	// stop ends the process and returns the CPU time it used (user and
	// system), start-up and shutdown included.
	stop := func() time.Duration {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	base := "http://" + addr
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
		select {
		case <-ctx.Done():
			stop()
			return "", nil, fmt.Errorf("courier serve never became ready: %s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// publish sends every event through the API from o.producers clients,
// event i to stream i mod streams, retrying an attempt that failed.
func publish(ctx context.Context, o options, base string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	var next atomic.Int64
	errs := make(chan error, o.producers)
	var wg sync.WaitGroup
	for range o.producers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < o.events; i = int(next.Add(1)) - 1 {
				if err := publishOne(ctx, client, base, i%o.streams, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when the channel is empty
}

func publishOne(ctx context.Context, client *http.Client, base string, stream, i int) error {
	body, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("ev-%d", i), "payload": map[string]int{"n": i}})
	url := fmt.Sprintf("%s/v1/streams/s%02d/events", base, stream)
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("publish ev-%d: status %d", i, resp.StatusCode)
		}
		if try == 5 || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Command serve measures `courier serve` end to end, for issue 26's
// targets: one or more courier binaries side by side (A/B), and one or
// several serve processes sharing one PostgreSQL.
//
// Each run starts a receiver on 127.0.0.1 (a plain handler that answers
// 200 and counts distinct webhook-ids), writes a config whose streams all
// go to it, starts `courier serve` (K processes, each its own port; the
// owner is the process's own), waits until it listens (/healthz; serve
// listens only once its store is open and migrated, and 09110b6's /readyz
// never answers 200 on PostgreSQL: its probe sends a NUL byte that
// PostgreSQL refuses, fixed by f237880), publishes the events
// through the API from concurrent producers (event i to stream i mod
// streams; producer j to process j mod K), and times from the first
// publish until the receiver has every event's ID. The store starts empty:
// a fresh SQLite file, or a fresh PostgreSQL schema (postgres_schema),
// dropped afterwards.
//
//	go build -o /tmp/courier-old ./cmd/courier   # at the old commit
//	go build -o /tmp/courier-new ./cmd/courier   # at the new one
//	go run ./bench/serve -bin /tmp/courier-old -bin /tmp/courier-new -store sqlite -rounds 5
//	go run ./bench/serve -bin /tmp/courier-old -bin /tmp/courier-new -rounds 5 \
//	    -store postgres -postgres 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./bench/serve -bin /tmp/courier-new -processes 1,2,4 -rounds 5 \
//	    -store postgres -postgres 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// A variant is a binary and a process count; every round runs each
// variant once, in reverse order in odd rounds (A B, B A, ...) so that no
// variant always runs first. It prints each run's events/s and the load
// average, then the medians per variant and their ratio to the first
// variant's. The config names only fields that every build since 09110b6
// reads, so each binary runs with its own defaults (workers among them).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	token  = "servebench-token-0123456789"
	secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

type options struct {
	bins      []string
	store     string
	postgres  string
	streams   int
	events    int
	producers int
	processes []int
	rounds    int
	timeout   time.Duration
}

// variant is what one column of the results runs.
type variant struct {
	bin       string
	processes int
}

func (v variant) String() string { return fmt.Sprintf("%s ×%d", filepath.Base(v.bin), v.processes) }

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	procs := "1"
	flag.Func("bin", "a courier binary (repeat for A/B; the first is the baseline)", func(s string) error {
		o.bins = append(o.bins, s)
		return nil
	})
	flag.StringVar(&o.store, "store", "sqlite", "sqlite or postgres")
	flag.StringVar(&o.postgres, "postgres", "", "PostgreSQL URL (with -store postgres); each run gets a schema of its own")
	flag.IntVar(&o.streams, "streams", 8, "streams, all to the same receiver")
	flag.IntVar(&o.events, "events", 5000, "events published per run")
	flag.IntVar(&o.producers, "producers", 8, "concurrent API clients publishing")
	flag.StringVar(&procs, "processes", procs, "serve processes sharing the store, or a comma-separated list of counts to compare (PostgreSQL only above 1)")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each runs every variant once")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on a run after this long")
	flag.Parse()
	for s := range strings.SplitSeq(procs, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			return o, fmt.Errorf("-processes %q: want positive counts, comma-separated", procs)
		}
		o.processes = append(o.processes, k)
	}
	switch {
	case flag.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", flag.Arg(0))
	case len(o.bins) == 0:
		return o, errors.New("give at least one -bin")
	case o.store != "sqlite" && o.store != "postgres":
		return o, fmt.Errorf("-store is %q; want sqlite or postgres", o.store)
	case o.store == "postgres" && o.postgres == "":
		return o, errors.New("-store postgres needs -postgres URL")
	case o.store == "sqlite" && slices.Max(o.processes) > 1:
		return o, errors.New("several processes need -store postgres")
	case o.streams < 1 || o.events < 1 || o.producers < 1 || o.rounds < 1:
		return o, errors.New("-streams, -events, -producers and -rounds must be positive")
	}
	return o, nil
}

func run(o options) error {
	var vs []variant
	for _, b := range o.bins {
		for _, k := range o.processes {
			vs = append(vs, variant{b, k})
		}
	}
	fmt.Printf("store %s, %d streams, %d events, %d producers, %d rounds; load %s\n",
		o.store, o.streams, o.events, o.producers, o.rounds, loadAvg())
	rates := make([][]float64, len(vs)) // rates[variant][round]
	var loads []string
	for r := range o.rounds {
		order := make([]int, len(vs))
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			load := loadAvg()
			loads = append(loads, load)
			res, err := runOnce(o, vs[i], fmt.Sprintf("%d_%d_%d", os.Getpid(), r, i))
			if err != nil {
				return fmt.Errorf("round %d, %v: %w", r+1, vs[i], err)
			}
			rates[i] = append(rates[i], res.rate)
			fmt.Printf("round %d  %-40s %7.0f events/s  (published in %.2fs, all received in %.2fs; load before %s)\n",
				r+1, vs[i], res.rate, res.published.Seconds(), res.elapsed.Seconds(), load)
		}
	}
	report(vs, rates)
	fmt.Printf("1-minute load average before each run: %s; now %s\n", strings.Join(loads, " "), loadAvg())
	return nil
}

// report prints, per variant, the median events/s with the range, the
// ratio of its median to the first variant's, and the median of the
// per-round ratios (each round's run against the first variant's run of
// the same round), which drifts less when the machine's speed does.
func report(vs []variant, rates [][]float64) {
	fmt.Printf("\n%-40s %10s %17s %16s %26s\n", "variant (binary ×processes)", "median/s", "min–max", "÷ first, medians", "÷ first per round, median")
	base := median(rates[0])
	for i, v := range vs {
		var pair []float64
		for r, x := range rates[i] {
			pair = append(pair, x/rates[0][r])
		}
		fmt.Printf("%-40s %10.0f %17s %16.2f %13.2f (%.2f–%.2f)\n", v, median(rates[i]),
			fmt.Sprintf("%.0f–%.0f", slices.Min(rates[i]), slices.Max(rates[i])),
			median(rates[i])/base, median(pair), slices.Min(pair), slices.Max(pair))
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// loadAvg is the machine's 1-minute load average, as uptime prints it.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

type result struct {
	rate               float64
	published, elapsed time.Duration
}

// runOnce runs one variant on a fresh store; id names its schema.
func runOnce(o options, v variant, id string) (result, error) {
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
	defer recv.srv.Close()
	storeLines := fmt.Sprintf("database = %q\n", filepath.Join(dir, "courier.db"))
	if o.store == "postgres" {
		schema := "servebench_" + id
		storeLines = fmt.Sprintf("postgres = %q\npostgres_schema = %q\n", o.postgres, schema)
		defer dropSchema(o.postgres, schema)
	}
	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for k := range v.processes {
		p, err := startServe(ctx, v.bin, filepath.Join(dir, strconv.Itoa(k)), storeLines, o.streams, recv.url)
		if err != nil {
			return result{}, err
		}
		procs = append(procs, p)
	}
	start := time.Now()
	if err := publish(ctx, o, procs, id); err != nil {
		return result{}, err
	}
	published := time.Since(start)
	select {
	case <-recv.done:
	case <-ctx.Done():
		return result{}, fmt.Errorf("the receiver had %d of %d events at the timeout", recv.count(), o.events)
	}
	elapsed := time.Since(start)
	return result{float64(o.events) / elapsed.Seconds(), published, elapsed}, nil
}

func dropSchema(url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve: dropping the schema:", err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		fmt.Fprintln(os.Stderr, "serve: dropping the schema:", err)
	}
}

// receiver answers every webhook 200 and closes done once it has seen
// want distinct webhook-ids. It does not verify signatures: the figure
// is courier's throughput, not the receiver's.
type receiver struct {
	srv  *http.Server
	url  string
	want int
	done chan struct{}

	mu   sync.Mutex
	seen map[string]bool
}

func startReceiver(want int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String() + "/hook", want: want, done: make(chan struct{}), seen: map[string]bool{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	if id != "" && !r.seen[id] {
		r.seen[id] = true
		if len(r.seen) == r.want {
			close(r.done)
		}
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// process is one running `courier serve`.
type process struct {
	cmd  *exec.Cmd
	base string // the API's URL
	log  string // its stdout and stderr
	done chan struct{}
}

// startServe writes a config to dir and starts bin with it, and returns
// once /healthz answers 200 (see the package comment for why not /readyz).
func startServe(ctx context.Context, bin, dir, storeLines string, streams int, recvURL string) (*process, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "listen = %q\napi_tokens = [%q]\nallow_loopback = true\n%s", addr, token, storeLines)
	for i := range streams {
		fmt.Fprintf(&cfg, "\n[streams.s%02d]\nurl = %q\nsecrets = [%q]\n", i, recvURL, secret)
	}
	config := filepath.Join(dir, "courier.toml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	p := &process{base: "http://" + addr, log: filepath.Join(dir, "serve.log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	p.cmd = exec.Command(bin, "serve", "-config", config, "-log-format", "json")
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, logf, logf
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("courier serve exited: %s", p.tail())
		case <-ctx.Done():
			p.stop()
			return nil, fmt.Errorf("courier serve never became ready: %s", p.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for the process to exit (killing it after
// a minute).
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail is the end of the process's log, for an error.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	return string(b[max(0, len(b)-2000):])
}

// publish sends every event through the APIs from o.producers clients.
func publish(ctx context.Context, o options, procs []*process, run string) error {
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.producers},
	}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	errs := make(chan error, o.producers)
	var wg sync.WaitGroup
	for j := range o.producers {
		base := procs[j%len(procs)].base
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < o.events; i = int(next.Add(1)) - 1 {
				id := fmt.Sprintf("ev-%s-%d", run, i)
				if err := publishOne(ctx, client, base, i%o.streams, id); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when no producer failed
}

// publishOne publishes one event, trying again (with the same ID, so a
// retry is a duplicate) when the API is unreachable or answers 503.
func publishOne(ctx context.Context, client *http.Client, base string, stream int, id string) error {
	body, _ := json.Marshal(map[string]any{"id": id, "payload": map[string]string{"n": id}})
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
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusCreated, http.StatusOK:
				return nil
			case http.StatusServiceUnavailable:
				err = fmt.Errorf("publish %s: %s", id, msg)
			default:
				return fmt.Errorf("publish %s: status %d: %s", id, resp.StatusCode, msg)
			}
		}
		if try == 10 || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

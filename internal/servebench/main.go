// Command servebench measures `courier serve` end to end, as a team
// running it would feel it: real courier binaries, a real receiver (the
// receiver kit, verifying every signature, on loopback), events published
// through the HTTP API by concurrent producers, and the time until the
// receiver has applied every one.
//
//	go build -o /tmp/courier ./cmd/courier
//	go run ./internal/servebench -courier /tmp/courier -streams 8 -events 5000
//	go run ./internal/servebench -courier /tmp/courier -postgres 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// Two builds (before and after a change) are compared in interleaved
// rounds, and several serve processes on one PostgreSQL against one:
//
//	go run ./internal/servebench -courier /tmp/courier-old,/tmp/courier-new -rounds 6
//	go run ./internal/servebench -courier /tmp/courier-new -processes 1,2,4 -rounds 6 -postgres URL
//
// A variant is a binary (-courier, repeated or a comma-separated list;
// the first is the baseline) and a process count (-processes). Every
// round runs each variant once, in reverse order every other round (A B,
// B A, ...) so that no variant always runs first.
//
// Each run starts the receiver, writes a config that names only what
// every build since 09110b6 reads (listen, api_tokens, allow_loopback,
// the store, the streams, all to the receiver; workers only with
// -workers), so each binary runs with its own defaults, and starts K
// `courier serve` processes, each with its own port (and so its own
// owner). It waits for /healthz: serve listens only once its store is
// open, and 09110b6's /readyz never answers 200 on PostgreSQL (its probe
// sends a NUL byte that PostgreSQL refuses, fixed by f237880). Producer j
// publishes through process j mod K, event i to stream i mod streams. The
// store starts empty each run: a fresh SQLite file, or a fresh PostgreSQL
// schema (postgres_schema) dropped at the end. The processes then get
// SIGTERM and are waited for.
//
// Each run prints one line: events/s from the first publish to the last
// event applied, when the last publish was answered (which says whether
// publishing or delivery bounds the figure), the CPU the processes used
// per 1000 events (start-up and shutdown included), on PostgreSQL the
// transactions per event (counted over the whole database: give it a
// database of its own for a clean figure), and the 1-minute load average
// before the run. With more than one run it ends with a table: per
// variant the median events/s (min–max), its ratio to the first
// variant's median, and the median of the per-round ratios, which drifts
// less when the machine's speed does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	token  = "servebench-token-0123456789"
	secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

type options struct {
	couriers  []string
	streams   int
	events    int
	producers int
	postgres  string
	workers   int
	window    int
	processes []int
	rounds    int
	timeout   time.Duration
}

// variant is what one row of the results runs.
type variant struct {
	courier   string
	processes int
}

func (v variant) String() string {
	return fmt.Sprintf("%s ×%d", filepath.Base(v.courier), v.processes)
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

func parseFlags() (options, error) {
	var o options
	procs := "1"
	flag.Func("courier", "a courier binary to run, or a comma-separated list; repeat for more (the first is the baseline)", func(s string) error {
		for b := range strings.SplitSeq(s, ",") {
			if b = strings.TrimSpace(b); b != "" {
				o.couriers = append(o.couriers, b)
			}
		}
		return nil
	})
	flag.IntVar(&o.streams, "streams", 8, "streams, each to the same receiver")
	flag.IntVar(&o.events, "events", 5000, "events published per run")
	flag.IntVar(&o.producers, "producers", 16, "concurrent API clients publishing")
	flag.StringVar(&o.postgres, "postgres", "", "a PostgreSQL URL: use it (a fresh schema per run) instead of a SQLite file")
	flag.IntVar(&o.workers, "workers", 0, "the config's workers (0: leave it out, each binary's default)")
	flag.IntVar(&o.window, "window", 0, "0: every stream in strict order (the default); N: ordering \"independent\" with window N")
	flag.StringVar(&procs, "processes", procs, "serve processes sharing the store, or a comma-separated list of counts to compare (above 1 needs -postgres)")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds; each runs every variant once")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a run after this long")
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
	case len(o.couriers) == 0:
		return o, errors.New("-courier is required")
	case o.postgres == "" && slices.Max(o.processes) > 1:
		return o, errors.New("-processes above 1 needs -postgres")
	case o.streams < 1 || o.events < 1 || o.producers < 1 || o.rounds < 1 || o.workers < 0 || o.window < 0:
		return o, errors.New("-streams, -events, -producers and -rounds must be positive, -workers and -window not negative")
	}
	return o, nil
}

// run runs every variant once per round and, with more than one run,
// prints the table of medians.
func run(o options) error {
	var vs []variant
	for _, c := range o.couriers {
		for _, k := range o.processes {
			vs = append(vs, variant{c, k})
		}
	}
	multi := len(vs)*o.rounds > 1
	results := make([][]result, len(vs)) // results[variant][round]
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
			res, err := runOnce(o, vs[i])
			if err != nil {
				return fmt.Errorf("round %d, %v: %w", r+1, vs[i], err)
			}
			results[i] = append(results[i], res)
			prefix := ""
			if multi {
				prefix = fmt.Sprintf("round %d, %v: ", r+1, vs[i])
			}
			fmt.Printf("servebench: %s%s; load before %s\n", prefix, res.line(o, vs[i]), load)
		}
	}
	if multi {
		report(o, vs, results)
	}
	return nil
}

// line is a run's figures, on one line.
func (r result) line(o options, v variant) string {
	procs := ""
	if v.processes > 1 {
		procs = fmt.Sprintf(", %d processes", v.processes)
	}
	if o.window > 0 {
		procs += fmt.Sprintf(", independent, window %d", o.window)
	}
	s := fmt.Sprintf("%d events over %d streams (%s, workers %s%s): published in %.2fs, all applied in %.2fs: %.0f events/s end to end; courier used %.0f ms of CPU per 1000 events",
		o.events, o.streams, storeName(o), workersName(o), procs, r.published.Seconds(), r.elapsed.Seconds(), r.rate, r.cpuMs)
	if o.postgres != "" {
		s += fmt.Sprintf("; %.2f PostgreSQL transactions per event (%d in all)", r.xactsPerEvent, r.xacts)
	}
	return s
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
	return strconv.Itoa(o.workers)
}

// report prints, per variant, the median events/s with the range, the
// ratio of its median to the first variant's, the median (and range) of
// the per-round ratios (each run against the first variant's run of the
// same round), and the medians of CPU and, on PostgreSQL, transactions
// per event.
func report(o options, vs []variant, results [][]result) {
	fmt.Printf("\n%-32s %26s %9s %24s %12s", "variant (binary ×processes)", "events/s, median (min–max)", "÷ first", "÷ first per round", "CPU ms/1000")
	if o.postgres != "" {
		fmt.Printf(" %12s", "xacts/event")
	}
	fmt.Println()
	base := column(results[0], func(r result) float64 { return r.rate })
	for i, v := range vs {
		rates := column(results[i], func(r result) float64 { return r.rate })
		var pair []float64
		for r, x := range rates {
			pair = append(pair, x/base[r])
		}
		fmt.Printf("%-32s %26s %9.2f %24s %12.0f", v,
			fmt.Sprintf("%.0f (%.0f–%.0f)", median(rates), slices.Min(rates), slices.Max(rates)),
			median(rates)/median(base),
			fmt.Sprintf("%.2f (%.2f–%.2f)", median(pair), slices.Min(pair), slices.Max(pair)),
			median(column(results[i], func(r result) float64 { return r.cpuMs })))
		if o.postgres != "" {
			fmt.Printf(" %12.2f", median(column(results[i], func(r result) float64 { return r.xactsPerEvent })))
		}
		fmt.Println()
	}
	fmt.Printf("1-minute load average now: %s\n", loadAvg())
}

// column is one figure of every run of a variant.
func column(rs []result, f func(result) float64) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return xs
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
	if err != nil || len(strings.Fields(string(b))) == 0 {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// Command riverbench measures courier beside River (v0.51.2) on the same
// PostgreSQL, side by side in one run, and courier's SQLite store beside
// a hand-written loop that commits 100 items per transaction: the ratios
// that issue 26 sets targets for. It lives in a module of its own so that
// River never becomes a dependency of courier's root module.
//
// Each round runs every shape once for each side, the two sides taking
// turns (courier first in odd rounds, the other side first in even ones),
// each in a fresh schema (a fresh file on SQLite). It prints each round's
// figures, then a table of medians and courier's ratio to the other side.
//
//	createdb -h 127.0.0.1 -U postgres courier_riverbench   # a database of its own
//	cd bench/river && go run . -postgres 'postgres://postgres@127.0.0.1:5432/courier_riverbench?sslmode=disable'
//
// Transactions per delivered event are the database's xact_commit
// (pg_stat_database) over the measured phase, so give it a database that
// nothing else uses. courier runs as a program would run it: a
// courier.Service on pgstore or sqlitestore, with courier serve's worker
// settings, delivering to a channel that answers at once, in strict order
// (or independently, -window attempts of a stream at once).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/courierlab/courier/machine"
)

type options struct {
	postgres string
	rounds   int
	events   int
	steady   time.Duration
	timeout  time.Duration
	only     string
	profile  bool
	cpu      string
	window   int
}

func main() {
	var o options
	flag.StringVar(&o.postgres, "postgres", "", "PostgreSQL URL of a database that nothing else uses (required)")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds; the table quotes their medians")
	flag.IntVar(&o.events, "events", 5000, "events (jobs, items) stored before each drain")
	flag.DurationVar(&o.steady, "steady", 10*time.Second, "how long the producers of a steady shape publish")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up on a drain that takes longer")
	flag.StringVar(&o.only, "only", "", "run only the shapes whose name contains this")
	flag.BoolVar(&o.profile, "profile", false, "after each courier steady run, print its round trips' counts and times per delivered event and its CPU time")
	flag.StringVar(&o.cpu, "cpuprofile", "", "write a CPU profile of each courier steady run to this file (the last run's is kept)")
	flag.IntVar(&o.window, "window", 0, "0: courier delivers each stream in strict order (courier serve's default); N: independently, N attempts of a stream at once (a platform endpoint with ordering independent and max_in_flight N), as River and the loop do not order")
	flag.Parse()
	if o.postgres == "" || o.rounds < 1 || o.events < 1 || o.steady <= 0 || o.timeout <= 0 || o.window < 0 {
		fmt.Fprintln(os.Stderr, "riverbench: -postgres is required; -rounds, -events, -steady and -timeout must be positive, -window at least 0")
		os.Exit(2)
	}
	policy = machine.DefaultConfig()
	if o.window > 0 {
		policy.Ordering, policy.Window = machine.Independent, o.window
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "riverbench:", err)
		os.Exit(1)
	}
}

// run measures every shape in o.rounds interleaved rounds and prints the
// table.
func run(ctx context.Context, o options) error {
	var chosen []shape
	for _, s := range shapes(o) {
		if strings.Contains(s.name, o.only) {
			chosen = append(chosen, s)
		}
	}
	results := make([][2][]result, len(chosen))
	for round := 1; round <= o.rounds; round++ {
		for i, s := range chosen {
			order := []int{0, 1}
			if round%2 == 0 {
				order = []int{1, 0}
			}
			for _, side := range order {
				r, err := s.sides[side].run(ctx)
				if err != nil {
					return fmt.Errorf("round %d, %s, %s: %w", round, s.name, s.sides[side].name, err)
				}
				results[i][side] = append(results[i][side], r)
				fmt.Printf("round %d  %-28s %-8s %s\n", round, s.name, s.sides[side].name, r)
			}
		}
	}
	fmt.Println()
	printTable(os.Stdout, chosen, results)
	return nil
}

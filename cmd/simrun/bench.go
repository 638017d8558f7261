package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

// benchCommand measures how fast this machine simulates: per scenario,
// workload events per second of wall time and time compression (virtual
// time over wall time), then swarm seeds per second of a sweep. The
// figures depend on the machine and its load, so they are printed, never
// written to RESULTS.md.
func benchCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simrun bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", "", "measure only this scenario (default: all)")
	seeds := fs.Int("seeds", 10, "seeds per scenario, from 1 (at most the scenario's own count: long-outage runs 3)")
	sweepSeeds := fs.Int("sweep", 2000, "swarm seeds for the sweep rate; 0 skips it")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "goroutines for the sweep")
	minWall := fs.Duration("min", time.Second, "run each scenario's seeds again, round after round, until this much wall time is measured (0: one round)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "simrun bench: unexpected arguments %q\n", fs.Args())
		return exitUsage
	case *seeds < 1:
		fmt.Fprintf(stderr, "simrun bench: -seeds is %d; want at least 1\n", *seeds)
		return exitUsage
	case *sweepSeeds < 0 || *sweepSeeds > maxSweepSeeds:
		fmt.Fprintf(stderr, "simrun bench: -sweep is %d; want 0 to %d\n", *sweepSeeds, maxSweepSeeds)
		return exitUsage
	case *parallel < 1 || *parallel > 1024:
		fmt.Fprintf(stderr, "simrun bench: -parallel is %d; want 1 to 1024\n", *parallel)
		return exitUsage
	case *minWall < 0 || *minWall > time.Hour:
		fmt.Fprintf(stderr, "simrun bench: -min is %v; want 0 to 1h\n", *minWall)
		return exitUsage
	}
	list := scenarios.All()
	if *name != "" {
		sc, err := scenarios.Lookup(*name)
		if err != nil {
			fmt.Fprintln(stderr, "simrun bench:", err)
			return exitUsage
		}
		list = []scenarios.Scenario{sc}
	}
	fmt.Fprintf(stdout, "simrun bench: %s, GOMAXPROCS %d (wall-clock figures: they depend on this machine and its load; each scenario runs seed 1 once untimed first, then %s)\n", runtime.GOARCH, runtime.GOMAXPROCS(0), roundsPhrase(*minWall))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\truns\tevents\tvirtual time\twall time\tevents/s\tcompression\t")
	for _, sc := range list {
		row, err := benchScenario(sc, min(*seeds, sc.SeedCount()), *minWall)
		if err != nil {
			tw.Flush()
			fmt.Fprintln(stderr, "simrun bench:", err)
			return exitCrash
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	if *sweepSeeds > 0 {
		start := time.Now()
		results := scenarios.Sweep(1, *sweepSeeds, *parallel, nil)
		wall := time.Since(start)
		failed := 0
		for _, r := range results {
			if r.Failed() {
				failed++
			}
		}
		fmt.Fprintf(stdout, "sweep: %d swarm seeds on %d goroutines in %v: %.0f seeds/s (%d failed)\n",
			*sweepSeeds, *parallel, wall.Round(time.Millisecond), float64(*sweepSeeds)/wall.Seconds(), failed)
	}
	return exitOK
}

// benchScenario runs seeds 1..n of sc, checker included, in rounds until
// at least minWall of wall time is measured, and formats its row: runs,
// workload events and virtual time summed over them, wall time, and the
// two rates. Rounds matter on a small machine: one round of a short
// scenario lasts some tens of milliseconds, in which a fresh process's
// heap and the CPU's clock are still settling, as `go test -bench`
// also finds by running a benchmark until its -benchtime.
func benchScenario(sc scenarios.Scenario, n int, minWall time.Duration) (string, error) {
	// One untimed run first: the process's first run pays for growing its
	// heap, which no later run does.
	if _, _, err := sc.Run(1, sim.Options{}); err != nil {
		return "", err
	}
	var total benchTotal
	for total.runs == 0 || total.wall < minWall {
		if err := total.round(sc, n); err != nil {
			return "", err
		}
	}
	secs := max(total.wall.Seconds(), 1e-9)
	return strings.Join([]string{
		sc.Name, fmt.Sprint(total.runs), fmt.Sprint(total.events), total.virtual.Round(time.Millisecond).String(), total.wall.Round(time.Microsecond).String(),
		fmt.Sprintf("%.0f", float64(total.events)/secs), fmt.Sprintf("%.0fx", total.virtual.Seconds()/secs), "",
	}, "\t"), nil
}

// roundsPhrase says in the header how many rounds of seeds are timed.
func roundsPhrase(minWall time.Duration) string {
	if minWall == 0 {
		return "its seeds once"
	}
	return "its seeds in rounds until " + minWall.String() + " is measured"
}

// benchTotal sums what benchScenario's rounds measured.
type benchTotal struct {
	runs, events  int
	virtual, wall time.Duration
}

// round runs seeds 1..n of sc once each, timing each run alone.
func (t *benchTotal) round(sc scenarios.Scenario, n int) error {
	for seed := uint64(1); seed <= uint64(n); seed++ {
		start := time.Now()
		r, _, err := sc.Run(seed, sim.Options{})
		t.wall += time.Since(start)
		if err != nil {
			return err
		}
		t.runs++
		t.events += r.Stats.Accepted
		t.virtual += r.Stats.End
	}
	return nil
}

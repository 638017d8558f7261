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
	fmt.Fprintf(stdout, "simrun bench: %s, GOMAXPROCS %d (wall-clock figures: they depend on this machine and its load; each scenario runs seed 1 once untimed first)\n", runtime.GOARCH, runtime.GOMAXPROCS(0))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\truns\tevents\tvirtual time\twall time\tevents/s\tcompression\t")
	for _, sc := range list {
		row, err := benchScenario(sc, min(*seeds, sc.SeedCount()))
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

// benchScenario runs seeds 1..n of sc, checker included, and formats its
// row: workload events, virtual and wall time, and the two rates.
func benchScenario(sc scenarios.Scenario, n int) (string, error) {
	var events int
	var virtual, wall time.Duration
	// One untimed run first: the process's first run pays for growing its
	// heap and filling the simulator's pools, which no later run does.
	r, _, err := sc.Run(1, sim.Options{})
	if err != nil {
		return "", err
	}
	sim.Recycle(r)
	for seed := uint64(1); seed <= uint64(n); seed++ {
		start := time.Now()
		r, _, err := sc.Run(seed, sim.Options{})
		wall += time.Since(start)
		if err != nil {
			return "", err
		}
		events += r.Stats.Accepted
		virtual += r.Stats.End
		sim.Recycle(r) // only its stats are kept
	}
	secs := max(wall.Seconds(), 1e-9)
	return strings.Join([]string{
		sc.Name, fmt.Sprint(n), fmt.Sprint(events), virtual.Round(time.Millisecond).String(), wall.Round(time.Microsecond).String(),
		fmt.Sprintf("%.0f", float64(events)/secs), fmt.Sprintf("%.0fx", virtual.Seconds()/secs), "",
	}, "\t"), nil
}

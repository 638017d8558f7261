// Command simrun runs courier's deterministic simulation: it lists the
// scenarios, runs one under a seed and replays it exactly, writes the
// RESULTS.md table, and serves a page that runs the simulator in a browser.
//
// Exit codes:
//
//	0  every invariant and expectation held
//	1  a safety invariant was violated (lost, applied twice, order, sends, dead letters kept, dead letters deserved, monotonic)
//	2  usage error: unknown command, scenario or flag, bad seed, unreadable replay file
//	3  liveness was violated (an event did not settle in time) and no safety invariant
//	4  the scenario's own expectation failed, every invariant held
//	5  the simulator or the machine crashed (a panic: a broken internal invariant)
//	6  replay: the file's run no longer reproduces (its seed, world or trace hash differs)
//	7  an output file (-html, -failures) could not be written; the runs' verdict still printed
//
// When several apply, the worst wins: crash, safety, liveness, replay
// mismatch, output error, expectation. A sweep exits with the worst code of
// its seeds. An output error never hides a verdict: its code is used only
// when every invariant held.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

// rebuildHint says how to get a build that has the planted bugs.
const rebuildHint = "this simrun is a normal build, which has no planted bugs: rebuild with -tags plant (go run -tags plant ./cmd/simrun ...)"

// Exit codes; see the command doc.
const (
	exitOK          = 0
	exitSafety      = 1
	exitUsage       = 2
	exitLiveness    = 3
	exitExpectation = 4
	exitCrash       = 5
	exitMismatch    = 6
	exitOutput      = 7
)

func main() {
	tuneGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tuneGC runs the collector at GOGC=400 unless the GOGC environment
// variable says otherwise. A simulated run makes much short-lived garbage
// over a small live heap (a sweep keeps a few runs' worth, whatever its
// seed count), so the default GOGC=100 collects often for little: with 400
// a 2,000-seed sweep runs about 1.4 times as fast, and long-outage's peak
// resident memory grows from about 0.9 to 1.2 GB.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
}

const usage = `usage:
  simrun list                                   the scenarios, with why each exists
  simrun run -scenario NAME -seed N [-trace] [-html FILE]
                                                run one scenario under one seed
  simrun sweep -seeds N [-from S] [-parallel P] [-failures DIR]
                                                run N swarm seeds, each drawing its own world
  simrun replay FILE [-trace] [-html FILE]      replay a failing sweep seed exactly
  simrun results                                print RESULTS.md (make results writes it)
  simrun serve [-addr 127.0.0.1:8080]           the simulator in a browser page (WebAssembly)
  simrun bench [-scenario NAME] [-seeds N] [-sweep N] [-parallel P]
                                                events/s, time compression and sweep seeds/s on this machine

exit codes: 0 held, 1 safety violated, 2 usage, 3 liveness (or lease-kept) violated,
4 scenario expectation failed, 5 crash, 6 replay did not reproduce,
7 an output file (-html, -failures) could not be written; the worst wins
`

func run(args []string, stdout, stderr io.Writer) (code int) {
	if err := plant.Check(plant.Requested()); err != nil {
		fmt.Fprintf(stderr, "simrun: this build links in %v\n", err)
		return exitUsage
	}
	if b := plant.Requested(); b != "" && !plant.Enabled {
		fmt.Fprintf(stderr, "simrun: the linker was asked for planted bug %q, but %s\n", b, rebuildHint)
		return exitUsage
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "simrun list takes no arguments, got %q\n", args[1:])
			return exitUsage
		}
		for _, s := range scenarios.All() {
			fmt.Fprintf(stdout, "%-20s %s\n", s.Name, s.Why)
		}
		return exitOK
	case "run":
		return runScenario(args[1:], stdout, stderr)
	case "sweep":
		return sweepCommand(args[1:], stdout, stderr)
	case "replay":
		return replayCommand(args[1:], stdout, stderr)
	case "bench":
		return benchCommand(args[1:], stdout, stderr)
	case "results":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "simrun results takes no arguments, got %q\n", args[1:])
			return exitUsage
		}
		if !plant.Enabled {
			// Refuse before minutes of runs: only a plant build can write
			// the catch matrix.
			fmt.Fprintf(stderr, "simrun results: RESULTS.md includes the planted-bug catch matrix; %s\n", rebuildHint)
			return exitUsage
		}
		if err := writeResults(stdout); err != nil {
			fmt.Fprintln(stderr, "simrun results:", err)
			return exitCrash
		}
		return exitOK
	case "serve":
		return serveCommand(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "simrun: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
}

func runScenario(args []string, stdout, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("simrun run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", "", "scenario name (see simrun list)")
	seedText := fs.String("seed", "", "root seed, a decimal uint64")
	trace := fs.Bool("trace", false, "print the whole trace before the summary")
	html := fs.String("html", "", "write a timeline of the run to this HTML file")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "simrun run: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if *name == "" {
		fmt.Fprintf(stderr, "simrun run: -scenario is required; known: %s\n", strings.Join(scenarios.Names(), ", "))
		return exitUsage
	}
	sc, err := scenarios.Lookup(*name)
	if err != nil {
		fmt.Fprintln(stderr, "simrun run:", err)
		return exitUsage
	}
	seed, err := parseSeed(*seedText)
	if err != nil {
		fmt.Fprintln(stderr, "simrun run:", err)
		return exitUsage
	}
	page, err := openOutput(*html)
	if err != nil {
		fmt.Fprintln(stderr, "simrun run:", err)
		return exitOutput
	}
	replay := fmt.Sprintf("go run ./cmd/simrun run -scenario %s -seed %d -trace", sc.Name, seed)
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "simrun: crash: %v\n%s\nreproduce: %s\n", p, debug.Stack(), replay)
			code = exitCrash
		}
	}()
	r, fails, err := sc.Run(seed, sim.Options{Trace: *trace, Logs: page != nil})
	if err != nil {
		fmt.Fprintln(stderr, "simrun run:", err)
		return exitCrash
	}
	if *trace {
		for _, line := range r.Trace {
			fmt.Fprintln(stdout, line)
		}
		fmt.Fprintln(stdout)
	}
	summarize(stdout, sc, r, fails)
	code = verdict(r.Violations, fails)
	if page != nil {
		code = worse(code, writeTimeline(page, fmt.Sprintf("scenario %s, seed %d", sc.Name, seed), r, stdout, stderr))
	}
	fmt.Fprintf(stdout, "reproduce: %s\n", replay)
	return code
}

// ErrBadSeed is returned for a seed that is not a decimal uint64.
var ErrBadSeed = errors.New("bad seed")

func parseSeed(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: -seed is required (a decimal number from 0 to %d)", ErrBadSeed, uint64(1<<64-1))
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a decimal number from 0 to %d", ErrBadSeed, s, uint64(1<<64-1))
	}
	return seed, nil
}

func summarize(w io.Writer, sc scenarios.Scenario, r sim.Result, fails []string) {
	fmt.Fprintf(w, "scenario %s, seed %d: %s\n", sc.Name, r.Seed, sc.Why)
	fmt.Fprintf(w, "faults:   %s\n", sc.Faults)
	printStats(w, r.Stats, r.Hash)
	printViolations(w, r.Violations)
	if len(fails) == 0 {
		fmt.Fprintf(w, "expected: %s: held\n", sc.Expect)
	} else {
		for _, f := range fails {
			fmt.Fprintf(w, "  EXPECTATION FAILED %s\n", f)
		}
	}
}

func verdict(vs []invariants.Violation, fails []string) int {
	liveness, safety := false, false
	for _, v := range vs {
		switch v.Invariant {
		case scenarios.Crash:
			return exitCrash
		case invariants.Liveness, invariants.LeaseKept: // availability, not safety
			liveness = true
		default:
			safety = true
		}
	}
	if safety {
		return exitSafety
	}
	switch {
	case liveness:
		return exitLiveness
	case len(fails) > 0:
		return exitExpectation
	}
	return exitOK
}

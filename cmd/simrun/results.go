package main

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

// resultsCommand is the command that regenerates RESULTS.md; the file
// names it so a reader knows where every figure comes from.
const resultsCommand = "go run -tags plant ./cmd/simrun results > RESULTS.md"

// writeResults writes RESULTS.md: every figure in it is counted by running
// the scenarios now. TestResultsFileIsCurrent holds the committed file to it.
// The planted-bug catch matrix needs a build with -tags plant; a normal
// build refuses to write a RESULTS.md without it.
func writeResults(w io.Writer) error {
	text, err := resultsText(plantedResults)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, text)
	return err
}

// scenarioRuns is one scenario's runs over its standard seeds, in seed
// order (seed 1 first).
type scenarioRuns struct {
	sc      scenarios.Scenario
	results []sim.Result
	fails   [][]string
}

// runStandardSeeds runs every scenario over its standard seeds. The runs
// are spread over the CPUs, the longest first (each run is single-threaded
// and shares nothing with the others: long-outage's three seeds alone took
// a minute in a row), and come back in scenario and seed order, so the
// text does not depend on how they were spread.
func runStandardSeeds() ([]scenarioRuns, error) {
	type job struct{ sc, seed int }
	var all []scenarioRuns
	var jobs []job
	for i, sc := range scenarios.All() {
		n := sc.SeedCount()
		all = append(all, scenarioRuns{sc: sc, results: make([]sim.Result, n), fails: make([][]string, n)})
		for seed := range n {
			jobs = append(jobs, job{i, seed})
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { // long scenarios first
		return cmp.Compare(all[b.sc].sc.Seeds, all[a.sc].sc.Seeds)
	})
	errs := make([]error, len(jobs))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				j, rs := jobs[i], &all[jobs[i].sc]
				rs.results[j.seed], rs.fails[j.seed], errs[i] = rs.sc.Run(uint64(j.seed+1), sim.Options{})
			}
		})
	}
	wg.Wait()
	return all, errors.Join(errs...)
}

// plantedHeading opens the catch-matrix section, which plantedResults
// writes whole (it runs only in a plant build).
const plantedHeading = "\n## Planted bugs, and what caught them\n\n"

// resultsText is RESULTS.md with the planted-bug section from planted.
func resultsText(planted func() (string, error)) (string, error) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# Results\n\n")
	p("Generated from the code by `%s` (or `make results`). Do not edit by hand:\n", resultsCommand)
	p("`go test ./cmd/simrun` fails when this file differs from what the code produces.\n")
	p("Every run is deterministic: the seed decides everything, and the trace hash pins the run byte for byte.\n\n")

	// Every scenario over the standard seeds, run once and reported in
	// three tables.
	n := scenarios.StandardSeeds
	all, err := runStandardSeeds()
	if err != nil {
		return "", err
	}

	p("## Every scenario, seed 1\n\n")
	p("| scenario | seed | accepted | applied | duplicates discarded | dead | lost | applied twice | sends | most sends of one event | circuit openings | restarts | drain (virtual) | invariants | expectations | trace hash |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|\n")
	var total sim.Stats
	allHeld := true
	for _, rs := range all {
		r, fails := rs.results[0], rs.fails[0]
		s := r.Stats
		allHeld = allHeld && len(r.Violations) == 0 && len(fails) == 0
		p("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %v | %s | %s | `%s` |\n",
			rs.sc.Name, r.Seed, s.Accepted, s.Applied, s.Duplicates, s.Dead, s.Lost, s.AppliedTwice,
			s.Sends, s.MaxSends, s.CircuitOpenings, s.Restarts, s.Drain.Round(time.Millisecond),
			heldText(r.Violations), expectText(fails), r.Hash)
		total.Add(s)
	}
	p("| **total** | | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | | %s | | |\n\n",
		total.Accepted, total.Applied, total.Duplicates, total.Dead, total.Lost, total.AppliedTwice,
		total.Sends, total.MaxSends, total.CircuitOpenings, total.Restarts, verdictText(allHeld))

	p("## Many workers, seeds 1 to %d\n\n", n)
	p("Workers share one store (memstore, which passes `storetest`); a stale owner's calls are refused at the storage boundary. ")
	p("A fenced-off owner may still send, late, an attempt it persisted before it lost the stream, so the bound is: every send carries a distinct attempt number that was durable before it, hence at most MaxAttempts sends per event counting every owner.\n\n")
	p("| scenario | leases granted | stale-lease calls refused | sends by fenced-off owners | most sends of one event (MaxAttempts) | lost | applied twice | violations |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, rs := range all {
		if rs.results[0].World.Cluster.Workers == 0 {
			continue
		}
		var agg sim.Stats
		violations := 0
		for _, r := range rs.results {
			agg.Add(r.Stats)
			violations += len(r.Violations)
		}
		p("| %s | %d | %d | %d | %d (%d) | %d | %d | %d |\n", rs.sc.Name, agg.LeaseGrants, agg.FencedWrites, agg.ZombieSends,
			agg.MaxSends, rs.results[0].World.Policy.MaxAttempts, agg.Lost, agg.AppliedTwice, violations)
	}
	p("\n")

	writeOwnerWaits(p, all)

	p("## Every scenario, seeds 1 to %d\n\n", n)
	p("The same runs `go test ./scenarios` makes (a long scenario runs fewer seeds: see its runs column). A dead letter is kept in the store with its reason; it is never lost.\n\n")
	p("| scenario | runs | runs with every invariant held | runs with every expectation held | accepted | applied | dead | lost | applied twice | most sends of one event (MaxAttempts) | longest drain (virtual) |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	violated := map[string]int{}
	for _, rs := range all {
		var agg sim.Stats
		var held, met int
		for i, r := range rs.results {
			agg.Add(r.Stats)
			if len(r.Violations) == 0 {
				held++
			}
			for _, v := range r.Violations {
				violated[v.Invariant]++
			}
			if len(rs.fails[i]) == 0 {
				met++
			}
		}
		p("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d (%d) | %v |\n",
			rs.sc.Name, len(rs.results), held, met, agg.Accepted, agg.Applied, agg.Dead, agg.Lost, agg.AppliedTwice,
			agg.MaxSends, rs.results[0].World.Policy.MaxAttempts, agg.Drain.Round(time.Millisecond))
	}
	p("\nViolations per invariant over these runs:")
	for _, name := range invariants.Names {
		p(" %s %d;", name, violated[name])
	}
	p("\n\n")

	if err := writeLongSweeps(&b, longSweeps); err != nil {
		return "", err
	}
	if err := writeSweepSections(&b, planted); err != nil {
		return "", err
	}

	p("## The scenarios\n\n")
	for _, sc := range scenarios.All() {
		p("- **%s**: %s\n  Faults: %s.\n  Must show: %s.\n", sc.Name, sc.Why, sc.Faults, sc.Expect)
	}
	p("\nReplay any run, trace included: `go run ./cmd/simrun run -scenario NAME -seed N -trace`.\n")
	return b.String(), nil
}

func heldText(vs []invariants.Violation) string {
	if len(vs) == 0 {
		return fmt.Sprintf("all %d held", len(invariants.Names))
	}
	return fmt.Sprintf("**%d violated**", len(vs))
}

func expectText(fails []string) string {
	if len(fails) == 0 {
		return "held"
	}
	return fmt.Sprintf("**%d failed**", len(fails))
}

func verdictText(ok bool) string {
	if ok {
		return "all held"
	}
	return "**VIOLATED**"
}

// writeSweepSections adds the swarm sweep, the fault-by-state coverage of
// that same sweep, and the planted-bug catch matrix.
func writeSweepSections(b *strings.Builder, planted func() (string, error)) error {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	n := scenarios.CoverageSeeds
	results := scenarios.Sweep(1, n, 0, nil)
	var total sim.Stats
	var failed, violations, strict int
	for _, r := range results {
		total.Add(r.Stats)
		violations += len(r.Violations)
		if r.Failed() {
			failed++
		}
		if r.World.Policy.Ordering.String() == "strict" {
			strict++
		}
	}
	p("## Swarm sweep, seeds 1 to %d\n\n", n)
	p("Each seed draws its own world: ordering, policy, workload and fault mix (`scenarios.Swarm`). ")
	p("Every run has a safety phase under faults and a liveness phase after they heal. Run more with `go run ./cmd/simrun sweep -seeds 10000`.\n\n")
	p("| seeds | strict / independent | events accepted | applied | duplicates discarded | dead | lost | applied twice | sends | circuit openings | restarts | violations | failing seeds |\n")
	p("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	p("| %d | %d / %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n\n",
		n, strict, n-strict, total.Accepted, total.Applied, total.Duplicates, total.Dead, total.Lost, total.AppliedTwice,
		total.Sends, total.CircuitOpenings, total.Restarts, violations, failed)

	p("## Which fault met which state, over that sweep\n\n")
	p("A cell counts the times a fault struck an event in that state (restarts and crashes count once per state present in the store). ")
	p("`-` marks a cell the design says is unreachable; `go test ./scenarios` fails if one of them is reached, or if a reachable cell stays at 0.\n\n")
	p("| fault |")
	for _, st := range sim.States() {
		p(" %s |", st)
	}
	p("\n|---|")
	for range sim.States() {
		p("--:|")
	}
	p("\n")
	for _, f := range sim.Faults() {
		p("| %s |", f)
		for _, st := range sim.States() {
			if scenarios.Reachable(f, st) {
				p(" %d |", total.Coverage.At(f, st))
			} else if c := total.Coverage.At(f, st); c != 0 {
				p(" **%d (unreachable!)** |", c)
			} else {
				p(" - |")
			}
		}
		p("\n")
	}

	text, err := planted()
	if err != nil {
		return err
	}
	b.WriteString(text)
	return nil
}

// longSweeps is the record of long sweeps that .ci/longsweep appends to:
// they take minutes, so RESULTS.md reports them from the record, with the
// commit each ran on, rather than running them.
//
//go:embed longsweeps.txt
var longSweeps string

// longSweep is one line of longsweeps.txt.
type longSweep struct {
	date, commit               string
	from                       uint64
	seeds, violations, failing int
	events                     int64
	seconds                    float64
}

// parseLongSweeps reads the record; a malformed line is an error naming it.
func parseLongSweeps(text string) ([]longSweep, error) {
	var out []longSweep
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func() error {
			return fmt.Errorf("longsweeps.txt line %d: %q: want date commit from seeds events violations failing seconds", i+1, line)
		}
		if len(f) != 8 {
			return nil, bad()
		}
		var s longSweep
		var errs [6]error
		s.date, s.commit = f[0], f[1]
		s.from, errs[0] = strconv.ParseUint(f[2], 10, 64)
		s.seeds, errs[1] = strconv.Atoi(f[3])
		s.events, errs[2] = strconv.ParseInt(f[4], 10, 64)
		s.violations, errs[3] = strconv.Atoi(f[5])
		s.failing, errs[4] = strconv.Atoi(f[6])
		s.seconds, errs[5] = strconv.ParseFloat(f[7], 64)
		for _, err := range errs {
			if err != nil {
				return nil, bad()
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// writeLongSweeps states the largest sweep on record, then every one.
func writeLongSweeps(b *strings.Builder, record string) error {
	sweeps, err := parseLongSweeps(record)
	if err != nil || len(sweeps) == 0 {
		return err
	}
	largest := sweeps[0]
	for _, s := range sweeps[1:] {
		if s.seeds >= largest.seeds {
			largest = s // the latest of the largest
		}
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Long sweeps\n\n")
	p("A rule that held for 10,000 seeds once failed in 16 of 1,000,000, so every change to the worker, the simulator or the checker is swept over at least 1,000,000 seeds from a range never run before (`make longsweep`, which records the sweep in `cmd/simrun/longsweeps.txt`). ")
	p("The largest on record: **%d seeds from %d, %d events, %d violations**, on commit %s (%s).\n\n",
		largest.seeds, largest.from, largest.events, largest.violations, largest.commit, largest.date)
	p("| date | commit | seeds | from | events | violations | failing seeds | seconds |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range sweeps {
		p("| %s | %s | %d | %d | %d | %d | %d | %.0f |\n", s.date, s.commit, s.seeds, s.from, s.events, s.violations, s.failing, s.seconds)
	}
	p("\n")
	return nil
}

// writeOwnerWaits writes, for each scenario whose checker judged waits
// for an owner (owner-wait), how long the streams with due work waited,
// over all its runs, beside the bound.
func writeOwnerWaits(p func(string, ...any), all []scenarioRuns) {
	p("## Waits for an owner\n\n")
	p("owner-wait judges every grant that ended a wait with due work, parked streams included (due once the instant they were released until has come): the wait runs from the later of the due work and the end of the last lease, to the grant. The bound is `worker.WaitBound` for the run's streams and room, plus its slack for faults (stalls, crashes, refused calls, clock skew); the largest over the runs.\n\n")
	p("| scenario | runs | waits judged | median | 99th percentile | longest | bound |\n")
	p("|---|--:|--:|--:|--:|--:|--:|\n")
	for _, rs := range all {
		var waits []time.Duration
		var bound time.Duration
		for _, r := range rs.results {
			waits = append(waits, r.OwnerWaits...)
			bound = max(bound, r.Run.OwnerWait+r.Run.Slack-r.Run.Rotation)
		}
		if rs.results[0].Run.OwnerWait <= 0 {
			continue
		}
		slices.Sort(waits)
		p("| %s | %d | %d | %v | %v | %v | %v |\n", rs.sc.Name, len(rs.results), len(waits),
			quantile(waits, 0.5), quantile(waits, 0.99), quantile(waits, 1), bound.Round(time.Millisecond))
	}
	p("\n")
}

// quantile is the q-quantile of sorted (nearest rank), rounded to the
// millisecond; 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)].Round(time.Millisecond)
}

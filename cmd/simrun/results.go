package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
)

// resultsCommand is the command that regenerates RESULTS.md; the file
// names it so a reader knows where every figure comes from.
const resultsCommand = "go run ./cmd/simrun results > RESULTS.md"

// writeResults writes RESULTS.md: every figure in it is counted by running
// the scenarios now. TestResultsFileIsCurrent holds the committed file to it.
func writeResults(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	p("# Results\n\n")
	p("Generated from the code by `%s` (or `make results`). Do not edit by hand:\n", resultsCommand)
	p("`go test ./cmd/simrun` fails when this file differs from what the code produces.\n")
	p("Every run is deterministic: the seed decides everything, and the trace hash pins the run byte for byte.\n\n")

	p("## Every scenario, seed 1\n\n")
	p("| scenario | seed | accepted | applied | duplicates discarded | dead | lost | applied twice | sends | most sends of one event | circuit openings | restarts | drain (virtual) | invariants | expectations | trace hash |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|---|\n")
	var total sim.Stats
	var allHeld = true
	for _, sc := range scenarios.All() {
		r, fails, err := sc.Run(1, sim.Options{})
		if err != nil {
			return err
		}
		s := r.Stats
		held := len(r.Violations) == 0
		allHeld = allHeld && held && len(fails) == 0
		p("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %v | %s | %s | `%s` |\n",
			sc.Name, r.Seed, s.Accepted, s.Applied, s.Duplicates, s.Dead, s.Lost, s.AppliedTwice,
			s.Sends, s.MaxSends, s.CircuitOpenings, s.Restarts, s.Drain.Round(time.Millisecond),
			heldText(r.Violations), expectText(fails), r.Hash)
		total.Accepted += s.Accepted
		total.Applied += s.Applied
		total.Duplicates += s.Duplicates
		total.Dead += s.Dead
		total.Lost += s.Lost
		total.AppliedTwice += s.AppliedTwice
		total.Sends += s.Sends
		total.MaxSends = max(total.MaxSends, s.MaxSends)
		total.CircuitOpenings += s.CircuitOpenings
		total.Restarts += s.Restarts
	}
	p("| **total** | | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | | %s | | |\n\n",
		total.Accepted, total.Applied, total.Duplicates, total.Dead, total.Lost, total.AppliedTwice,
		total.Sends, total.MaxSends, total.CircuitOpenings, total.Restarts, verdictText(allHeld))

	n := scenarios.StandardSeeds
	p("## Every scenario, seeds 1 to %d\n\n", n)
	p("The same runs `go test ./scenarios` makes. A dead letter is kept in the store with its reason; it is never lost.\n\n")
	p("| scenario | runs | runs with every invariant held | runs with every expectation held | accepted | applied | dead | lost | applied twice | most sends of one event (MaxAttempts) | longest drain (virtual) |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	violated := map[string]int{}
	for _, sc := range scenarios.All() {
		var agg sim.Stats
		var held, met int
		maxAttempts := 0
		for seed := uint64(1); seed <= uint64(n); seed++ {
			r, fails, err := sc.Run(seed, sim.Options{})
			if err != nil {
				return err
			}
			s := r.Stats
			maxAttempts = r.World.Policy.MaxAttempts
			if len(r.Violations) == 0 {
				held++
			}
			for _, v := range r.Violations {
				violated[v.Invariant]++
			}
			if len(fails) == 0 {
				met++
			}
			agg.Accepted += s.Accepted
			agg.Applied += s.Applied
			agg.Dead += s.Dead
			agg.Lost += s.Lost
			agg.AppliedTwice += s.AppliedTwice
			agg.MaxSends = max(agg.MaxSends, s.MaxSends)
			agg.Drain = max(agg.Drain, s.Drain)
		}
		p("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d (%d) | %v |\n",
			sc.Name, n, held, met, agg.Accepted, agg.Applied, agg.Dead, agg.Lost, agg.AppliedTwice,
			agg.MaxSends, maxAttempts, agg.Drain.Round(time.Millisecond))
	}
	p("\nViolations per invariant over these runs:")
	for _, name := range invariants.Names {
		p(" %s %d;", name, violated[name])
	}
	p("\n\n")

	p("## The scenarios\n\n")
	for _, sc := range scenarios.All() {
		p("- **%s**: %s\n  Faults: %s.\n  Must show: %s.\n", sc.Name, sc.Why, sc.Faults, sc.Expect)
	}
	p("\nReplay any run, trace included: `go run ./cmd/simrun run -scenario NAME -seed N -trace`.\n")
	_, err := io.WriteString(w, b.String())
	return err
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

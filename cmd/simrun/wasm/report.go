//go:build js && wasm

package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
	"github.com/courierlab/courier/sim/timeline"
)

// report is one run as the page shows it.
type report struct {
	Error   string `json:"error,omitempty"` // bad input; nothing else is set
	Title   string `json:"title"`           // "scenario outage, seed 1" or "swarm seed 7"
	Why     string `json:"why,omitempty"`   // the scenario's reason, its faults and what it expects
	Faults  string `json:"faults,omitempty"`
	World   string `json:"world"` // the drawn world, in words
	Hash    string `json:"hash"`  // the trace hash simrun prints
	Verdict string `json:"verdict"`
	Exit    int    `json:"exit"`    // the exit code simrun would give this run
	Command string `json:"command"` // the CLI command that runs it again
	Stats   []stat `json:"stats"`
	// Invariants has one row per invariant in the checker's order, then
	// one for a crash if the run crashed.
	Invariants  []verdictRow `json:"invariants"`
	Expectation *verdictRow  `json:"expectation,omitempty"` // scenarios only
	Legend      string       `json:"legend"`
	SVG         string       `json:"svg"`
	Trace       []string     `json:"trace"`
}

type stat struct {
	Label string `json:"label"`
	Value string `json:"value"`
	Note  string `json:"note,omitempty"` // a smaller second figure
	Bad   bool   `json:"bad,omitempty"`  // a figure that must be zero, and is not
}

type verdictRow struct {
	Name     string   `json:"name"`
	Held     bool     `json:"held"`
	Failures []string `json:"failures,omitempty"`
}

// run runs one scenario or swarm seed with its trace kept, and turns a
// crash into a report, as the CLI turns it into exit code 5.
func run(kind, name, seedText string) (rep report) {
	seed, err := parseSeed(seedText)
	if err != nil {
		return report{Error: err.Error()}
	}
	switch kind {
	case "scenario":
		sc, err := scenarios.Lookup(name)
		if err != nil {
			return report{Error: err.Error()}
		}
		rep = report{
			Title:   fmt.Sprintf("scenario %s, seed %d", sc.Name, seed),
			Why:     sc.Why,
			Faults:  sc.Faults,
			Command: fmt.Sprintf("go run ./cmd/simrun run -scenario %s -seed %d -trace", sc.Name, seed),
		}
		defer func() {
			if p := recover(); p != nil {
				crash := invariants.Violation{Invariant: scenarios.Crash, Step: -1, Detail: fmt.Sprint(p)}
				rep.fill(sim.Result{World: sc.World(seed), Violations: []invariants.Violation{crash}}, nil)
			}
		}()
		r, fails, err := sc.Run(seed, sim.Options{Trace: true, Logs: true})
		if err != nil {
			return report{Error: err.Error()}
		}
		rep.fill(r, fails)
		rep.Expectation = &verdictRow{Name: sc.Expect, Held: len(fails) == 0, Failures: fails}
		return rep
	case "swarm":
		res, full := scenarios.RunSwarmSeed(seed, sim.Options{Trace: true, Logs: true})
		full.Violations, full.World = res.Violations, res.World // set even when the run crashed
		rep = report{
			Title:   fmt.Sprintf("swarm seed %d", seed),
			Command: fmt.Sprintf("go run ./cmd/simrun sweep -from %d -seeds 1", seed),
		}
		rep.fill(full, nil)
		return rep
	default:
		return report{Error: fmt.Sprintf("kind %q: want \"scenario\" or \"swarm\"", kind)}
	}
}

func (rep *report) fill(r sim.Result, fails []string) {
	s := r.Stats
	rep.World, rep.Hash, rep.Trace = r.World.Describe(), r.Hash, r.Trace
	rep.Stats = []stat{
		{Label: "accepted", Value: fmt.Sprint(s.Accepted)},
		{Label: "applied", Value: fmt.Sprint(s.Applied)},
		{Label: "dead", Value: fmt.Sprint(s.Dead)},
		{Label: "lost", Value: fmt.Sprint(s.Lost), Bad: s.Lost > 0},
		{Label: "applied twice", Value: fmt.Sprint(s.AppliedTwice), Bad: s.AppliedTwice > 0},
		{Label: "duplicates discarded", Value: fmt.Sprint(s.Duplicates)},
		{Label: "sends", Value: fmt.Sprint(s.Sends), Note: fmt.Sprintf("at most %d for one event", s.MaxSends)},
		{Label: "probes", Value: fmt.Sprint(s.Probes)},
		{Label: "circuit openings", Value: fmt.Sprint(s.CircuitOpenings)},
		{Label: "restarts", Value: fmt.Sprint(s.Restarts), Note: fmt.Sprintf("%d mid-batch", s.Crashes)},
		{Label: "drained in", Value: s.Drain.Round(time.Millisecond).String(), Note: "virtual time"},
		{Label: "stopped at", Value: s.End.Round(time.Millisecond).String(), Note: "virtual time"},
	}
	if s.LeaseGrants > 0 {
		rep.Stats = append(rep.Stats,
			stat{Label: "leases granted", Value: fmt.Sprint(s.LeaseGrants)},
			stat{Label: "stale-lease calls refused", Value: fmt.Sprint(s.FencedWrites)},
			stat{Label: "sends by fenced-off owners", Value: fmt.Sprint(s.ZombieSends)})
	}
	rep.Invariants = nil
	names := invariants.Names
	if slices.ContainsFunc(r.Violations, func(v invariants.Violation) bool { return v.Invariant == scenarios.Crash }) {
		names = append(slices.Clip(names), scenarios.Crash)
	}
	for _, name := range names {
		row := verdictRow{Name: name, Held: true}
		for _, v := range r.Violations {
			if v.Invariant == name {
				row.Held = false
				row.Failures = append(row.Failures, v.String())
			}
		}
		rep.Invariants = append(rep.Invariants, row)
	}
	rep.Exit, rep.Verdict = verdict(r.Violations, fails)
	if r.Run.Entries != nil {
		rep.Legend, rep.SVG = timeline.Legend(), timeline.Streams(r)
	}
}

// verdict mirrors simrun's exit codes: a crash, then a safety violation,
// then liveness, then the scenario's own expectation.
func verdict(vs []invariants.Violation, fails []string) (int, string) {
	liveness, safety := false, false
	for _, v := range vs {
		switch v.Invariant {
		case scenarios.Crash:
			return 5, "crashed"
		case invariants.Liveness, invariants.LeaseKept: // availability, not safety
			liveness = true
		default:
			safety = true
		}
	}
	switch {
	case safety:
		return 1, "safety violated"
	case liveness:
		return 3, "liveness violated"
	case len(fails) > 0:
		return 4, "expectation failed"
	}
	return 0, "every invariant held"
}

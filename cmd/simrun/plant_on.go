//go:build plant

package main

import (
	"fmt"
	"strings"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/scenarios"
)

// switchBug switches the planted bug a replay file names on, and returns
// the function that switches it off again.
func switchBug(b plant.Bug) (restore func(), err error) { return plant.Set(b) }

// plantedResults is RESULTS.md's catch matrix: each planted bug switched
// on in turn and swarm seeds run until its expected invariant flags one.
func plantedResults() (string, error) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s", plantedHeading)
	p("Each bug is switched into the machine, the runtime, the store, the recovery path, the HTTP channel, the receiver kit or a fake (`internal/plant`; never reachable from the public API, and compiled only into a build with `-tags plant`), ")
	p("then swarm seeds run from 1 until the expected invariant flags one (at most %d; for %s, which needs a rate limit the swarm never draws, the rate-limited scenario's seeds). ", scenarios.CatchBound, plant.RateResetOnProbe)
	p("Try one in a deliberately broken build: `go run -tags plant -ldflags=-X=github.com/courierlab/courier/internal/plant.build=NAME ./cmd/simrun sweep -seeds 50`.\n\n")
	p("| planted bug | expected invariant | caught at seed | invariants violated in that run |\n|---|---|--:|---|\n")
	for _, bug := range plant.All() {
		c, err := scenarios.CatchBug(bug, scenarios.CatchBound)
		if err != nil {
			return "", err
		}
		seed := "**not caught**"
		if c.Caught() {
			seed = fmt.Sprint(c.Seed)
		}
		p("| %s | %s | %s | %s |\n", bug, c.Expected, seed, strings.Join(c.Also, ", "))
	}
	p("\n")
	return b.String(), nil
}

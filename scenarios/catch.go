package scenarios

import "github.com/courierlab/courier/internal/plant"

// CatchBound is the most swarm seeds any planted bug may survive: the
// catch-matrix test fails if a bug's expected invariant has not caught it
// within this many seeds from seed 1.
const CatchBound = 200

// Catch is how the checker fared against one planted bug.
type Catch struct {
	Bug      plant.Bug
	Expected string // the invariant that must catch it
	// Seed is the first swarm seed (from 1) whose run the expected
	// invariant flagged; 0 if none within the bound.
	Seed uint64
	// Also lists every invariant violated in that run, expected included.
	Also []string
}

// Caught reports whether the expected invariant caught the bug.
func (c Catch) Caught() bool { return c.Seed != 0 }

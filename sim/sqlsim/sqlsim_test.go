// Tests that swarm seeds run on the real SQLite store hold every
// invariant, as they do on memstore, and that each run is the memstore
// run's line for line: the same number of trace lines and the same
// figures (accepted, applied, sends, dead, coverage...), its instants
// within a few microseconds (withinMicroseconds). The hashes
// differ, and are not compared: SQLite keeps instants to the
// microsecond, so the records in the trace print coarser times. A seed
// whose run diverged (a sub-microsecond difference that reorders two
// happenings) would fail here: look at its first differing line before
// calling it a store bug.
package sqlsim_test

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/scenarios"
	"github.com/courierlab/courier/sim"
	"github.com/courierlab/courier/sim/sqlsim"
)

func TestSwarmSeedsOnSQLiteAsOnMemstore(t *testing.T) {
	dir := t.TempDir()
	seeds := uint64(12)
	if testing.Short() {
		seeds = 4
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		_, onSQL := scenarios.RunSwarmSeed(seed, sim.Options{Trace: true, Store: sqlsim.New(dir)})
		for _, v := range onSQL.Violations {
			t.Errorf("seed %d on SQLite: %s", seed, v)
		}
		if onSQL.Stats.Accepted == 0 {
			t.Errorf("seed %d on SQLite: nothing accepted", seed)
		}
		_, onMem := scenarios.RunSwarmSeed(seed, sim.Options{Trace: true})
		if diff := cmp.Diff(onMem.Stats, onSQL.Stats, withinMicroseconds); diff != "" {
			t.Errorf("seed %d: figures differ (-memstore +sqlite):\n%s", seed, diff)
		}
		if len(onMem.Trace) != len(onSQL.Trace) {
			t.Errorf("seed %d: %d trace lines on memstore, %d on SQLite", seed, len(onMem.Trace), len(onSQL.Trace))
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("%d databases left in %s after their runs", len(left), dir)
	}
}

// withinMicroseconds takes two durations for equal if they differ by less
// than 10 µs. SQLite keeps instants to the microsecond, and a worker's
// wake-ups follow the instants the store kept (a NextAt, a stream's due
// instant, a release's until): each one it passes through may bring the
// later happenings up to a microsecond earlier than on memstore, which
// keeps nanoseconds, and a run passes through several in a row (swarm
// seed 7, a slow-call world with released streams: 1.35 µs). A run that
// diverged differs by far more, or in its trace's length.
var withinMicroseconds = cmp.Comparer(func(a, b time.Duration) bool {
	return max(a-b, b-a) < 10*time.Microsecond
})

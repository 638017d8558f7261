package scenarios

import (
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/sim"
)

// CoverageSeeds is the standard sweep whose coverage matrix RESULTS.md
// shows and TestCoverageMatrix holds to the design.
const CoverageSeeds = 1000

// MinCoverage is how often the standard sweep must reach each reachable
// cell: a cell met once in a thousand seeds is too thin to guard anything.
const MinCoverage = 20

// Reachable says, by design, which fault can meet an event in which state.
// A cell marked true must be reached by the standard sweep; a cell marked
// false must never be reached (a send refused while parked would mean the
// machine sent while the circuit was open).
func Reachable(f sim.Fault, s machine.State) bool {
	switch f {
	case sim.FaultOutage, sim.FaultFlap, sim.FaultPause:
		// These strike a send as it leaves (a pause strikes the sends a
		// worker holds as it stalls), and only pending and retry events
		// are sent. Every other fault strikes later (at the
		// receiver, at a restart, at the producer), when the event may
		// have moved on to any state: a late copy of a poison event can be
		// rejected after the event died. (A crash after persist strikes
		// every event the store holds, in every stream: one stream's sends
		// go out while another's backlog is parked.)
		return s == machine.Pending || s == machine.Retry
	case sim.FaultPoison, sim.FaultStubborn:
		// The receiver never applies a poison event, and a stubborn one
		// only after its last rejection, so neither is rejected while
		// delivered.
		return s != machine.Delivered
	}
	return true
}

// SweepCoverage adds up the coverage of swarm seeds 1..n.
func SweepCoverage(n int) sim.Coverage {
	var c sim.Coverage
	for _, r := range Sweep(1, n, 0, nil) {
		c.Add(r.Stats.Coverage)
	}
	return c
}

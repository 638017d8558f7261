package sim

import (
	"slices"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
)

// Fault is a kind of fault the simulator injects, for the coverage matrix.
type Fault uint8

const (
	FaultOutage         Fault = iota // a send refused inside an outage window
	FaultFlap                        // a send failed on the flapping link
	FaultLostAck                     // the receiver's reply was lost
	FaultLate                        // a request held in the network landed late
	FaultRestart                     // the sender lost its memory (scheduled or drawn)
	FaultCrash                       // the sender died between persisting a batch and sending its attempts
	FaultPoison                      // the receiver rejected a poison event
	FaultStubborn                    // the receiver rejected a stubborn event
	FaultDuplicateOffer              // the producer offered an ID already accepted
	FaultPause                       // a worker stalled past its lease, then carried on (cluster)
	FaultWorkerCrash                 // a worker died, its lease left to expire (cluster)
	FaultStoreRefusal                // the shared store refused a write (cluster)
	FaultStall                       // a worker froze inside a call and acted on a stale clock reading (cluster)
	FaultLostStoreReply              // a store call's reply was lost (store.ErrUnknown)
	FaultRenewFailure                // a renewal refused in a burst of renewal failures
	FaultClockStep                   // a worker's clock stepped forward or back (cluster)
	FaultOperator                    // an operator discarded a dead letter or deleted settled records
	numFaults
)

var faultNames = [numFaults]string{
	"outage refusal", "flapping failure", "lost reply", "late arrival", "restart",
	"crash after persist", "poison rejection", "stubborn rejection", "duplicate offer",
	"worker pause", "worker crash", "store refusal", "stale-clock stall",
	"lost store reply", "renewal failure", "clock step", "operator action",
}

func (f Fault) String() string { return faultNames[f] }

// Faults lists every fault kind, in matrix order.
func Faults() []Fault {
	out := make([]Fault, numFaults)
	for i := range out {
		out[i] = Fault(i)
	}
	return out
}

// States lists the event states, in matrix order.
func States() []machine.State {
	return []machine.State{machine.Pending, machine.Retry, machine.Parked, machine.Delivered, machine.Dead}
}

// Coverage counts which fault met an event in which state: the state the
// store held for the event the fault struck, at the instant it struck. A
// restart or crash strikes every event the store holds, counted once per
// distinct state present.
type Coverage [numFaults][machine.Dead + 1]int

// At returns the count of fault f meeting state s.
func (c *Coverage) At(f Fault, s machine.State) int { return c[f][s] }

// Add adds o into c.
func (c *Coverage) Add(o Coverage) {
	for f := range c {
		for s := range c[f] {
			c[f][s] += o[f][s]
		}
	}
}

// cover counts fault f meeting event id in the state the store holds it
// in, if it holds it. Only an enqueue the store acknowledged puts a record
// in it: an event never acknowledged has none, and asking for it would
// cost the store an error to say so (most first offers ask).
func (s *sim) cover(f Fault, id string) {
	if i, ok := s.eventOf(id); ok {
		s.coverEvent(f, i)
	}
}

// coverEvent is cover of the workload's event i.
func (s *sim) coverEvent(f Fault, i int) {
	if !s.acked[i] {
		return
	}
	if st, ok := s.store.State(s.ids[i]); ok {
		s.stats.Coverage[f][st]++
	}
}

// coverAll counts fault f meeting every state some record in the store
// is in.
func (s *sim) coverAll(f Fault) {
	var present [machine.Dead + 1]bool
	for _, name := range s.streams {
		for st, n := range s.store.StateCounts(name) {
			present[st] = present[st] || n > 0
		}
	}
	for st, ok := range present {
		if ok {
			s.stats.Coverage[f][st]++
		}
	}
}

// crash kills node n: its worker and its memory are gone, its lease left
// to expire. It comes back after down as a new incarnation.
func (s *sim) crash(n *node, down time.Duration, why string) {
	if n.down {
		s.note(n, opAlreadyDown)
		return
	}
	s.stats.Restarts++
	s.coverAll(FaultWorkerCrash)
	s.note(n, opCrash, dur(down))
	for i := range s.runs { // it concerns every stream
		s.observeIn(i, invariants.Entry{Kind: invariants.Restarted, Worker: n.name, Detail: why})
	}
	n.down, n.w = true, nil
	n.inc++
	n.inbox = nil // the replies die with the process, their flush with its incarnation
	s.q.cancelWake(n)
	n.frozenUntil, n.stalled = 0, false
	s.q.schedule(s.elapsed+down, func() {
		n.down = false
		s.note(n, opComesBack, str(n.name), num(n.inc))
		s.boot(n)
	})
}

// due returns the first of faults (pauses or stalls, by At) due for n
// now, removing it, if it ends by FaultsEnd. It strikes a node that owns
// a stream, so that it stalls holding it.
func (s *sim) due(faults *[]Pause, n *node) (Pause, bool) {
	if len(*faults) == 0 || !s.holds(n, false) {
		return Pause{}, false
	}
	for i, p := range *faults {
		if s.elapsed < p.At {
			break
		}
		if p.Worker == Owner || s.nodes[p.Worker] == n {
			*faults = slices.Delete(*faults, i, i+1)
			return p, s.elapsed+p.For <= s.w.FaultsEnd
		}
	}
	return Pause{}, false
}

// freeze stalls n for d; then, unless it crashed meanwhile, fn runs.
// fn is told how late the wake came: a slow store call of another node
// may hold the world past it (slow.go), which a real node's stall does
// not wait for.
func (s *sim) freeze(n *node, d time.Duration, fn func(late time.Duration)) {
	n.frozenUntil, n.stalled = s.elapsed+d, true
	inc, until := n.inc, n.frozenUntil
	s.q.schedule(until, func() {
		if inc != n.inc || n.down {
			return // it crashed in its stall
		}
		n.stalled = false
		s.note(n, opWakes)
		fn(s.elapsed - until)
	})
}

package worker

import (
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
)

// Effects is what one call asks of its driver, besides the store calls the
// worker made itself. The driver performs every Send and Probe (in any
// order, each at most once) and reports each one's outcome with Deliver,
// then calls Advance again at Next. Its lists are the driver's to keep:
// the worker keeps no reference to them.
type Effects struct {
	// Sends are attempts whose attempt number is already durable. A
	// driver must not start one at or after its Deadline.
	Sends []Send
	// Probes are health probes owed to a stream's circuit breaker.
	Probes []Probe
}

// Send is one attempt to put on the channel.
type Send struct {
	channel.Attempt
	// Token is the fencing token of the lease the attempt was persisted
	// under.
	Token uint64
	// Gen names the machine that started the attempt; Deliver drops a
	// reply that names another.
	Gen uint64
	// Deadline is when the worker's lease on the stream expires by the
	// worker's own clock (less the clock margin). The driver must not
	// start the send at or after it: the stream may belong to another
	// worker by then. It is a bound for receivers: a copy of an event
	// leaves this worker no later than one lease TTL after the lease was
	// last granted or renewed.
	Deadline time.Time
	// Timeout bounds the call (the stream's AttemptTimeout): the machine
	// counts the attempt as timed out after it anyway.
	Timeout time.Duration
	// At is when the machine started the attempt, by the worker's clock,
	// and RatePer the stream's rate window (machine.Config.RatePer, zero
	// with no rate limit). The machine's rate limit holds for these
	// starts; a driver that hands sends out after the store work of its
	// call keeps a limited stream's sends at least as far apart as their
	// At (courier's loop does), so that the limit also holds on the wire,
	// however long one call's store work took beside another's.
	At      time.Time
	RatePer time.Duration
}

// Reply builds the Deliver input that reports o as this send's outcome.
func (s Send) Reply(o channel.Outcome) Reply {
	return Reply{Stream: s.Stream, Gen: s.Gen, ID: s.ID, Attempt: s.Attempt.Attempt, Outcome: o}
}

// Probe is one health probe to run against the channel.
type Probe struct {
	Stream   string
	Token    uint64
	Gen      uint64
	N        uint64
	Deadline time.Time // as Send.Deadline
	Timeout  time.Duration
}

// Reply builds the Deliver input that reports o as this probe's outcome.
func (p Probe) Reply(o channel.Outcome) Reply {
	return Reply{Stream: p.Stream, Gen: p.Gen, Probe: p.N, Outcome: o}
}

// Reply is the outcome of one Send or Probe, as its Reply method builds it.
type Reply struct {
	Stream  string
	Gen     uint64
	ID      string // a send's event
	Attempt int    // a send's attempt
	Probe   uint64 // a probe's number; 0 for a send
	Outcome channel.Outcome
}

// Kind is what an Event reports.
type Kind uint8

const (
	// LeaseGranted: the worker claimed Stream under Token.
	LeaseGranted Kind = iota + 1
	// LeaseRenewed: the store extended the lease.
	LeaseRenewed
	// LeaseLost: the worker no longer owns Stream (Detail says why, Err
	// is the store's refusal if it gave one: store.ErrReplayed says an
	// operator's replay took the stream); it dropped the machine and
	// sends nothing more for it.
	LeaseLost
	// LeaseReleased: the worker gave Stream back (idle, or shutting down).
	LeaseReleased
	// Rebuilt: a fresh machine was recovered from the store's records
	// (Count of them); Circuit is its circuit.
	Rebuilt
	// Persisted: Records were saved through the lease.
	Persisted
	// CircuitChanged: Stream's circuit went to Circuit.
	CircuitChanged
	// Replied: a reply reached the machine (Outcome).
	Replied
	// ReplyDropped: a reply named a machine or lease that is gone.
	ReplyDropped
	// StoreFailed: the store call Op failed with Err.
	StoreFailed
	// Sent: the worker handed attempt Attempt of ID (Seq) to its driver
	// under Token. The attempt counts as out from here (the machine
	// counts it in flight), even if the driver must not start it after
	// its Deadline.
	Sent
	// Probed: the worker handed probe N (Detail) to its driver.
	Probed
	// Purged: the worker deleted Count settled records past the
	// retention.
	Purged
	// Faulted: the worker fed its machine an input it refused (Err); a
	// bug in the worker, recovered from by rebuilding the machine.
	Faulted
	// ProbeReplied: the answer to probe N (Detail) reached the machine
	// (Outcome; only OutcomeDelivered counts as healthy).
	ProbeReplied
	// Adopted: the machine took over ID (Seq), a record a producer
	// enqueued after the machine was built.
	Adopted
)

var kindNames = [...]string{
	LeaseGranted: "lease-granted", LeaseRenewed: "lease-renewed", LeaseLost: "lease-lost",
	LeaseReleased: "lease-released", Rebuilt: "rebuilt", Persisted: "persisted",
	CircuitChanged: "circuit", Replied: "replied", ReplyDropped: "reply-dropped",
	StoreFailed: "store-failed", Sent: "sent", Probed: "probed", Purged: "purged", Faulted: "faulted",
	ProbeReplied: "probe-replied", Adopted: "adopted",
}

func (k Kind) String() string {
	if k >= LeaseGranted && k <= Adopted {
		return kindNames[k]
	}
	return "Kind(?)"
}

// Event is one thing the worker did or learnt, for logs, metrics and test
// recorders. It never carries a payload: Records are passed with their
// payloads for recorders that must compare them, and an Observer that logs
// must not print them. An Event is the Observer's to keep, Records
// included: the worker keeps no reference to the list it hands over.
type Event struct {
	Kind    Kind
	At      time.Time // the worker's clock
	Owner   string    // the worker's Config.Owner: which worker, where one observer serves several
	Stream  string
	Token   uint64
	Records []machine.Record // Persisted; Rebuilt: what it recovered
	Circuit machine.Circuit  // CircuitChanged, Rebuilt
	Outcome channel.Outcome  // Replied
	ID      string           // Replied, Sent, Adopted
	Seq     uint64           // Sent, Adopted
	Attempt int              // Replied, Sent
	Op      string           // StoreFailed: the store method
	Err     error            // StoreFailed, Faulted; LeaseLost: the store's refusal, if any
	Count   int              // Purged
	Until   time.Time        // LeaseReleased: the instant the worker asked the store to hold the stream until (ReleaseUntil); zero for a Release
	Detail  string
}

// Observer receives the worker's events, synchronously, on the goroutine
// that calls the worker. It must not call the worker.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe implements Observer.
func (f ObserverFunc) Observe(e Event) { f(e) }

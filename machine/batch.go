package machine

import (
	"fmt"
	"strings"
	"time"
)

// Batch is what one Step asks of the caller. The caller must honour this
// order:
//
//  1. Persist every record in Persist, atomically and durably (all or none).
//     If that fails, do nothing else: drop the machine and rebuild it with
//     Recover from what the store holds.
//  2. Then acknowledge the producer for each entry of Acks.
//  3. Then perform Sends and Probes, in any order. Each Send names its
//     attempt; report its outcome with a Result naming the same attempt.
//  4. Call Step with a Tick at or after WakeAt, if WakeAt is not zero.
//
// Persisting before acknowledging makes acceptance durable before it is
// confirmed; persisting before sending makes the attempt count durable, so
// MaxAttempts holds across crashes.
type Batch struct {
	// Persist holds the new version of every record this step changed,
	// once each, in Seq order.
	Persist []Record
	// Acks are producer acknowledgements, in input order.
	Acks []Ack
	// Sends are attempts to put on the channel, in Seq order.
	Sends []Send
	// Probes are health probes to run, at most one per step.
	Probes []Probe
	// Circuit lists the circuit's transitions in this step, in order.
	Circuit []CircuitChange
	// WakeAt is the next instant the machine wants a Tick; zero if it has
	// nothing to do until the next input.
	WakeAt time.Time
	// Ignored, when not empty, says why the input changed nothing (a stale
	// or duplicate outcome, an outcome for an unknown event).
	Ignored string
}

// Ack acknowledges an accepted event to its producer.
type Ack struct {
	ID  string
	Seq uint64
	// Duplicate is true when the ID had been accepted before; nothing
	// was changed and nothing was persisted.
	Duplicate bool
}

// Send asks the caller to put attempt Attempt of an event on the channel.
// Seq is the event's place in the stream: a receiver that fences on it
// (applies only sequences above the last it applied) can never apply a
// late attempt out of order.
type Send struct {
	ID      string
	Seq     uint64
	Attempt int
	Payload []byte
}

// Probe asks the caller to run health probe N against the channel and to
// report it with ProbeResult{N: N}.
type Probe struct {
	N uint64
}

// CircuitChange is one transition of the circuit.
type CircuitChange struct {
	From, To Circuit
}

// Empty reports whether the batch asks nothing of the caller.
func (b Batch) Empty() bool {
	return len(b.Persist) == 0 && len(b.Acks) == 0 && len(b.Sends) == 0 &&
		len(b.Probes) == 0 && len(b.Circuit) == 0 && b.WakeAt.IsZero() && b.Ignored == ""
}

// Format renders the batch as stable lines, one effect each, in the order
// the caller must honour, times relative to epoch.
func (b Batch) Format(epoch time.Time) string {
	var s strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&s, format, args...)
		s.WriteByte('\n')
	}
	if b.Ignored != "" {
		line("ignored: %s", b.Ignored)
	}
	for _, c := range b.Circuit {
		line("circuit %s -> %s", c.From, c.To)
	}
	for _, r := range b.Persist {
		line("persist %s", r.Format(epoch))
	}
	for _, a := range b.Acks {
		if a.Duplicate {
			line("ack %s seq=%d duplicate", a.ID, a.Seq)
		} else {
			line("ack %s seq=%d", a.ID, a.Seq)
		}
	}
	for _, x := range b.Sends {
		line("send %s#%d seq=%d", x.ID, x.Attempt, x.Seq)
	}
	for _, p := range b.Probes {
		line("probe %d", p.N)
	}
	if !b.WakeAt.IsZero() {
		line("wake %s", FormatInstant(b.WakeAt, epoch))
	}
	return s.String()
}

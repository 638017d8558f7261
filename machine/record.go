package machine

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// State is where an event is in its life. Delivered and Dead are terminal:
// no input moves an event out of them.
type State uint8

const (
	// Pending: accepted, waiting for its next attempt with nothing against
	// it (never tried, or released from parking).
	Pending State = iota + 1
	// Retry: its last attempt failed; it waits for its backoff to pass.
	Retry
	// Parked: the circuit is open; it waits for a probe to find the
	// channel healthy again.
	Parked
	// Delivered: the channel confirmed it. Terminal.
	Delivered
	// Dead: courier gave up on it, for the reason in Record.Reason. The
	// record is kept, never removed. Terminal.
	Dead
)

var stateNames = [...]string{Pending: "pending", Retry: "retry", Parked: "parked", Delivered: "delivered", Dead: "dead"}

func (s State) String() string {
	if s >= Pending && s <= Dead {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Terminal reports whether s is Delivered or Dead.
func (s State) Terminal() bool { return s == Delivered || s == Dead }

func (s State) valid() bool { return s >= Pending && s <= Dead }

// DeadReason says why an event is dead.
type DeadReason uint8

const (
	// NotDead is the reason of every event that is not dead.
	NotDead DeadReason = iota
	// Exhausted: MaxAttempts attempts were made and none was confirmed.
	Exhausted
	// Expired: MaxAge passed, or the next attempt would have come after it.
	Expired
	// Rejected: the channel refused the event permanently.
	Rejected
)

var reasonNames = [...]string{NotDead: "", Exhausted: "exhausted", Expired: "expired", Rejected: "rejected"}

func (r DeadReason) String() string {
	if r <= Rejected {
		return reasonNames[r]
	}
	return fmt.Sprintf("DeadReason(%d)", uint8(r))
}

// Record is the durable form of one event: what the store must hold for
// Recover to rebuild the machine. Payload is never modified after
// acceptance; callers must not modify it either.
type Record struct {
	ID         string
	Seq        uint64 // acceptance order within the stream, from 1
	Payload    []byte
	AcceptedAt time.Time
	// Attempts is the number of attempts started. It is persisted before
	// each send, so a crash mid-attempt costs that attempt.
	Attempts int
	// NextAt is the earliest instant of the next attempt. While an attempt
	// is in flight it is the instant that attempt times out, so a machine
	// recovered after a crash waits at least that long before resending.
	NextAt time.Time
	// State and Reason come last and together: two bytes that share one
	// word, where apart each took a word. The record is then 112 bytes,
	// and the machine's entry that holds it fits a 128-byte allocation.
	State  State
	Reason DeadReason // set only when State is Dead
}

// Deadline is the instant past which the event may no longer be sent.
func (r Record) Deadline(c Config) time.Time { return r.AcceptedAt.Add(c.MaxAge) }

// Format renders the record as one stable line, times relative to epoch.
func (r Record) Format(epoch time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s seq=%d %s attempts=%d", r.ID, r.Seq, r.State, r.Attempts)
	if !r.State.Terminal() {
		b.WriteString(" next=")
		b.WriteString(FormatInstant(r.NextAt, epoch))
	}
	if r.State == Dead {
		b.WriteString(" reason=")
		b.WriteString(r.Reason.String())
	}
	return b.String()
}

// FormatInstant renders t as a duration since epoch ("1m2.5s"), the form
// used in every trace and test vector.
func FormatInstant(t, epoch time.Time) string {
	return formatDuration(t.Sub(epoch))
}

func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}

// Circuit is the health of the channel as the machine sees it.
type Circuit uint8

const (
	// Closed: events are sent.
	Closed Circuit = iota + 1
	// Checking: a streak of failures stopped the sending; a probe is out.
	Checking
	// Open: a probe failed; events are parked and only probes are sent.
	Open
)

var circuitNames = [...]string{Closed: "closed", Checking: "checking", Open: "open"}

func (c Circuit) String() string {
	if c >= Closed && c <= Open {
		return circuitNames[c]
	}
	return "Circuit(" + strconv.Itoa(int(c)) + ")"
}

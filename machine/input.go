package machine

import (
	"fmt"
	"time"
)

// Input is one thing the caller tells the machine: Accept, Adopt, Tick,
// Result or ProbeResult. Every input carries the caller's clock reading; readings
// must never go backwards.
type Input interface {
	at() time.Time
	// Format renders the input as one stable line, times relative to epoch.
	Format(epoch time.Time) string
}

// Accept offers a new event. The producer may be acknowledged only after
// the batch's Persist is durable.
type Accept struct {
	At      time.Time
	ID      string
	Payload []byte
}

// Adopt hands the machine an event that a shared store accepted on its
// behalf. In a runtime where producers enqueue into a store that several
// workers share, the store assigns Seq and acknowledges the producer, and
// the worker that owns the stream adopts each new record as it finds it.
// The record must be pending with no attempt, its Seq above every Seq the
// machine knows. Nothing is acknowledged; nothing is persisted unless the
// circuit is open (the event is then parked) or its payload exceeds
// MaxPayloadBytes (the store took it, so it cannot be refused, and it
// cannot be sent: it is dead, rejected, and kept).
type Adopt struct {
	At     time.Time
	Record Record
}

// Tick says that time has advanced to At. The caller sends one at or after
// each Batch.WakeAt; extra ticks are harmless.
type Tick struct {
	At time.Time
}

// Outcome is what the channel said of one attempt.
type Outcome uint8

const (
	// OutcomeDelivered: the receiver confirmed the event.
	OutcomeDelivered Outcome = iota + 1
	// OutcomeFailed: a retryable failure (5xx, 429, connection refused, ...).
	OutcomeFailed
	// OutcomeRefused: a permanent rejection; the event goes dead at once.
	OutcomeRefused
	// OutcomeTimedOut: no answer; the receiver may or may not have applied it.
	OutcomeTimedOut
)

var outcomeNames = [...]string{OutcomeDelivered: "delivered", OutcomeFailed: "failed", OutcomeRefused: "refused", OutcomeTimedOut: "timeout"}

func (o Outcome) String() string {
	if o >= OutcomeDelivered && o <= OutcomeTimedOut {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Result reports the outcome of attempt Attempt of event ID, as named by a
// Send effect.
type Result struct {
	At      time.Time
	ID      string
	Attempt int
	Outcome Outcome
	// RetryAfter is the receiver's hint, only with OutcomeFailed. Zero: none.
	RetryAfter time.Duration
}

// ProbeResult reports the outcome of probe N, as named by a Probe effect.
type ProbeResult struct {
	At      time.Time
	N       uint64
	Healthy bool
}

func (in Accept) at() time.Time      { return in.At }
func (in Adopt) at() time.Time       { return in.At }
func (in Tick) at() time.Time        { return in.At }
func (in Result) at() time.Time      { return in.At }
func (in ProbeResult) at() time.Time { return in.At }

// Format implements Input.
func (in Accept) Format(epoch time.Time) string {
	return fmt.Sprintf("accept %s bytes=%d at=%s", in.ID, len(in.Payload), FormatInstant(in.At, epoch))
}

// Format implements Input.
func (in Adopt) Format(epoch time.Time) string {
	return fmt.Sprintf("adopt %s seq=%d bytes=%d at=%s", in.Record.ID, in.Record.Seq, len(in.Record.Payload), FormatInstant(in.At, epoch))
}

// Format implements Input.
func (in Tick) Format(epoch time.Time) string {
	return "tick at=" + FormatInstant(in.At, epoch)
}

// Format implements Input.
func (in Result) Format(epoch time.Time) string {
	s := fmt.Sprintf("result %s#%d %s", in.ID, in.Attempt, in.Outcome)
	if in.RetryAfter != 0 {
		s += " retry-after=" + formatDuration(in.RetryAfter)
	}
	return s + " at=" + FormatInstant(in.At, epoch)
}

// Format implements Input.
func (in ProbeResult) Format(epoch time.Time) string {
	health := "down"
	if in.Healthy {
		health = "healthy"
	}
	return fmt.Sprintf("probe-result %d %s at=%s", in.N, health, FormatInstant(in.At, epoch))
}

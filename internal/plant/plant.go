// Package plant holds courier's catalogue of planted bugs: deliberate
// faults that can be switched into the machine, the fakes or the recovery
// path to prove that the invariant checker catches them. It is internal:
// nothing outside this module can switch a bug on.
//
// The switches exist only in a build with the tag plant (on.go). A normal
// build (off.go) has no switch at all: On is a constant false that the
// compiler inlines away, so no flag, linker option or replay file can make
// a shipped binary misbehave. In a plant build a bug is switched on in one
// of two ways:
//
//   - in a test, with Set, which returns the function that switches it off
//     (such a test lives in a file tagged plant);
//   - in a deliberately broken build, with the linker:
//     go run -tags plant -ldflags=-X=github.com/courierlab/courier/internal/plant.build=NAME ./cmd/simrun sweep -seeds 200
//
// Set must not be called while a run is in progress: the hooks read the
// active bug every time they are reached.
package plant

import (
	"fmt"
	"slices"
	"strings"
)

// Bug names one planted bug.
type Bug string

// The catalogue. Each bug's comment says where it lives and which
// invariant must catch it (see Expected).
const (
	// AckBeforePersist: the store acknowledges an enqueue it could not
	// make durable (memstore, during an outage).
	AckBeforePersist Bug = "ack-before-persist"
	// SendBeforePersist: the worker hands out sends before the attempt
	// count is durable, so a failed write grants a free attempt (worker).
	SendBeforePersist Bug = "send-before-persist"
	// AcceptNotIdempotent: enqueueing a known ID makes a new event
	// (memstore).
	AcceptNotIdempotent Bug = "accept-not-idempotent"
	// UnboundedRetries: MaxAttempts is ignored; a failing event is
	// retried until MaxAge (machine).
	UnboundedRetries Bug = "unbounded-retries"
	// PoisonBlocksForever: an event that exhausts its attempts is not
	// dead-lettered and never expires; it stays in retry and holds the
	// stream (machine).
	PoisonBlocksForever Bug = "poison-blocks-forever"
	// DrainOutOfOrder: when the circuit closes, the parked backlog is
	// released newest first (machine).
	DrainOutOfOrder Bug = "drain-out-of-order"
	// SendWhileOpen: the circuit opens but dispatch ignores it (machine).
	SendWhileOpen Bug = "send-while-open"
	// RecoveryForgetsInFlight: the runtime's loader drops the events that
	// had an attempt out when the sender died (worker, recovery path).
	RecoveryForgetsInFlight Bug = "recovery-forgets-in-flight"
	// ReceiverNoDedup: the receiver applies every delivery, duplicates
	// included (fake receiver).
	ReceiverNoDedup Bug = "receiver-no-dedup"
	// DeadLettersDropped: the store deletes a record when it becomes dead
	// (memstore).
	DeadLettersDropped Bug = "dead-letters-dropped"
	// SkipFencing: the shared store accepts a write from a stale lease
	// (memstore), so a zombie owner's writes and new sends go through.
	SkipFencing Bug = "skip-fencing"
	// ExpireEarly: the runtime hands the machine half the stream's MaxAge,
	// so an event's deadline comes early (worker).
	ExpireEarly Bug = "expire-early"
	// ExhaustEarly: an event is given up one attempt before MaxAttempts
	// (machine).
	ExhaustEarly Bug = "exhaust-early"
	// WindowOverflow: twice the window's attempts go out at once, two in
	// strict order (machine).
	WindowOverflow Bug = "window-overflow"
)

// Expected maps each bug to the invariant that must catch it.
var Expected = map[Bug]string{
	AckBeforePersist:        "nothing-lost",
	SendBeforePersist:       "bounded-sends",
	AcceptNotIdempotent:     "applied-once",
	UnboundedRetries:        "bounded-sends",
	PoisonBlocksForever:     "liveness",
	DrainOutOfOrder:         "order",
	SendWhileOpen:           "bounded-sends",
	RecoveryForgetsInFlight: "liveness",
	ReceiverNoDedup:         "applied-once",
	DeadLettersDropped:      "dead-kept",
	SkipFencing:             "bounded-sends",
	ExpireEarly:             "dead-deserved",
	ExhaustEarly:            "dead-deserved",
	WindowOverflow:          "bounded-sends",
}

// All lists the catalogue in a fixed order.
func All() []Bug {
	out := make([]Bug, 0, len(Expected))
	for b := range Expected {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// Check reports whether b names a bug of the catalogue ("" is none).
func Check(b Bug) error {
	if _, ok := Expected[b]; ok || b == "" {
		return nil
	}
	names := make([]string, 0, len(Expected))
	for _, x := range All() {
		names = append(names, string(x))
	}
	return fmt.Errorf("unknown planted bug %q; known: %s", b, strings.Join(names, ", "))
}

package channel

import (
	"context"
	"time"

	"github.com/courierlab/courier/machine"
)

// Channel carries attempts and probes to the downstream system.
type Channel interface {
	// Send puts one attempt of one event on the channel and reports the
	// receiver's verdict. The same event is sent with the same ID and
	// payload on every attempt; Attempt numbers it.
	Send(ctx context.Context, a Attempt) Outcome
	// Probe asks whether the path to stream's receiver is healthy, without
	// sending an event. Only OutcomeDelivered counts as healthy.
	Probe(ctx context.Context, stream string) Outcome
}

// Attempt is one try at delivering one event, as machine.Send names it.
type Attempt struct {
	Stream  string
	ID      string
	Seq     uint64 // the event's place in its stream, for a fencing receiver
	Attempt int    // 1 for the first try
	Payload []byte
}

// Outcome is what the channel learnt of one attempt or probe.
type Outcome struct {
	// Result is the verdict the machine acts on.
	Result machine.Outcome
	// RetryAfter is the receiver's hint, with machine.OutcomeFailed only;
	// zero when there was none. The machine caps it.
	RetryAfter time.Duration
	// Status is the transport's status code (an HTTP status), 0 when the
	// attempt got no answer.
	Status int
	// Detail is a short, bounded text for operators: why it failed, where
	// a redirect pointed. Never a payload, a header value or a secret.
	Detail string
}

// MaxDetailBytes bounds Outcome.Detail; Truncate enforces it.
const MaxDetailBytes = 256

// Truncate cuts s to at most MaxDetailBytes bytes, on a UTF-8 boundary.
func Truncate(s string) string {
	if len(s) <= MaxDetailBytes {
		return s
	}
	cut := MaxDetailBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 { // a continuation byte: back up to the rune's start
		cut--
	}
	return s[:cut]
}

// Checker is implemented by a Channel that can tell at acceptance that an
// event could never travel (a payload over its size limit, an ID it cannot
// carry). The runtime calls Check before storing an event and refuses the
// event to its producer with that error, so that what was accepted is
// never dead-lettered later for a reason known up front.
type Checker interface {
	Check(stream, id string, payload []byte) error
}

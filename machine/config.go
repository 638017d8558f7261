package machine

import (
	"errors"
	"fmt"
	"time"
)

// Ordering says how many events of a stream may be in flight at once and
// in which order they are sent.
type Ordering uint8

const (
	// Strict sends one event at a time, in acceptance order. An event that
	// keeps failing holds the events behind it until it is delivered or
	// dead; a dead event is skipped.
	Strict Ordering = iota + 1
	// Independent sends up to Config.Window events at once, picking due
	// events in acceptance order. A failing event does not hold the others.
	Independent
)

func (o Ordering) String() string {
	switch o {
	case Strict:
		return "strict"
	case Independent:
		return "independent"
	default:
		return fmt.Sprintf("Ordering(%d)", uint8(o))
	}
}

// MaxIDBytes bounds the length of an event ID. IDs are opaque and
// case-sensitive; the bound keeps one bad producer from filling the store
// with keys.
const MaxIDBytes = 256

// Config is the delivery policy of one stream. Every limit is a named field
// with its unit; New and Recover reject a config that Validate rejects.
type Config struct {
	// Ordering is Strict or Independent. The zero value is invalid so that
	// the choice is always explicit.
	Ordering Ordering
	// Window is the most attempts in flight at once. Strict requires 1
	// (or 0, read as 1); Independent requires at least 1. It is the
	// stream's limit on attempts in flight (a platform's "max in flight").
	Window int

	// RateLimit and RatePer are the stream's rate limit: at most RateLimit
	// attempts start in any interval of RatePer, that is, attempt k+RateLimit
	// starts no earlier than RatePer after attempt k (a sliding window,
	// which allows a burst of RateLimit). Probes do not count: they carry
	// no event, one at most is out, and ProbeBackoff spaces them. A start
	// the limit holds back waits, and WakeAt says when it may go. A
	// machine made by Recover does not know when the old one started its
	// attempts, so it counts a full window of starts at the instant it is
	// recovered. Zero RateLimit sets no limit (and RatePer must be 0 too).
	RateLimit int
	// RatePer is the interval of RateLimit, positive when RateLimit is set.
	RatePer time.Duration

	// MaxAttempts bounds the sends of one event, across restarts: an
	// attempt is counted durably before it is sent.
	MaxAttempts int
	// MaxAge bounds how long an event may stay undelivered after its
	// acceptance, parked or not. Past it the event is dead ("expired").
	MaxAge time.Duration

	// BaseBackoff is the delay after the first failed attempt; each later
	// failure doubles it, up to MaxBackoff.
	BaseBackoff time.Duration
	// MaxBackoff caps the exponential backoff (before Retry-After).
	MaxBackoff time.Duration
	// JitterPercent is how much of each delay is randomised, 0 to 100: a
	// delay d becomes a value in [d - d/100*JitterPercent, d], derived from
	// Seed, the event ID and the attempt number (see Backoff).
	JitterPercent int
	// MaxRetryAfter bounds a receiver's Retry-After hint. A hint may
	// postpone a retry beyond MaxBackoff, never beyond MaxRetryAfter.
	// Zero ignores hints.
	MaxRetryAfter time.Duration

	// AttemptTimeout is how long the machine waits for the outcome of an
	// attempt before it counts the attempt as timed out (result unknown).
	AttemptTimeout time.Duration

	// BreakerThreshold is the streak of consecutive retryable failures
	// that makes the machine stop sending and ask for a health probe.
	BreakerThreshold int
	// ProbeTimeout is how long a probe may go unanswered before it counts
	// as failed.
	ProbeTimeout time.Duration
	// ProbeBaseInterval is the wait after the first failed probe while the
	// circuit is open; it doubles with each failed probe up to
	// ProbeMaxInterval.
	ProbeBaseInterval time.Duration
	// ProbeMaxInterval caps the wait between probes.
	ProbeMaxInterval time.Duration

	// MaxQueued bounds the events accepted and not yet terminal. Accept
	// beyond it fails with ErrQueueFull and nothing is acknowledged, so
	// the producer keeps its event and offers it again later.
	MaxQueued int
	// MaxPayloadBytes bounds one event's payload.
	MaxPayloadBytes int

	// KeepSettled and KeepSettledFor are the idempotency window: how many
	// settled (delivered or dead) records, and for how long after they
	// settled, the machine keeps in memory so that an Accept of their ID
	// is still acknowledged as a duplicate. Past either bound the record
	// settled longest ago is forgotten; the store keeps it. With either
	// bound set, a record taken over with Adopt is forgotten as soon as it
	// settles: a shared store answers for idempotency then. Zero (both)
	// keeps every settled record, and memory grows with history. See
	// "Idempotency window" in the package doc for what a producer that
	// resends after the window gets.
	KeepSettled int
	// KeepSettledFor: see KeepSettled. Zero sets no bound by time.
	KeepSettledFor time.Duration

	// Seed decides every jitter value. The same seed, inputs and config
	// give the same delays in any port of the machine. It also seeds the
	// hash of the machine's ID index: a producer that knows it could
	// choose IDs that collide there and slow their steps (never make them
	// wrong), so a service that accepts IDs from untrusted producers
	// should draw it at random, as courier serve does.
	Seed uint64
}

// DefaultConfig is a sane policy for a webhook-like channel: strict order,
// eight attempts, a day of age, backoff from one second to five minutes.
func DefaultConfig() Config {
	return Config{
		Ordering:          Strict,
		Window:            1,
		MaxAttempts:       8,
		MaxAge:            24 * time.Hour,
		BaseBackoff:       time.Second,
		MaxBackoff:        5 * time.Minute,
		JitterPercent:     20,
		MaxRetryAfter:     time.Hour,
		AttemptTimeout:    30 * time.Second,
		BreakerThreshold:  3,
		ProbeTimeout:      10 * time.Second,
		ProbeBaseInterval: time.Second,
		ProbeMaxInterval:  time.Minute,
		MaxQueued:         100_000,
		MaxPayloadBytes:   1 << 20,
		KeepSettled:       100_000,
		Seed:              1,
	}
}

// MaxRateLimit bounds Config.RateLimit: the machine remembers that many
// attempt starts.
const MaxRateLimit = 100_000

// ErrInvalidConfig is wrapped by every error that Validate returns.
var ErrInvalidConfig = errors.New("machine: invalid config")

// Validate reports the first field that is out of range, by name.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	switch c.Ordering {
	case Strict:
		if c.Window != 0 && c.Window != 1 {
			return bad("Window", "is %d; strict ordering allows exactly one event in flight (use 1)", c.Window)
		}
	case Independent:
		if c.Window < 1 {
			return bad("Window", "is %d; independent ordering needs at least 1", c.Window)
		}
	default:
		return bad("Ordering", "is %d; want Strict or Independent", uint8(c.Ordering))
	}
	positive := []struct {
		name string
		d    time.Duration
	}{
		{"MaxAge", c.MaxAge},
		{"BaseBackoff", c.BaseBackoff},
		{"MaxBackoff", c.MaxBackoff},
		{"AttemptTimeout", c.AttemptTimeout},
		{"ProbeTimeout", c.ProbeTimeout},
		{"ProbeBaseInterval", c.ProbeBaseInterval},
		{"ProbeMaxInterval", c.ProbeMaxInterval},
	}
	for _, p := range positive {
		if p.d <= 0 {
			return bad(p.name, "is %v; must be positive", p.d)
		}
	}
	switch {
	case c.MaxAttempts < 1:
		return bad("MaxAttempts", "is %d; must be at least 1", c.MaxAttempts)
	case c.MaxBackoff < c.BaseBackoff:
		return bad("MaxBackoff", "is %v; must not be below BaseBackoff (%v)", c.MaxBackoff, c.BaseBackoff)
	case c.JitterPercent < 0 || c.JitterPercent > 100:
		return bad("JitterPercent", "is %d; must be within 0..100", c.JitterPercent)
	case c.MaxRetryAfter < 0:
		return bad("MaxRetryAfter", "is %v; must not be negative (0 ignores Retry-After)", c.MaxRetryAfter)
	case c.BreakerThreshold < 1:
		return bad("BreakerThreshold", "is %d; must be at least 1", c.BreakerThreshold)
	case c.ProbeMaxInterval < c.ProbeBaseInterval:
		return bad("ProbeMaxInterval", "is %v; must not be below ProbeBaseInterval (%v)", c.ProbeMaxInterval, c.ProbeBaseInterval)
	case c.MaxQueued < 1:
		return bad("MaxQueued", "is %d; must be at least 1", c.MaxQueued)
	case c.MaxPayloadBytes < 1:
		return bad("MaxPayloadBytes", "is %d; must be at least 1", c.MaxPayloadBytes)
	case c.KeepSettled < 0:
		return bad("KeepSettled", "is %d; must not be negative (0 keeps every settled record)", c.KeepSettled)
	case c.KeepSettledFor < 0:
		return bad("KeepSettledFor", "is %v; must not be negative (0 sets no bound by time)", c.KeepSettledFor)
	case c.RateLimit < 0 || c.RateLimit > MaxRateLimit:
		return bad("RateLimit", "is %d; must be within 0..%d (0 sets no limit)", c.RateLimit, MaxRateLimit)
	case c.RateLimit > 0 && c.RatePer <= 0:
		return bad("RatePer", "is %v; must be positive with a RateLimit (%d)", c.RatePer, c.RateLimit)
	case c.RateLimit == 0 && c.RatePer != 0:
		return bad("RatePer", "is %v with no RateLimit; set both or neither", c.RatePer)
	}
	return nil
}

// forgets reports whether the idempotency window is bounded.
func (c *Config) forgets() bool { return c.KeepSettled > 0 || c.KeepSettledFor > 0 }

// rateAllows reports whether the rate limit lets an attempt start now.
func (m *Machine) rateAllows() bool {
	return m.cfg.RateLimit == 0 || m.starts.len() < m.cfg.RateLimit || !m.now.Before(m.rateNext())
}

// rateNext is when the rate limit next lets an attempt start, once
// RateLimit starts are remembered: RatePer after the oldest of them.
func (m *Machine) rateNext() time.Time { return m.starts.front().Add(m.cfg.RatePer) }

// started remembers an attempt start for the rate limit: the last
// RateLimit of them.
func (m *Machine) started() {
	if m.cfg.RateLimit == 0 {
		return
	}
	m.starts.push(m.now)
	if m.starts.len() > m.cfg.RateLimit {
		m.starts.pop()
	}
}

// window is the effective in-flight limit: Window, or 1 in strict order
// (where Window may be 0), doubled under the planted bug WindowOverflow.
func (m *Machine) window() int {
	w := m.cfg.Window
	if m.cfg.Ordering == Strict {
		w = 1
	}
	if m.faults.windowOverflow {
		w *= 2
	}
	return w
}

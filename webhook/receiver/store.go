package receiver

import (
	"context"
	"database/sql"
	"time"
)

// Key is what a delivery claims: its webhook-id and, on a strict stream,
// its place in the stream.
type Key struct {
	ID     string
	Stream string // "" unless Strict
	Seq    uint64 // 0 unless Strict
	Strict bool
}

// Verdict is a Store's answer to Begin.
type Verdict uint8

const (
	// Apply: the caller holds the claim; apply the event, then Commit or Abort.
	Apply Verdict = iota + 1
	// Duplicate: the ID was applied within the window; do nothing, answer 2xx.
	Duplicate
	// Superseded: a strict stream has already applied a sequence at or
	// above this one; applying it now would break order.
	Superseded
)

func (v Verdict) String() string {
	switch v {
	case Apply:
		return "apply"
	case Duplicate:
		return "duplicate"
	case Superseded:
		return "superseded"
	}
	return "verdict(?)"
}

// Store remembers which webhook-ids were applied (for Window) and, for
// strict streams, the last sequence applied. Implementations: Memory and
// SQL. A Store is safe for concurrent use.
type Store interface {
	// Begin claims k at now. While one claim on an ID (or on a strict
	// stream) is held, another Begin for it waits (until ctx ends), so two
	// concurrent deliveries of one event never both apply it. An ID
	// applied before now-window is forgotten. Claim is non-nil only with
	// Apply.
	Begin(ctx context.Context, k Key, now time.Time, window time.Duration) (Claim, Verdict, error)
}

// Claim is a held right to apply one event.
type Claim interface {
	// Tx is the SQL transaction the claim lives in (nil for Memory). The
	// application may do its own writes in it: then its effect and the
	// record that the ID was applied commit together, or not at all.
	Tx() *sql.Tx
	// Commit records the ID as applied (and the sequence as the stream's
	// last) and releases the claim.
	Commit(ctx context.Context) error
	// Abort releases the claim and records nothing. After Commit it does
	// nothing, so it is safe to defer.
	Abort()
}

package store

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/courierlab/courier/machine"
)

// The rules below are the contract's checks and transitions written once,
// for every backend to call inside its own transaction: a backend reads
// the rows a call touches, checks them here, and writes what Apply,
// ApplyReplay and ApplyDiscard leave. Only the locking and the storage
// differ between backends.

// CheckName checks a name argument of op: a stream, an event ID, an
// owner or an operator, which field names in the error. A name is
// non-empty text: valid UTF-8 with no NUL byte. Names travel in HTTP
// headers (webhook-id), in JSON and in PostgreSQL text columns, none of
// which holds every byte string; a backend that met such a name only in
// its storage would fail the call as if it were unavailable, and the
// caller would try again for ever. Anything else is ErrBadArgument,
// refused before the call reads or writes anything.
func CheckName(op, field, name string) error {
	if name == "" {
		return fmt.Errorf("%w: %s: %s is empty", ErrBadArgument, op, field)
	}
	if why := notText(name); why != "" {
		return fmt.Errorf("%w: %s: %s %s", ErrBadArgument, op, field, why)
	}
	return nil
}

// CheckLease checks the names a lease carries, as CheckName does, for
// the calls that take one (Renew, Release, Pending, Save). An empty name
// is left to CheckHeld: no lease was ever granted under it, so the lease
// is stale.
func CheckLease(op string, l Lease) error {
	if why := notText(l.Stream); why != "" {
		return fmt.Errorf("%w: %s: the lease's stream %s", ErrBadArgument, op, why)
	}
	if why := notText(l.Owner); why != "" {
		return fmt.Errorf("%w: %s on stream %q: the lease's owner %s", ErrBadArgument, op, l.Stream, why)
	}
	return nil
}

// notText says why s is not text a name may be, or "" if it is (the
// empty string included).
func notText(s string) string {
	if plainASCII(s) || utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return ""
	}
	for i, r := range s {
		switch {
		case r == 0:
			return fmt.Sprintf("has a NUL byte at byte %d", i)
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("is not valid UTF-8 at byte %d", i)
		}
	}
	panic("store: notText: a string is both text and not")
}

// plainASCII reports whether s is ASCII without NUL: the common name and
// detail, told in one pass without a call.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// CheckEnqueue checks Enqueue's arguments.
func CheckEnqueue(stream, id string) error {
	if err := CheckName("enqueue", "stream", stream); err != nil {
		return err
	}
	switch {
	case id == "":
		return fmt.Errorf("%w: enqueue on stream %q: id is empty", ErrBadArgument, stream)
	case len(id) > machine.MaxIDBytes:
		return fmt.Errorf("%w: enqueue on stream %q: id of %d bytes exceeds %d", ErrBadArgument, stream, len(id), machine.MaxIDBytes)
	}
	if why := notText(id); why != "" {
		return fmt.Errorf("%w: enqueue on stream %q: id %s", ErrBadArgument, stream, why)
	}
	return nil
}

// CleanDetail is an outcome's detail as every store keeps it. A detail is
// free text from a receiver or a channel (an HTTP error message, say),
// and it must never make a Save fail: each run of bytes that is not
// UTF-8 and each NUL byte becomes U+FFFD, and the result is cut to at
// most MaxDetailBytes bytes on a rune boundary. A detail that is already
// such text is returned as it is, without a copy.
func CleanDetail(d string) string {
	if len(d) <= MaxDetailBytes && (plainASCII(d) || utf8.ValidString(d) && strings.IndexByte(d, 0) < 0) {
		return d
	}
	d = strings.ReplaceAll(strings.ToValidUTF8(d, "\uFFFD"), "\x00", "\uFFFD")
	if len(d) <= MaxDetailBytes {
		return d
	}
	cut := MaxDetailBytes
	for !utf8.RuneStart(d[cut]) {
		cut--
	}
	return d[:cut]
}

// cleanOutcome is o with its detail cleaned.
func cleanOutcome(o Outcome) Outcome {
	o.Detail = CleanDetail(o.Detail)
	return o
}

// CheckUpdate checks u against the stored record r it would replace: the
// history a Save may not rewrite and the writes no machine could make.
// The caller has checked that r exists in the lease's stream and that u's
// ID appears once in the batch. Both are passed by pointer and only read:
// a Record is about 250 bytes, and a Save checks every update it writes.
func CheckUpdate(r *Record, u *Update) error {
	if err := checkDelivery(u); err != nil {
		return fmt.Errorf("%w: record %q: %s", ErrInvalidWrite, u.ID, err)
	}
	if err := checkAgainst(r, u); err != nil {
		return fmt.Errorf("%w: record %q: %s", ErrInvalidWrite, u.ID, err)
	}
	return nil
}

// checkDelivery checks u on its own: a state the machine has, and an
// attempt behind every result.
func checkDelivery(u *Update) error {
	d := &u.Delivery
	switch {
	case d.State < machine.Pending || d.State > machine.Dead:
		return fmt.Errorf("invalid state %v", d.State)
	case d.State == machine.Dead && (d.Reason < machine.Exhausted || d.Reason > machine.Rejected):
		return fmt.Errorf("dead with invalid reason %v", d.Reason)
	case d.State != machine.Dead && d.Reason != machine.NotDead:
		return fmt.Errorf("%v with dead reason %v", d.State, d.Reason)
	case d.Attempts < 0:
		return fmt.Errorf("negative attempts %d", d.Attempts)
	case d.Attempts == 0 && (d.State == machine.Delivered || d.State == machine.Retry ||
		d.Reason == machine.Exhausted || d.Reason == machine.Rejected):
		return fmt.Errorf("%v %v with no attempt behind it", d.State, d.Reason)
	}
	if o := u.Outcome; o != nil {
		switch { // its detail is any string: Apply cleans it
		case o.Attempt < 1 || o.Attempt > d.Attempts:
			return fmt.Errorf("outcome of attempt %d, but %d attempts were made", o.Attempt, d.Attempts)
		}
	}
	return nil
}

// checkAgainst checks u against the stored record.
func checkAgainst(r *Record, u *Update) error {
	d := &u.Delivery
	if r.State.Terminal() {
		if d.State != r.State || d.Attempts != r.Attempts || d.Reason != r.Reason || !d.NextAt.Equal(r.NextAt) {
			return fmt.Errorf("terminal record changed: %v %v attempts=%d next=%s, stored %v %v attempts=%d next=%s",
				d.State, d.Reason, d.Attempts, d.NextAt.Format(time.RFC3339Nano),
				r.State, r.Reason, r.Attempts, r.NextAt.Format(time.RFC3339Nano))
		}
		if u.Outcome != nil && cleanOutcome(*u.Outcome) != r.Last {
			return fmt.Errorf("terminal record's last outcome changed")
		}
		return nil
	}
	switch {
	case d.Attempts < r.Attempts:
		return fmt.Errorf("attempts fell from %d to %d", r.Attempts, d.Attempts)
	case d.Attempts > r.Attempts+1:
		return fmt.Errorf("attempts jumped from %d to %d", r.Attempts, d.Attempts)
	case d.Attempts > r.Attempts && d.State.Terminal():
		// A new attempt is persisted before it is sent, so nothing can
		// have come of it yet.
		return fmt.Errorf("%v %v together with a new attempt %d that was never durable", d.State, d.Reason, d.Attempts)
	case u.Outcome != nil && u.Outcome.Attempt < r.Last.Attempt:
		return fmt.Errorf("outcome of attempt %d is older than the last recorded, of attempt %d", u.Outcome.Attempt, r.Last.Attempt)
	}
	return nil
}

// Apply writes u into r, judged at now: the delivery state, the outcome if
// any (its detail cleaned by CleanDetail), and SettledAt when r becomes
// delivered. The caller has checked u with CheckUpdate and leaves a
// terminal r as it is.
func Apply(r *Record, u Update, now time.Time) {
	r.Delivery = u.Delivery
	if u.Outcome != nil {
		r.Last, r.LastAt = cleanOutcome(*u.Outcome), now
	}
	if u.State == machine.Delivered {
		r.SettledAt = now
	}
}

// CheckOperator checks the arguments of an operator action (Replay,
// Discard).
func CheckOperator(op, id, by string) error {
	if err := CheckName(op, "id", id); err != nil {
		return err
	}
	switch {
	case by == "":
		return fmt.Errorf("%w: %s %q: the operator (by) is empty", ErrBadArgument, op, id)
	case notText(by) != "":
		return fmt.Errorf("%w: %s %q: the operator (by) %s", ErrBadArgument, op, id, notText(by))
	}
	return nil
}

// CheckDeadLetter refuses an operator action on r unless r is a dead
// letter no operator has settled.
func CheckDeadLetter(op string, r Record) error {
	switch {
	case r.State != machine.Dead:
		return fmt.Errorf("%w: %s %q: it is %v, not a dead letter", ErrInvalidWrite, op, r.ID, r.State)
	case !r.SettledAt.IsZero():
		return fmt.Errorf("%w: %s %q: the dead letter was discarded at %s", ErrInvalidWrite, op, r.ID, r.SettledAt.Format(time.RFC3339Nano))
	}
	return nil
}

// ApplyReplay re-drives the dead letter r with a fresh budget at now,
// recording the action under token.
func ApplyReplay(r *Record, by string, now time.Time, token uint64) {
	r.History = append(r.History, Action{
		Kind: Replayed, By: by, At: now, Token: token,
		Attempts: r.Attempts, Reason: r.Reason, Last: r.Last,
	})
	r.Delivery = Delivery{State: machine.Pending, NextAt: now}
	r.Last, r.LastAt = Outcome{}, time.Time{}
}

// ApplyDiscard settles the dead letter r at now.
func ApplyDiscard(r *Record, by string, now time.Time) {
	r.History = append(r.History, Action{
		Kind: Discarded, By: by, At: now,
		Attempts: r.Attempts, Reason: r.Reason, Last: r.Last,
	})
	r.SettledAt = now
}

// Held is a stream's current lease as a backend keeps it, valid or not.
// Token 0 means none was ever granted.
type Held struct {
	Owner    string
	Token    uint64
	Expires  time.Time
	Released bool
}

// ValidAt reports whether h is valid at now: granted, not released (nor
// revoked by a replay, which leaves it released) and not expired; at
// Expires exactly it has expired.
func (h Held) ValidAt(now time.Time) bool {
	return h.Token != 0 && !h.Released && now.Before(h.Expires)
}

// Lease is h as the lease of stream.
func (h Held) Lease(stream string) Lease {
	return Lease{Stream: stream, Owner: h.Owner, Token: h.Token, Expires: h.Expires}
}

// ErrReplayed is wrapped, with ErrStaleLease, by the refusal of a call
// through a lease that an operator's Replay revoked, while the replay's
// token is still the stream's current one: the owner lost the stream to
// an operator's action, not to a fault. (Once another owner claims the
// stream, the refusal names only the newer token.)
var ErrReplayed = errors.New("store: revoked by an operator's replay")

// CheckHeld returns nil if l is h, the current lease of its stream, and
// valid at now, or an error wrapping ErrStaleLease that says why not. The
// owner is part of the lease's identity. Only h counts: l.Expires is the
// caller's copy and may be older than a renewal.
func CheckHeld(op string, h Held, l Lease, now time.Time) error {
	var why string
	switch {
	case h.Token == 0:
		why = "no lease was ever granted on the stream"
	case h.Owner == "" && h.Released:
		// Only Replay leaves a lease with no owner.
		return fmt.Errorf("%w: %s on stream %q by %q with token %d: %w (token %d)",
			ErrStaleLease, op, l.Stream, l.Owner, l.Token, ErrReplayed, h.Token)
	case h.Token != l.Token:
		why = fmt.Sprintf("the current token is %d", h.Token)
	case h.Owner != l.Owner:
		why = fmt.Sprintf("the token was granted to %q", h.Owner)
	case h.Released:
		why = "it was released or revoked by a replay"
	case !now.Before(h.Expires):
		why = "it expired at " + h.Expires.Format(time.RFC3339Nano)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s on stream %q by %q with token %d: %s", ErrStaleLease, op, l.Stream, l.Owner, l.Token, why)
}

package invariants

import (
	"time"

	"github.com/courierlab/courier/machine"
)

// OwnerWait (issue 26): no stream with due work waits for an owner longer
// than Run.OwnerWait plus Run.Slack (less Run.Rotation, which is
// OwnerWait itself). A stream has due work as the store schedules it:
// when one of its records, as last persisted, is pending or in retry
// with NextAt come; or, when one is parked, from the instant its last
// release held it until (LeaseReleased's Until, or the release itself;
// a replay's instant after a replay), when its next owner owes the
// probe. It has no owner from the moment its latest lease was released
// (LeaseReleased), revoked by a replay, or ran out by its last known
// expiry (a lease dropped by the worker's own clock still stands until
// then). The wait is judged at each grant: from the later of those two
// instants to the grant. A stream an operator paused since it fell due
// is not judged.
const OwnerWait = "owner-wait"

// ownerState follows the stream's latest lease.
type ownerState struct {
	token      uint64
	until      time.Time // its expiry as last told (grant, renewal)
	releasedAt time.Time // when it was released or revoked; zero: not
}

// free is when the latest lease stopped counting, at or before now;
// ok is false while it still counts. A stream never leased is free
// since the start.
func (o *ownerState) free(now time.Time) (since time.Time, ok bool) {
	switch {
	case o.token == 0:
		return time.Time{}, true
	case !o.releasedAt.IsZero():
		return o.releasedAt, true
	case !o.until.After(now):
		return o.until, true
	}
	return time.Time{}, false
}

func (o *ownerState) renewed(e *Entry) {
	if e.Token == o.token && e.Until.After(o.until) {
		o.until = e.Until
	}
}

func (o *ownerState) released(e *Entry) {
	if e.Token == o.token && o.releasedAt.IsZero() {
		o.releasedAt = e.At
	}
}

// heldUntilAfter notes what the store holds a stream until after a release
// (ReleaseUntil holds it until the later of its until and the store's
// now) or a replay (its now): the instant a parked stream falls due. It
// outlives the lease, as the store's release_until does.
func (c *checker) heldUntilAfter(e *Entry) {
	c.heldUntil = later(e.At, e.Until)
}

// revoked: a replay's token makes every earlier lease stale at once.
func (o *ownerState) revoked(e *Entry) {
	if o.token != 0 && o.releasedAt.IsZero() && o.until.After(e.At) {
		o.releasedAt = e.At
	}
}

// ownerGranted judges the wait a grant ends, then follows the new lease.
func (c *checker) ownerGranted(e *Entry) {
	if e.Token <= c.owner.token {
		return // an older grant, logged late: it ends no wait
	}
	defer func() { c.owner = ownerState{token: e.Token, until: e.Until} }()
	if c.run.OwnerWait <= 0 || c.pause.on || !c.pause.first.IsZero() {
		return
	}
	free, ok := c.owner.free(e.At)
	if !ok {
		return
	}
	due, ok := c.dueSince()
	if !ok {
		return
	}
	from := later(free, due)
	slack := c.run.Slack - c.run.Rotation
	waited := e.At.Sub(from)
	c.waits = append(c.waits, waited)
	if waited > c.run.OwnerWait+slack {
		c.fail(OwnerWait, "", e.Step, "the stream had due work and no owner for %v before %s's grant (token %d), over the bound %v plus slack %v",
			waited, nameOf(e.Worker), e.Token, c.run.OwnerWait, slack)
	}
}

// dueSince is when the stream's work fell due, as the store schedules
// it: the instant its last release held it until when a record is
// parked, else the earliest NextAt of its pending and retry records as
// last persisted; ok is false when it has none of those.
func (c *checker) dueSince() (due time.Time, ok bool) {
	for _, i := range c.order {
		r := &c.events[i].rec
		switch r.State {
		case machine.Parked:
			return c.heldUntil, true
		case machine.Pending, machine.Retry:
			if !ok || r.NextAt.Before(due) {
				due, ok = r.NextAt, true
			}
		}
	}
	return due, ok
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

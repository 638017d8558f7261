package invariants

import (
	"bytes"
	"cmp"
	"slices"
	"time"
)

// leases follows the store's grants: the newest token, and each token's
// expiry as the store last reported it.
type leases struct {
	newest uint64
	until  map[uint64]time.Time
	// heard is each token's expiry as its worker was last told of it:
	// a renewal whose reply was lost is in until, not here.
	heard map[uint64]time.Time
}

func (p *policy) lease(e *Entry, at ref) {
	w := p.worker(at.wk)
	switch e.Kind {
	case LeaseGranted:
		if e.Token <= p.newest {
			p.fail(Leases, "", e.Step, "lease token %d granted to %s after token %d: fencing tokens must grow", e.Token, e.Worker, p.newest)
		}
		p.newest = max(p.newest, e.Token)
		p.until[e.Token] = e.Until
		p.heard[e.Token] = e.Until
		w.held = e.Token
	case LeaseRenewed:
		if held := w.held; e.Token != held {
			p.fail(Leases, "", e.Step, "%s renewed lease token %d and got token %d: a renewal keeps the token", e.Worker, held, e.Token)
		}
		until, ok := p.until[e.Token]
		if ok && !e.At.Before(until) {
			// Valid while the store's now is before Expires: at Expires
			// exactly it has expired, and only a new grant may follow.
			p.fail(Leases, "", e.Step, "%s renewed lease token %d %v after it expired", e.Worker, e.Token, e.At.Sub(until))
		}
		if ok && e.Until.Before(until) {
			p.fail(Leases, "", e.Step, "%s's renewal moved the expiry of token %d %v earlier", e.Worker, e.Token, until.Sub(e.Until))
		}
		p.until[e.Token] = e.Until
		if e.Detail != ReplyLost {
			p.heard[e.Token] = e.Until
		}
	}
}

// dropped judges a lease the worker gave up of its own accord: it had
// not been told the lease runs for more than the workers' ClockMargin
// longer, give or take twice the clock offsets. A renewal whose reply
// was lost does not count: the worker could not know of it.
func (p *policy) dropped(e *Entry) {
	margin := p.run.ClockMargin
	until, ok := p.heard[e.Token]
	if margin <= 0 || !ok || e.Token < p.newest {
		return
	}
	if left := until.Sub(e.At); left > margin+2*p.run.Skew {
		p.fail(LeaseKept, "", e.Step, "%s gave up lease token %d with %v left, as the store had told it (%s); ClockMargin %v and twice the skew %v allow %v",
			nameOf(e.Worker), e.Token, left, e.Detail, margin, p.run.Skew, margin+2*p.run.Skew)
	}
}

// leaseValid judges a worker's write: it was made under the newest lease,
// before that lease expired. Writes without leases (a single sender) are
// not judged.
func (p *policy) leaseValid(e *Entry) {
	if e.Token == 0 {
		return
	}
	until, ok := p.until[e.Token]
	switch {
	case !ok:
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d, which the store never granted", e.Worker, e.Token)
	case e.Token != p.newest:
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d, superseded by token %d", e.Worker, e.Token, p.newest)
	case !e.At.Before(until):
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d %v after it expired", e.Worker, e.Token, e.At.Sub(until))
	}
}

// offer is what the producer was told of one ID.
type offer struct {
	acked   bool
	ackSeq  uint64 // the sequence it was acknowledged as
	pending bool   // a re-offer of it, acknowledged before, is not yet answered:
	offerAt int    // the step of that re-offer
}

func (p *policy) producer(e *Entry, at ref) {
	o := &p.events[at.ev].offer
	switch e.Kind {
	case Offered:
		if o.acked && !o.pending {
			o.pending, o.offerAt = true, e.Step
		}
	case Acked:
		if o.acked && o.ackSeq != e.Seq {
			p.fail(Producers, e.ID, e.Step, "acknowledged again as seq %d; it was acknowledged as seq %d", e.Seq, o.ackSeq)
		} else if !o.acked {
			o.acked, o.ackSeq = true, e.Seq
		}
		o.pending = false
	case Refused:
		if o.pending && e.Detail == "queue full" {
			p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID was refused (%s); it must be acknowledged again", e.Detail)
		}
		o.pending = false // a store outage may refuse anything
	}
}

// clearPending forgets every re-offer not yet answered.
func (p *policy) clearPending() {
	for i := range p.events {
		p.events[i].pending = false
	}
}

// duplicateChanged judges a record persisted while a re-offer of its ID
// is being answered: the offer may change nothing of its identity.
func (p *policy) duplicateChanged(e *Entry, v *event) {
	r := &e.Record
	if r.Seq != v.first.seq || !r.AcceptedAt.Equal(v.first.acceptedAt) || !bytes.Equal(r.Payload, v.first.payload) {
		p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID changed its record (seq, acceptance time or payload)")
	}
}

// final reports re-offers that were never answered, by step.
func (p *policy) final() {
	var waiting []int
	for i := range p.events {
		if p.events[i].pending {
			waiting = append(waiting, i)
		}
	}
	slices.SortFunc(waiting, func(a, b int) int { return cmp.Compare(p.events[a].offerAt, p.events[b].offerAt) })
	for _, i := range waiting {
		p.fail(Producers, p.ids.list[i], p.events[i].offerAt, "a re-offer of an acknowledged ID was never acknowledged")
	}
}

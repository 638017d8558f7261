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
	// tokens holds every token's lease but the newest's, which nearly
	// every write and renewal is about: that one is kept out of the map
	// (newestKnown: the store reported it).
	tokens      map[uint64]lease
	newestLease lease
	newestKnown bool
}

// lease is what the checker reads of a lease: when it expires. (Who holds
// it is on every entry written under it.)
type lease struct {
	until time.Time
}

func (p *policy) lease(e *Entry, at ref) {
	w := p.worker(at.wk)
	switch e.Kind {
	case LeaseGranted:
		if e.Token <= p.newest {
			p.fail(Leases, "", e.Step, "lease token %d granted to %s after token %d: fencing tokens must grow", e.Token, e.Worker, p.newest)
		}
		if e.Token > p.newest {
			p.supersede(e.Token)
		}
		p.setLease(e.Token, lease{until: e.Until})
		w.held = e.Token
	case LeaseRenewed:
		if held := w.held; e.Token != held {
			p.fail(Leases, "", e.Step, "%s renewed lease token %d and got token %d: a renewal keeps the token", e.Worker, held, e.Token)
		}
		l, ok := p.leaseOf(e.Token)
		if ok && e.Until.Before(l.until) {
			p.fail(Leases, "", e.Step, "%s's renewal moved the expiry of token %d %v earlier", e.Worker, e.Token, l.until.Sub(e.Until))
		}
		p.setLease(e.Token, lease{until: e.Until})
	}
}

// supersede makes token the newest, moving the lease of the one it
// supersedes into the map.
func (p *policy) supersede(token uint64) {
	if p.newestKnown {
		p.tokens[p.newest] = p.newestLease
	}
	p.newest, p.newestLease, p.newestKnown = token, lease{}, false
}

// setLease records token's lease as the store reported it.
func (p *policy) setLease(token uint64, l lease) {
	if token == p.newest {
		p.newestLease, p.newestKnown = l, true
		return
	}
	p.tokens[token] = l
}

// leaseOf returns token's lease as the store last reported it.
func (p *policy) leaseOf(token uint64) (lease, bool) {
	if token == p.newest {
		return p.newestLease, p.newestKnown
	}
	l, ok := p.tokens[token]
	return l, ok
}

// leaseValid judges a worker's write: it was made under the newest lease,
// before that lease expired. Writes without leases (a single sender) are
// not judged.
func (p *policy) leaseValid(e *Entry) {
	if e.Token == 0 {
		return
	}
	if e.Token == p.newest && p.newestKnown { // nearly every write
		if until := p.newestLease.until; !e.At.Before(until) {
			p.fail(Leases, e.ID, e.Step, "%s wrote under token %d %v after it expired", e.Worker, e.Token, e.At.Sub(until))
		}
		return
	}
	l, ok := p.leaseOf(e.Token)
	switch {
	case !ok:
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d, which the store never granted", e.Worker, e.Token)
	case e.Token != p.newest:
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d, superseded by token %d", e.Worker, e.Token, p.newest)
	case !e.At.Before(l.until):
		p.fail(Leases, e.ID, e.Step, "%s wrote under token %d %v after it expired", e.Worker, e.Token, e.At.Sub(l.until))
	}
}

// producers follows the producer's offers of IDs already acknowledged.
type producers struct {
	// pending lists the events (by number) whose offer.pending was set
	// since it was last emptied, some since answered: to go over them.
	pending []int
}

// offer is what the producer was told of one ID.
type offer struct {
	acked   bool
	ackSeq  uint64 // the sequence it was acknowledged as
	pending bool   // a re-offer of it, acknowledged before, is not yet answered:
	offerAt int    // the step of that re-offer
	listed  bool   // it is in producers.pending
}

func (p *policy) producer(e *Entry, at ref) {
	o := &p.events[at.ev].offer
	switch e.Kind {
	case Offered:
		if o.acked && !o.pending {
			o.pending, o.offerAt = true, e.Step
			if !o.listed {
				o.listed = true
				p.pending = append(p.pending, at.ev)
			}
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
	for _, i := range p.pending {
		o := &p.events[i].offer
		o.pending, o.listed = false, false
	}
	p.pending = p.pending[:0]
}

// duplicateChanged judges a record persisted while a re-offer of its ID
// is being answered: the offer may change nothing of its identity.
func (p *policy) duplicateChanged(e *Entry, v *event) {
	r := &e.Record
	if r.Seq != v.first.seq || !sameTime(r.AcceptedAt, v.first.acceptedAt) || !bytes.Equal(r.Payload, v.first.payload) {
		p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID changed its record (seq, acceptance time or payload)")
	}
}

// final reports re-offers that were never answered, by step.
func (p *policy) final() {
	var waiting []int
	for _, i := range p.pending {
		if p.events[i].pending {
			waiting = append(waiting, i)
		}
	}
	slices.SortFunc(waiting, func(a, b int) int { return cmp.Compare(p.events[a].offerAt, p.events[b].offerAt) })
	for _, i := range waiting {
		p.fail(Producers, p.ids.list[i], p.events[i].offerAt, "a re-offer of an acknowledged ID was never acknowledged")
	}
}

package invariants

import (
	"bytes"
	"cmp"
	"slices"
	"time"
)

// leases follows the store's grants: the newest token, and each token's
// holder and expiry as the store last reported it.
type leases struct {
	newest uint64
	tokens map[uint64]lease
	held   map[string]uint64 // per worker, the token it was last granted
}

type lease struct {
	worker string
	until  time.Time
}

func (p *policy) lease(e *Entry) {
	switch e.Kind {
	case LeaseGranted:
		if e.Token <= p.newest {
			p.fail(Leases, "", e.Step, "lease token %d granted to %s after token %d: fencing tokens must grow", e.Token, e.Worker, p.newest)
		}
		p.newest = max(p.newest, e.Token)
		p.tokens[e.Token] = lease{worker: e.Worker, until: e.Until}
		p.held[e.Worker] = e.Token
	case LeaseRenewed:
		if held := p.held[e.Worker]; e.Token != held {
			p.fail(Leases, "", e.Step, "%s renewed lease token %d and got token %d: a renewal keeps the token", e.Worker, held, e.Token)
		}
		l, ok := p.tokens[e.Token]
		if ok && e.Until.Before(l.until) {
			p.fail(Leases, "", e.Step, "%s's renewal moved the expiry of token %d %v earlier", e.Worker, e.Token, l.until.Sub(e.Until))
		}
		p.tokens[e.Token] = lease{worker: e.Worker, until: e.Until}
	}
}

// leaseValid judges a worker's write: it was made under the newest lease,
// before that lease expired. Writes without leases (a single sender) are
// not judged.
func (p *policy) leaseValid(e *Entry) {
	if e.Token == 0 {
		return
	}
	l, ok := p.tokens[e.Token]
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
	acked   map[string]uint64 // ID -> the sequence it was acknowledged as
	pending map[string]int    // re-offers of acknowledged IDs not yet answered, by step
}

func (p *policy) producer(e *Entry) {
	switch e.Kind {
	case Offered:
		if _, ok := p.acked[e.ID]; ok {
			if _, waiting := p.pending[e.ID]; !waiting {
				p.pending[e.ID] = e.Step
			}
		}
	case Acked:
		if seq, ok := p.acked[e.ID]; ok && seq != e.Seq {
			p.fail(Producers, e.ID, e.Step, "acknowledged again as seq %d; it was acknowledged as seq %d", e.Seq, seq)
		} else if !ok {
			p.acked[e.ID] = e.Seq
		}
		delete(p.pending, e.ID)
	case Refused:
		if _, waiting := p.pending[e.ID]; waiting && e.Detail == "queue full" {
			p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID was refused (%s); it must be acknowledged again", e.Detail)
		}
		delete(p.pending, e.ID) // a store outage may refuse anything
	}
}

// duplicateChanged judges a record persisted while a re-offer of its ID
// is being answered: the offer may change nothing of its identity.
func (p *policy) duplicateChanged(e *Entry, v *policyEvent) {
	if _, waiting := p.pending[e.ID]; !waiting {
		return
	}
	r := e.Record
	if r.Seq != v.first.seq || !r.AcceptedAt.Equal(v.first.acceptedAt) || !bytes.Equal(r.Payload, v.first.payload) {
		p.fail(Producers, e.ID, e.Step, "a re-offer of an acknowledged ID changed its record (seq, acceptance time or payload)")
	}
}

// final reports re-offers that were never answered.
func (p *policy) final() {
	ids := make([]string, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(p.pending[a], p.pending[b]) })
	for _, id := range ids {
		p.fail(Producers, id, p.pending[id], "a re-offer of an acknowledged ID was never acknowledged")
	}
}

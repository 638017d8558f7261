package sim

import (
	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

// receiver is the fake downstream system. It applies each ID at most once
// and records what it applied, in order, and what it discarded.
type receiver struct {
	cfg      Receiver
	poison   map[string]bool
	stubborn map[string]int // deliveries still to fail
	applied  map[string]int
	order    []string
	lastSeq  map[int]uint64 // by stream: sequences are per stream
	dups     int
	fenced   int
}

// verdict is what the receiver did with one delivery.
type verdict uint8

const (
	applied verdict = iota + 1
	duplicate
	fenced
	rejectedPoison
	rejectedStubborn
)

func newReceiver(cfg Receiver) *receiver {
	r := &receiver{cfg: cfg, poison: map[string]bool{}, stubborn: map[string]int{}, applied: map[string]int{}, lastSeq: map[int]uint64{}}
	for _, id := range cfg.Poison {
		r.poison[id] = true
	}
	for _, s := range cfg.Stubborn {
		r.stubborn[s.ID] = s.Failures
	}
	return r
}

func (r *receiver) deliver(stream int, id string, seq uint64) verdict {
	switch {
	case r.poison[id]:
		return rejectedPoison
	case r.stubborn[id] > 0:
		r.stubborn[id]--
		return rejectedStubborn
	case r.applied[id] > 0 && !plant.On(plant.ReceiverNoDedup):
		r.dups++
		return duplicate
	case r.cfg.Fence && seq <= r.lastSeq[stream]:
		r.fenced++
		return fenced
	}
	r.applied[id]++
	r.order = append(r.order, id)
	r.lastSeq[stream] = max(r.lastSeq[stream], seq)
	return applied
}

// outcome is how the receiver answers a verdict: a duplicate is
// acknowledged (it is already applied), a fenced delivery is refused for
// good (the stream has moved past it), poison and stubborn fail retryably.
func (v verdict) outcome() machine.Outcome {
	switch v {
	case applied, duplicate:
		return machine.OutcomeDelivered
	case fenced:
		return machine.OutcomeRefused
	default:
		return machine.OutcomeFailed
	}
}

func (v verdict) String() string {
	switch v {
	case applied:
		return "applied"
	case duplicate:
		return "duplicate"
	case fenced:
		return "fenced"
	case rejectedPoison:
		return "poison"
	case rejectedStubborn:
		return "stubborn"
	}
	return "?"
}

package sim

import (
	"slices"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

// Store is the fake durable store: what it acknowledged survives a
// restart, and a batch of writes is applied whole.
type Store struct {
	records map[string]machine.Record
	ids     []string // in order of first write, which is acceptance order
	writes  int
}

func newStore() *Store { return &Store{records: map[string]machine.Record{}} }

// Apply writes a batch atomically: in the simulator nothing can interrupt
// it halfway, which is the contract a real store must give.
func (s *Store) Apply(recs []machine.Record) {
	for _, r := range recs {
		if r.State == machine.Dead && plant.On(plant.DeadLettersDropped) {
			delete(s.records, r.ID)
			s.ids = slices.DeleteFunc(s.ids, func(id string) bool { return id == r.ID })
			continue
		}
		if _, ok := s.records[r.ID]; !ok {
			s.ids = append(s.ids, r.ID)
		}
		s.records[r.ID] = r
	}
	if len(recs) > 0 {
		s.writes++
	}
}

// Records returns every record, in acceptance order.
func (s *Store) Records() []machine.Record {
	out := make([]machine.Record, 0, len(s.ids))
	for _, id := range s.ids {
		out = append(out, s.records[id])
	}
	slices.SortStableFunc(out, func(a, b machine.Record) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}

// receiver is the fake downstream system. It applies each ID at most once
// and records what it applied, in order, and what it discarded.
type receiver struct {
	cfg      Receiver
	poison   map[string]bool
	stubborn map[string]int // deliveries still to fail
	applied  map[string]int
	order    []string
	lastSeq  uint64
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
	r := &receiver{cfg: cfg, poison: map[string]bool{}, stubborn: map[string]int{}, applied: map[string]int{}}
	for _, id := range cfg.Poison {
		r.poison[id] = true
	}
	for _, s := range cfg.Stubborn {
		r.stubborn[s.ID] = s.Failures
	}
	return r
}

func (r *receiver) deliver(s machine.Send) verdict {
	switch {
	case r.poison[s.ID]:
		return rejectedPoison
	case r.stubborn[s.ID] > 0:
		r.stubborn[s.ID]--
		return rejectedStubborn
	case r.applied[s.ID] > 0 && !plant.On(plant.ReceiverNoDedup):
		r.dups++
		return duplicate
	case r.cfg.Fence && s.Seq <= r.lastSeq:
		r.fenced++
		return fenced
	}
	r.applied[s.ID]++
	r.order = append(r.order, s.ID)
	r.lastSeq = max(r.lastSeq, s.Seq)
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

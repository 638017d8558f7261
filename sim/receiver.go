package sim

import (
	"strconv"
	"strings"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/machine"
)

// receiver is the fake downstream system. It applies each ID at most once
// and records what it applied, in order, and what it discarded.
//
// Deliveries name the event by its index in the workload (ids): what the
// receiver keeps of each event is in a slice by that index, not in maps
// by ID, as every delivery looks its event up several times.
type receiver struct {
	cfg      Receiver
	ids      []string    // the workload's event IDs, EventID(i) at i
	events   []recvEvent // by event index
	distinct int         // events applied at least once
	order    []string
	lastSeq  []uint64 // by stream: sequences are per stream
	dups     int
	fenced   int
}

// recvEvent is what the receiver keeps of one event.
type recvEvent struct {
	poison   bool
	stubborn int // deliveries still to fail
	applied  int // times applied
}

// verdict is what the receiver did with one delivery.
type verdict uint8

const (
	applied verdict = iota + 1
	duplicate
	fenced
	rejectedPoison
	rejectedStubborn
	unverified // the receiver kit could not verify the request (HTTP worlds)
)

// newReceiver returns a receiver for the workload ids, spread over
// streams streams. A poison or stubborn ID that is not one of ids is never
// delivered, so it is left out.
func newReceiver(cfg Receiver, ids []string, streams int) *receiver {
	r := &receiver{cfg: cfg, ids: ids, events: make([]recvEvent, len(ids)), lastSeq: make([]uint64, max(streams, 1))}
	for _, id := range cfg.Poison {
		if i, ok := eventOf(ids, id); ok {
			r.events[i].poison = true
		}
	}
	for _, s := range cfg.Stubborn {
		if i, ok := eventOf(ids, s.ID); ok {
			r.events[i].stubborn = s.Failures
		}
	}
	return r
}

// eventOf is the index in ids of id, if it is one of them: ids[i] is
// EventID(i), so id is parsed, and then compared, so that only the very
// same string names it (as with a map keyed by ID).
func eventOf(ids []string, id string) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(id, "e"))
	if err != nil || i < 1 || i > len(ids) || ids[i-1] != id {
		return 0, false
	}
	return i - 1, true
}

// deliver is a delivery of event i (ids[i]) on stream stream with
// sequence seq.
func (r *receiver) deliver(stream, i int, seq uint64) verdict {
	e := &r.events[i]
	switch {
	case e.poison:
		return rejectedPoison
	case e.stubborn > 0:
		e.stubborn--
		return rejectedStubborn
	case e.applied > 0 && !plant.On(plant.ReceiverNoDedup):
		r.dups++
		return duplicate
	case r.cfg.Fence && seq <= r.lastSeq[stream]:
		r.fenced++
		return fenced
	}
	r.applied(i)
	r.lastSeq[stream] = max(r.lastSeq[stream], seq)
	return applied
}

// apply is the application behind the receiver kit in an HTTP world
// (httpsim.go): poison and stubborn events as in deliver, and no
// deduplication or fencing, which are the kit's.
func (r *receiver) apply(i int) verdict {
	e := &r.events[i]
	switch {
	case e.poison:
		return rejectedPoison
	case e.stubborn > 0:
		e.stubborn--
		return rejectedStubborn
	}
	r.applied(i)
	return applied
}

// applied records event i applied.
func (r *receiver) applied(i int) {
	e := &r.events[i]
	if e.applied == 0 {
		r.distinct++
	}
	e.applied++
	r.order = append(r.order, r.ids[i])
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
	case unverified:
		return "unverified"
	}
	return "?"
}

package sim

import (
	"errors"
	"fmt"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/store"
)

// offer is the producer offering event i of the workload; copy counts
// its offers.
func (s *sim) offer(i, copy int) {
	id := s.ids[i]
	if s.firstOffer.IsZero() {
		s.firstOffer = s.now
	}
	s.stats.Offers++
	s.note(nil, opOffer, str(id), num(copy))
	s.observe(invariants.Entry{Kind: invariants.Offered, ID: id})
	s.coverEvent(FaultDuplicateOffer, i)
	// Each copy differs, so a store or machine that let a second offer
	// replace the first would show in the checker's identity check.
	payload := fmt.Appendf(nil, `{"event":%q,"copy":%d}`, id, copy)
	if s.w.Producer.SamePayload {
		// Identical payloads for distinct events: only IDs tell them apart.
		payload = fmt.Appendf(nil, `{"copy":%d}`, copy)
	}
	s.enqueue(i, payload)
	// The producer keeps the event until it is acknowledged.
	s.q.schedule(s.elapsed+s.w.Producer.AckTimeout, func() { s.ackTimeout(i, copy) })
}

// ackTimeout is the producer's wait for offer copy of event i ending: it
// offers the event again if it is still not acknowledged.
func (s *sim) ackTimeout(i, copy int) {
	if !s.acked[i] {
		s.note(nil, opReoffer, str(s.ids[i]))
		s.offer(i, copy+1)
	}
}

// enqueue is a producer's offer: straight into the store, which
// acknowledges it once durable. The first node is the producer's host: it
// is notified, as a local producer's worker is (courier.Service.Publish).
func (s *sim) enqueue(i int, payload []byte) {
	id, stream := s.ids[i], s.streams[i%len(s.streams)]
	f := s.drawCall(true)
	if f.undone() {
		s.enqueueFailed(i, f)
		return
	}
	stored, created, err := s.store.Enqueue(bg, stream, id, payload)
	rec := stored.Machine()
	if err != nil {
		if !errors.Is(err, store.ErrUnavailable) {
			panic(fmt.Sprintf("sim: seed %d: enqueue %s: %v", s.seed, id, err))
		}
		s.note(nil, opEnqueueRefused, str(id))
		s.observe(invariants.Entry{Kind: invariants.Refused, ID: id, Detail: "store unavailable"})
		s.coverEvent(FaultStoreRefusal, i)
		return
	}
	if created {
		s.persisted(nil, &rec)
		s.observe(invariants.Entry{Kind: invariants.Persisted, ID: rec.ID, Worker: "store", Seq: rec.Seq, Record: rec})
		s.note(nil, opStoreAck, str(rec.ID), unum(rec.Seq))
	} else {
		s.note(nil, opStoreAckDuplicate, str(rec.ID), unum(rec.Seq))
		s.stats.DuplicateAcks++
	}
	if f == callLostDone && !plant.On(plant.UnknownEnqueueAcked) {
		// Made, but the producer was told nothing: it offers again.
		s.enqueueFailed(i, f)
		return
	}
	s.acked[i] = true
	s.observe(invariants.Entry{Kind: invariants.Acked, ID: rec.ID, Seq: rec.Seq})
	if n := s.nodes[0]; !n.down && n.w != nil {
		// The producer runs beside node 0's worker: it hands over the
		// record it created, as a Service does.
		if created {
			n.w.Enqueued(stored)
		} else {
			n.w.Notify(stream)
		}
		s.reschedule(n)
	}
}

// enqueueFailed is the producer's offer of event i failing with f: it is
// not acknowledged, and offers the event again after AckTimeout, unless
// it is the planted UnknownEnqueueAcked, which takes a lost reply for an
// acknowledgement.
func (s *sim) enqueueFailed(i int, f callFault) {
	id := s.ids[i]
	s.note(nil, opEnqueueUnknown, str(id), str(callFaultNames[f]))
	detail := "store unavailable"
	if f != callRefused {
		detail = "store outcome unknown"
		if plant.On(plant.UnknownEnqueueAcked) {
			s.acked[i] = true
			s.observe(invariants.Entry{Kind: invariants.Acked, ID: id, Seq: 0})
			return
		}
		s.coverEvent(FaultLostStoreReply, i)
	} else {
		s.coverEvent(FaultStoreRefusal, i)
	}
	s.observe(invariants.Entry{Kind: invariants.Refused, ID: id, Detail: detail})
}

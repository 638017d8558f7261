package sim

import (
	"errors"
	"slices"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// The operator (World.Operator) acts through the store's own calls, as an
// operator's tool does, at instants drawn from its own stream: it discards
// dead letters, replays them, and deletes settled records past a
// retention. Each action the store takes is logged for the checker
// (invariants.DeadDiscarded, invariants.Replayed, invariants.Deleted),
// which holds it to what an operator may do: only a dead letter is
// discarded or replayed, only a settled record deleted. It also pauses
// streams and resumes them (invariants.Paused, invariants.Resumed): no
// takeover may deliver in between.

// operatorBy names the operator in the records' histories.
const operatorBy = "operator"

// startOperator schedules the operator's actions (pauses and resumes at
// their instants) and the clock steps.
func (s *sim) startOperator() {
	o := s.w.Operator
	for range o.Discards {
		at := between(s.rOperator, 0, s.w.FaultsEnd)
		s.q.schedule(at, s.discard)
	}
	for range o.Deletes {
		at := between(s.rOperator, o.Retention, o.Retention+s.w.FaultsEnd)
		s.q.schedule(at, s.deleteSettled)
	}
	// Drawn after the others, so that a world without replays draws
	// what it drew before they existed.
	for range o.Replays {
		at := between(s.rOperator, 0, s.w.FaultsEnd)
		s.q.schedule(at, s.replay)
	}
	for _, p := range o.Pauses {
		s.q.schedule(p.From, func() { s.pauseStream(p.Stream, true) })
		s.q.schedule(p.To, func() { s.pauseStream(p.Stream, false) })
	}
	for _, k := range s.cfg.ClockSteps {
		s.q.schedule(k.At, func() { s.stepClock(s.nodes[k.Worker], k.By) })
	}
}

// discard discards an event: half the time a dead letter of a stream
// drawn (the operator's tool lists them), otherwise any event of the
// workload, which the store must refuse unless it is a dead letter.
func (s *sim) discard() {
	id := s.ids[s.rOperator.IntN(len(s.ids))]
	if s.rOperator.IntN(2) == 0 {
		name := s.streams[s.rOperator.IntN(len(s.streams))]
		dead, err := s.store.DeadLetters(bg, name, 0, 1000)
		if err != nil || len(dead) == 0 {
			return // nothing to discard there
		}
		id = dead[s.rOperator.IntN(len(dead))].ID
	}
	s.cover(FaultOperator, id)
	rec, err := s.store.Discard(bg, id, operatorBy)
	if err != nil {
		s.note(nil, opOperatorRefused, str("discard"), str(id), str(err.Error()))
		return
	}
	s.writes++
	m := rec.Machine()
	s.note(nil, opDiscard, str(id), record(&m))
	s.observe(invariants.Entry{Kind: invariants.DeadDiscarded, ID: id, Seq: m.Seq, Worker: operatorBy, Record: m})
}

// replay replays an event, as the operator's tool does: half the time a
// dead letter drawn from every stream's list (the tool lists them; a
// discarded one is refused), otherwise any event of the workload, which
// the store must refuse unless it is an undiscarded dead letter. The
// replay takes a fencing token, which the simulator counts as its
// stream's newest grant: a send under an older one is a zombie's.
func (s *sim) replay() {
	id := s.ids[s.rOperator.IntN(len(s.ids))]
	if s.rOperator.IntN(2) == 0 {
		var dead []store.Record
		for _, name := range s.streams {
			recs, err := s.store.DeadLetters(bg, name, 0, 1000)
			if err != nil {
				return // the store is down: the tool lists nothing
			}
			dead = append(dead, recs...)
		}
		if len(dead) == 0 {
			return // nothing to replay
		}
		id = dead[s.rOperator.IntN(len(dead))].ID
	}
	s.cover(FaultOperator, id)
	rec, err := s.store.Replay(bg, id, operatorBy)
	if err != nil {
		s.note(nil, opOperatorRefused, str("replay"), str(id), str(err.Error()))
		return
	}
	s.writes++
	var token uint64
	if h := rec.History; len(h) > 0 {
		token = h[len(h)-1].Token
	}
	i := s.streamOf(id)
	s.newestToken = max(s.newestToken, token)
	s.granted[i] = max(s.granted[i], token)
	m := rec.Machine()
	s.note(nil, opReplay, str(id), unum(token), record(&m))
	if s.w.MaxDuration == 0 {
		s.end = max(s.end, m.AcceptedAt.Sub(Epoch)+s.settleWithin())
	}
	s.observeIn(i, invariants.Entry{Kind: invariants.Replayed, ID: id, Seq: m.Seq, Worker: operatorBy, Token: token, Record: m})
}

// deleteSettled deletes the settled records older than the retention and
// logs each record deleted, as the store held it: what the store held
// before the call and does not after.
func (s *sim) deleteSettled() {
	before := make([][]machine.Record, len(s.streams))
	for i, name := range s.streams {
		before[i] = s.store.Records(name)
	}
	s.coverAll(FaultOperator)
	n, err := s.store.DeleteSettled(bg, s.w.Operator.Retention, 1000)
	if err != nil {
		s.note(nil, opOperatorRefused, str("delete-settled"), str(""), str(err.Error()))
		return
	}
	s.note(nil, opDeleteSettled, dur(s.w.Operator.Retention), num(n))
	if n == 0 {
		return
	}
	s.writes++
	for i, name := range s.streams {
		after := s.store.Records(name)
		for _, r := range before[i] {
			if !slices.ContainsFunc(after, func(a machine.Record) bool { return a.ID == r.ID }) {
				s.deleted[s.eventIndex(r.ID)] = &r
				s.observeIn(i, invariants.Entry{Kind: invariants.Deleted, ID: r.ID, Seq: r.Seq, Worker: operatorBy, Record: r})
			}
		}
	}
}

// errPaused is the simulated Policy's refusal of a paused stream, as a
// real Policy wraps courier.ErrPaused (which the simulator, below the
// shell, cannot import).
var errPaused = errors.New("sim: stream paused by an operator")

// pauseStream pauses (on) or resumes stream i, as the operator's tool
// does: it marks the stream, and the stream's Policy refuses takeovers
// while any pause of it is in force. The first pause and the last resume
// are logged for the checker (invariants.Paused, invariants.Resumed).
func (s *sim) pauseStream(i int, on bool) {
	kind, o := invariants.Paused, opStreamPause
	if on {
		s.paused[i]++
		if s.paused[i] > 1 {
			return
		}
	} else {
		s.paused[i]--
		if s.paused[i] > 0 {
			return
		}
		kind, o = invariants.Resumed, opStreamResume
	}
	s.note(nil, o, str(s.streams[i]))
	s.observeIn(i, invariants.Entry{Kind: kind, Worker: operatorBy})
}

// policy is the Policy of n's worker: the world's, or errPaused while
// an operator has the stream paused.
func (s *sim) policy(n *node, stream string) (machine.Config, error) {
	if s.plat != nil {
		return s.platformPolicy(n, stream)
	}
	if s.paused[s.streamIndex(stream)] > 0 {
		s.note(n, opPolicyRefused, str(stream))
		return machine.Config{}, errPaused
	}
	return s.w.Policy, nil
}

// stepClock moves n's clock by by: its skew changes, and its next call is
// set again on its new clock.
func (s *sim) stepClock(n *node, by time.Duration) {
	n.skew += by
	s.note(n, opClockStep, dur(by))
	s.coverAll(FaultClockStep)
	s.reschedule(n)
}

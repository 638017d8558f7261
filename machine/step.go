package machine

import (
	"fmt"
	"time"
)

// Step applies one input and returns what the caller must do, in the order
// Batch documents. An error means the input was misuse and nothing changed.
func (m *Machine) Step(in Input) (Batch, error) {
	var err error
	// One type switch, not in.at() or %T: passing in on to an interface
	// method or to fmt would make every caller's input escape to the heap.
	// Each kind of input then has its own step, which looks up the entry
	// it names once, checks the clock, validates and applies: validation
	// and handling share the entry, so a step costs one lookup, not three.
	// What every step does after its input is the same: advance, flush.
	switch in := in.(type) {
	case Accept:
		err = m.stepAccept(&in)
	case Result:
		err = m.stepResult(&in)
	case Tick:
		err = m.stepTick(in.At)
	case Adopt:
		err = m.stepAdopt(&in)
	case ProbeResult:
		err = m.stepProbeResult(in)
	case nil:
		err = fmt.Errorf("%w: nil input", ErrBadInput)
	case *Accept, *Adopt, *Tick, *Result, *ProbeResult:
		err = fmt.Errorf("%w: an input passed by pointer: pass inputs by value", ErrBadInput)
	default:
		err = fmt.Errorf("%w: unknown input type; want Accept, Adopt, Tick, Result or ProbeResult", ErrBadInput)
	}
	if err != nil {
		return Batch{}, err
	}
	m.advance()
	return m.flush(), nil
}

// wentBackwards is the error for an input at a clock reading before the
// last one. Every step checks the clock before it validates its input.
func (m *Machine) wentBackwards(at time.Time) error {
	return fmt.Errorf("%w: input at %v is before the last reading %v", ErrTimeWentBackwards, at, m.now)
}

// stepAccept validates and applies an Accept. A new ID is indexed under
// the hash its lookup computed.
func (m *Machine) stepAccept(in *Accept) error {
	h := m.byID.hash(in.ID)
	e := m.byID.lookup(in.ID, h)
	if in.At.Before(m.now) {
		return m.wentBackwards(in.At)
	}
	if err := m.checkAccept(in, e); err != nil {
		return err
	}
	m.now = in.At
	m.accept(in, e, h)
	return nil
}

// checkAccept validates an Accept; e is the entry its ID names, nil if
// unknown.
func (m *Machine) checkAccept(in *Accept, e *entry) error {
	switch {
	case in.ID == "":
		return fmt.Errorf("%w: accept with an empty ID", ErrBadInput)
	case in.At.IsZero():
		// The record could not be recovered: it would have no acceptance time.
		return fmt.Errorf("%w: accept %q with a zero time", ErrBadInput, in.ID)
	case len(in.ID) > MaxIDBytes:
		return fmt.Errorf("%w: accept ID of %d bytes exceeds %d", ErrBadInput, len(in.ID), MaxIDBytes)
	case len(in.Payload) > m.cfg.MaxPayloadBytes:
		return fmt.Errorf("%w: accept %q: payload of %d bytes exceeds MaxPayloadBytes %d", ErrBadInput, in.ID, len(in.Payload), m.cfg.MaxPayloadBytes)
	}
	if e == nil && m.queued >= m.cfg.MaxQueued {
		return fmt.Errorf("%w: %d events waiting (MaxQueued); %q not accepted", ErrQueueFull, m.queued, in.ID)
	}
	return nil
}

// stepAdopt validates and applies an Adopt. A new ID is indexed under the
// hash its lookup computed.
func (m *Machine) stepAdopt(in *Adopt) error {
	h := m.byID.hash(in.Record.ID)
	e := m.byID.lookup(in.Record.ID, h)
	if in.At.Before(m.now) {
		return m.wentBackwards(in.At)
	}
	if err := m.checkAdopt(in, e); err != nil {
		return err
	}
	m.now = in.At
	m.adopt(in, e, h)
	return nil
}

// checkAdopt validates an Adopt; e is the entry its record's ID names,
// nil if unknown.
func (m *Machine) checkAdopt(in *Adopt, e *entry) error {
	r := &in.Record
	if err := checkRecord(r); err != nil {
		return err
	}
	if e != nil {
		return nil // ignored in adopt: the store may hand a record over twice
	}
	switch {
	case r.State != Pending || r.Attempts != 0:
		return fmt.Errorf("%w: adopt %q: a new record is pending with no attempt, not %s with %d", ErrBadRecord, r.ID, r.State, r.Attempts)
	case r.Seq <= m.lastSeq:
		return fmt.Errorf("%w: adopt %q: seq %d is not above the last seq %d", ErrBadRecord, r.ID, r.Seq, m.lastSeq)
	}
	return nil
}

// stepTick applies a Tick: time alone, advance does the work.
func (m *Machine) stepTick(at time.Time) error {
	if at.Before(m.now) {
		return m.wentBackwards(at)
	}
	m.now = at
	return nil
}

// stepResult validates and applies a Result.
func (m *Machine) stepResult(in *Result) error {
	e := m.byID.get(in.ID)
	if in.At.Before(m.now) {
		return m.wentBackwards(in.At)
	}
	if err := checkResult(in, e); err != nil {
		return err
	}
	m.now = in.At
	m.result(in, e)
	return nil
}

// checkResult validates a Result; e is the entry its ID names, nil if
// unknown.
func checkResult(in *Result, e *entry) error {
	switch {
	case in.Outcome < OutcomeDelivered || in.Outcome > OutcomeTimedOut:
		return fmt.Errorf("%w: result for %q has unknown outcome %d", ErrBadInput, in.ID, uint8(in.Outcome))
	case in.Attempt < 1:
		return fmt.Errorf("%w: result for %q names attempt %d; attempts start at 1", ErrBadInput, in.ID, in.Attempt)
	case in.RetryAfter < 0:
		return fmt.Errorf("%w: result for %q has negative RetryAfter %v", ErrBadInput, in.ID, in.RetryAfter)
	case in.RetryAfter > 0 && in.Outcome != OutcomeFailed:
		return fmt.Errorf("%w: result for %q: RetryAfter goes only with outcome failed, not %s", ErrBadInput, in.ID, in.Outcome)
	}
	if e != nil && in.Attempt > e.rec.Attempts {
		return fmt.Errorf("%w: result for %q attempt %d, but only %d were sent", ErrNoSuchAttempt, in.ID, in.Attempt, e.rec.Attempts)
	}
	return nil
}

// stepProbeResult validates and applies a ProbeResult.
func (m *Machine) stepProbeResult(in ProbeResult) error {
	if in.At.Before(m.now) {
		return m.wentBackwards(in.At)
	}
	if in.N == 0 {
		return fmt.Errorf("%w: probe 0 was never sent; probes count from 1", ErrNoSuchAttempt)
	}
	m.now = in.At
	m.probeResult(in)
	return nil
}

// The rapid model test proves the machine's safety invariants under random
// inputs: rapid drives it with accepts (duplicates included), adoptions,
// ticks, results (current and stale), probe results and restarts, and after every
// action checks it against a deliberately simple reference model that
// knows per ID only whether it was accepted, whether it is terminal and
// how many sends it got.
package machine_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/courierlab/courier/machine"
)

// refEvent is all the reference model knows of one ID.
type refEvent struct {
	seq      uint64
	payload  []byte
	terminal *machine.Record // the record as it first became terminal
	sends    int             // Sends emitted for it, across restarts
}

type modelTest struct {
	cfg  machine.Config
	m    *machine.Machine
	now  time.Time
	wake time.Time // the last batch's WakeAt

	events  map[string]*refEvent // every ID acknowledged (not as duplicate)
	lastSeq uint64
	store   map[string]machine.Record // what the caller persisted, batch by batch
	sent    []machine.Send            // every Send ever emitted, for stale results
	sentAt  []time.Time               // when each was emitted (rate_test.go)
	probeN  uint64                    // highest probe number of this incarnation
	lastLen int                       // len(Records()) at the last check
	bursts  int                       // names burst events uniquely
}

func drawConfig(t *rapid.T) machine.Config {
	ms := func(label string, lo, hi int) time.Duration {
		return time.Duration(rapid.IntRange(lo, hi).Draw(t, label)) * time.Millisecond
	}
	c := machine.Config{
		Ordering:          rapid.SampledFrom([]machine.Ordering{machine.Strict, machine.Independent}).Draw(t, "ordering"),
		MaxAttempts:       rapid.IntRange(1, 5).Draw(t, "maxAttempts"),
		MaxAge:            ms("maxAge", 1, 20_000),
		BaseBackoff:       ms("baseBackoff", 1, 1_000),
		JitterPercent:     rapid.IntRange(0, 100).Draw(t, "jitter"),
		MaxRetryAfter:     ms("maxRetryAfter", 0, 5_000),
		AttemptTimeout:    ms("attemptTimeout", 1, 3_000),
		BreakerThreshold:  rapid.IntRange(1, 4).Draw(t, "threshold"),
		ProbeTimeout:      ms("probeTimeout", 1, 3_000),
		ProbeBaseInterval: ms("probeBase", 1, 1_000),
		MaxQueued:         rapid.IntRange(1, 8).Draw(t, "maxQueued"),
		MaxPayloadBytes:   4,
		Seed:              rapid.Uint64().Draw(t, "seed"),
	}
	c.MaxBackoff = c.BaseBackoff + ms("maxBackoffExtra", 0, 4_000)
	c.ProbeMaxInterval = c.ProbeBaseInterval + ms("probeMaxExtra", 0, 4_000)
	if c.Ordering == machine.Independent {
		c.Window = rapid.IntRange(1, 4).Draw(t, "window")
	}
	return c
}

func TestModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		m, err := machine.New(cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		mt := &modelTest{cfg: cfg, m: m, now: epoch, events: map[string]*refEvent{}, store: map[string]machine.Record{}}
		t.Repeat(map[string]func(*rapid.T){
			"accept":       mt.accept,
			"tick":         mt.tick,
			"result":       mt.result,
			"stale-result": mt.staleResult,
			"probe-result": mt.probeResult,
			"restart":      mt.restart,
			"burst":        mt.burst,
			"adopt":        mt.adopt,
			"":             mt.check,
		})
	})
}

// advance moves the clock forward: not at all, a little, or to the
// machine's last WakeAt.
func (mt *modelTest) advance(t *rapid.T) time.Time {
	switch rapid.IntRange(0, 3).Draw(t, "clock") {
	case 0:
	case 1, 2:
		mt.now = mt.now.Add(time.Duration(rapid.IntRange(1, 2_000).Draw(t, "ms")) * time.Millisecond)
	case 3:
		if mt.wake.After(mt.now) {
			mt.now = mt.wake
		}
	}
	return mt.now
}

var ids = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}

func (mt *modelTest) accept(t *rapid.T) {
	at := mt.advance(t)
	id := rapid.SampledFrom(ids).Draw(t, "id")
	payload := []byte(rapid.StringN(0, 4, 4).Draw(t, "payload"))
	if len(payload) > mt.cfg.MaxPayloadBytes {
		payload = payload[:mt.cfg.MaxPayloadBytes]
	}
	known := mt.events[id] != nil
	full := !known && mt.m.Queued() >= mt.cfg.MaxQueued
	before := mt.m.Records()
	b, err := mt.m.Step(machine.Accept{At: at, ID: id, Payload: payload})
	if full {
		if !errors.Is(err, machine.ErrQueueFull) {
			t.Fatalf("accept %s with %d queued (MaxQueued %d): error %v; want ErrQueueFull", id, mt.m.Queued(), mt.cfg.MaxQueued, err)
		}
		if diff := gocmp.Diff(before, mt.m.Records()); diff != "" {
			t.Fatalf("a refused accept changed the records (-before +after):\n%s", diff)
		}
		return
	}
	if err != nil {
		t.Fatalf("accept %s: %v", id, err)
	}
	var want machine.Ack
	if known {
		want = machine.Ack{ID: id, Seq: mt.events[id].seq, Duplicate: true}
	} else {
		mt.lastSeq++
		want = machine.Ack{ID: id, Seq: mt.lastSeq}
		mt.events[id] = &refEvent{seq: mt.lastSeq, payload: payload}
		// Persist before acknowledging: the new record is in this batch.
		if !slices.ContainsFunc(b.Persist, func(r machine.Record) bool { return r.ID == id }) {
			t.Fatalf("ack of new event %s without its record in Persist", id)
		}
	}
	if diff := gocmp.Diff([]machine.Ack{want}, b.Acks); diff != "" {
		t.Fatalf("accept %s: acks (-want +got):\n%s", id, diff)
	}
	mt.apply(t, b, before)
}

// burst accepts several new events and delivers whatever is in flight
// after each, so that history (terminal records) grows past what the
// machine keeps in its live list.
func (mt *modelTest) burst(t *rapid.T) {
	for range rapid.IntRange(1, 20).Draw(t, "burst") {
		if mt.m.Queued() < mt.cfg.MaxQueued {
			mt.bursts++
			id := fmt.Sprintf("x%d", mt.bursts)
			before := mt.m.Records()
			b, err := mt.m.Step(machine.Accept{At: mt.now, ID: id})
			if err != nil {
				t.Fatalf("burst accept %s: %v", id, err)
			}
			mt.lastSeq++
			mt.events[id] = &refEvent{seq: mt.lastSeq, payload: nil}
			mt.apply(t, b, before)
		}
		for _, x := range mt.m.InFlight() {
			before := mt.m.Records()
			b, err := mt.m.Step(machine.Result{At: mt.now, ID: x.ID, Attempt: x.Attempt, Outcome: machine.OutcomeDelivered})
			if err != nil {
				t.Fatalf("burst result %s#%d: %v", x.ID, x.Attempt, err)
			}
			mt.apply(t, b, before)
		}
		mt.now = mt.now.Add(time.Millisecond)
	}
}

// adopt hands over a record a shared store accepted: sometimes for an ID
// already known (to be ignored), usually a new one with a Seq above the
// last, maybe leaving a gap.
func (mt *modelTest) adopt(t *rapid.T) {
	at := mt.advance(t)
	id := rapid.SampledFrom(ids).Draw(t, "id")
	r := machine.Record{
		ID: id, Seq: mt.lastSeq + 1 + rapid.Uint64Range(0, 2).Draw(t, "seqGap"),
		Payload:    []byte(rapid.StringN(0, 4, 4).Draw(t, "payload")),
		AcceptedAt: at, State: machine.Pending, NextAt: at,
	}
	known := mt.events[id] != nil
	if !known {
		// The shared store holds it before the machine hears of it.
		mt.store[id] = r
	}
	before := mt.m.Records()
	b, err := mt.m.Step(machine.Adopt{At: at, Record: r})
	if err != nil {
		t.Fatalf("%s: %v", machine.Adopt{At: at, Record: r}.Format(epoch), err)
	}
	if len(b.Acks) != 0 {
		t.Fatalf("adopt acknowledged %v", b.Acks)
	}
	if known {
		if b.Ignored == "" {
			t.Fatalf("adopt of known %s not ignored: %s", id, b.Format(epoch))
		}
	} else {
		mt.lastSeq = r.Seq
		mt.events[id] = &refEvent{seq: r.Seq, payload: r.Payload}
	}
	mt.apply(t, b, before)
}

func (mt *modelTest) tick(t *rapid.T) {
	at := mt.advance(t)
	before := mt.m.Records()
	b, err := mt.m.Step(machine.Tick{At: at})
	if err != nil {
		t.Fatalf("tick: %v", err)
	}
	mt.apply(t, b, before)
}

var outcomes = []machine.Outcome{machine.OutcomeDelivered, machine.OutcomeFailed, machine.OutcomeRefused, machine.OutcomeTimedOut}

func (mt *modelTest) drawResult(t *rapid.T, x machine.Send) machine.Result {
	in := machine.Result{At: mt.advance(t), ID: x.ID, Attempt: x.Attempt, Outcome: rapid.SampledFrom(outcomes).Draw(t, "outcome")}
	if in.Outcome == machine.OutcomeFailed && rapid.Bool().Draw(t, "hint") {
		in.RetryAfter = time.Duration(rapid.IntRange(1, 10_000).Draw(t, "retryAfterMs")) * time.Millisecond
	}
	return in
}

// result reports the outcome of an attempt the machine awaits.
func (mt *modelTest) result(t *rapid.T) {
	flying := mt.m.InFlight()
	if len(flying) == 0 {
		t.Skip("nothing in flight")
	}
	in := mt.drawResult(t, rapid.SampledFrom(flying).Draw(t, "attempt"))
	before := mt.m.Records()
	b, err := mt.m.Step(in)
	if err != nil {
		t.Fatalf("%s: %v", in.Format(epoch), err)
	}
	mt.apply(t, b, before)
}

// staleResult reports the outcome of any attempt ever sent (often not the
// one in flight), or of an ID never accepted.
func (mt *modelTest) staleResult(t *rapid.T) {
	x := machine.Send{ID: "unknown", Attempt: 1}
	if len(mt.sent) > 0 && rapid.IntRange(0, 9).Draw(t, "known") > 0 {
		x = rapid.SampledFrom(mt.sent).Draw(t, "sent")
	}
	in := mt.drawResult(t, x)
	stale := !slices.ContainsFunc(mt.m.InFlight(), func(f machine.Send) bool { return f.ID == x.ID && f.Attempt == x.Attempt })
	before := mt.m.Records()
	b, err := mt.m.Step(in)
	if err != nil {
		t.Fatalf("%s: %v", in.Format(epoch), err)
	}
	if stale && b.Ignored == "" {
		t.Fatalf("%s: not in flight, yet not ignored: %s", in.Format(epoch), b.Format(epoch))
	}
	mt.apply(t, b, before)
}

func (mt *modelTest) probeResult(t *rapid.T) {
	if mt.probeN == 0 {
		t.Skip("no probe sent")
	}
	n := mt.probeN
	if rapid.IntRange(0, 4).Draw(t, "staleProbe") == 0 {
		n = rapid.Uint64Range(1, mt.probeN).Draw(t, "probeN")
	}
	in := machine.ProbeResult{At: mt.advance(t), N: n, Healthy: rapid.Bool().Draw(t, "healthy")}
	before := mt.m.Records()
	b, err := mt.m.Step(in)
	if err != nil {
		t.Fatalf("%s: %v", in.Format(epoch), err)
	}
	mt.apply(t, b, before)
}

// restart rebuilds the machine from what the caller persisted; what only
// memory knew (attempts in flight, probes, the streak) is lost.
func (mt *modelTest) restart(t *rapid.T) {
	at := mt.advance(t)
	records := make([]machine.Record, 0, len(mt.store))
	for _, r := range mt.store {
		records = append(records, r)
	}
	m, b, err := machine.Recover(mt.cfg, at, records)
	if err != nil {
		t.Fatalf("Recover from the persisted records: %v", err)
	}
	before := mt.m.Records()
	mt.m = m
	mt.probeN = 0
	if len(b.Acks) != 0 {
		t.Fatalf("Recover acknowledged %v", b.Acks)
	}
	mt.apply(t, b, before)
}

// apply checks one batch against what was known before it, then records
// it in the model: the store persists it, the sends are counted.
func (mt *modelTest) apply(t *rapid.T, b machine.Batch, before []machine.Record) {
	prev := map[string]machine.Record{}
	for _, r := range before {
		prev[r.ID] = r
	}
	after := mt.m.Records()
	bySeq := map[uint64]machine.Record{}
	for _, r := range after {
		bySeq[r.Seq] = r
	}

	// Persist: once each, in Seq order, never a terminal record again.
	for i, r := range b.Persist {
		if i > 0 && b.Persist[i-1].Seq >= r.Seq {
			t.Fatalf("Persist out of Seq order or repeated: %s then %s", b.Persist[i-1].Format(epoch), r.Format(epoch))
		}
		if ev := mt.events[r.ID]; ev != nil && ev.terminal != nil {
			t.Fatalf("terminal %s persisted again as %s", ev.terminal.Format(epoch), r.Format(epoch))
		}
	}

	// The circuit: transitions chain from the state before the step to
	// the state after it; sends only when closed, probes only when not.
	circuit := mt.m.Circuit()
	if len(b.Circuit) > 0 {
		for i := 1; i < len(b.Circuit); i++ {
			if b.Circuit[i].From != b.Circuit[i-1].To {
				t.Fatalf("circuit changes do not chain: %v", b.Circuit)
			}
		}
		if last := b.Circuit[len(b.Circuit)-1].To; last != circuit {
			t.Fatalf("last circuit change to %s, but the circuit is %s", last, circuit)
		}
	}
	if len(b.Sends) > 0 && circuit != machine.Closed {
		t.Fatalf("sent %v while the circuit is %s (changes %v)", b.Sends, circuit, b.Circuit)
	}
	if len(b.Probes) > 1 {
		t.Fatalf("%d probes in one step", len(b.Probes))
	}
	if len(b.Probes) == 1 && circuit == machine.Closed {
		t.Fatalf("probe %d sent while the circuit is closed", b.Probes[0].N)
	}

	for _, x := range b.Sends {
		ev := mt.events[x.ID]
		if ev == nil {
			t.Fatalf("send %s#%d of an ID never acknowledged", x.ID, x.Attempt)
		}
		// Persist precedes: the attempt is counted in this batch.
		i := slices.IndexFunc(b.Persist, func(r machine.Record) bool { return r.ID == x.ID })
		if i < 0 || b.Persist[i].Attempts != x.Attempt {
			t.Fatalf("send %s#%d without its record persisted with attempts=%d in the same batch", x.ID, x.Attempt, x.Attempt)
		}
		if p, ok := prev[x.ID]; ok && x.Attempt != p.Attempts+1 {
			t.Fatalf("send %s#%d after %d attempts", x.ID, x.Attempt, p.Attempts)
		}
		if x.Seq != ev.seq || !slices.Equal(x.Payload, ev.payload) {
			t.Fatalf("send %s seq=%d payload=%q; accepted as seq=%d payload=%q", x.ID, x.Seq, x.Payload, ev.seq, ev.payload)
		}
		if ev.terminal != nil {
			t.Fatalf("send %s#%d of a terminal event", x.ID, x.Attempt)
		}
		ev.sends++
		if ev.sends > mt.cfg.MaxAttempts {
			t.Fatalf("%s sent %d times; MaxAttempts is %d", x.ID, ev.sends, mt.cfg.MaxAttempts)
		}
		if mt.cfg.Ordering == machine.Strict {
			// Acceptance order: every earlier event is done.
			for s := uint64(1); s < x.Seq; s++ {
				if r, ok := bySeq[s]; ok && !r.State.Terminal() {
					t.Fatalf("strict: sent %s (seq %d) while %s is not terminal", x.ID, x.Seq, r.Format(epoch))
				}
			}
		}
		mt.sent = append(mt.sent, x)
		mt.sentAt = append(mt.sentAt, mt.now)
	}
	if mt.cfg.Ordering == machine.Strict && len(b.Sends) > 1 {
		t.Fatalf("strict: %d sends in one step", len(b.Sends))
	}

	for _, p := range b.Probes {
		if p.N != mt.probeN+1 {
			t.Fatalf("probe %d after probe %d", p.N, mt.probeN)
		}
		mt.probeN = p.N
	}

	for _, r := range b.Persist {
		mt.store[r.ID] = r
	}
	for _, r := range after {
		if ev := mt.events[r.ID]; ev != nil && ev.terminal == nil && r.State.Terminal() {
			ev.terminal = &r
		}
	}
	mt.wake = b.WakeAt
	if !b.WakeAt.IsZero() && !b.WakeAt.After(mt.now) {
		t.Fatalf("WakeAt %s is not after now %s", machine.FormatInstant(b.WakeAt, epoch), machine.FormatInstant(mt.now, epoch))
	}
	if mt.m.Queued() > 0 && b.WakeAt.IsZero() {
		t.Fatalf("%d events wait but the machine wants no tick", mt.m.Queued())
	}
}

// check holds after every action.
func (mt *modelTest) check(t *rapid.T) {
	recs := mt.m.Records()
	byID := map[string]machine.Record{}
	queued := 0
	for i, r := range recs {
		byID[r.ID] = r
		if i > 0 && recs[i-1].Seq >= r.Seq {
			t.Fatalf("Records out of Seq order: %s then %s", recs[i-1].Format(epoch), r.Format(epoch))
		}
		if !r.State.Terminal() {
			queued++
		}
		if r.State == machine.Parked && mt.m.Circuit() != machine.Open {
			t.Fatalf("%s parked while the circuit is %s: nothing would release it", r.Format(epoch), mt.m.Circuit())
		}
	}
	// Records never disappear, and every acknowledged ID has one.
	if len(recs) < mt.lastLen {
		t.Fatalf("records shrank from %d to %d", mt.lastLen, len(recs))
	}
	mt.lastLen = len(recs)
	if len(recs) != len(mt.events) {
		t.Fatalf("%d records for %d acknowledged events", len(recs), len(mt.events))
	}
	for id, ev := range mt.events {
		r, ok := byID[id]
		if !ok {
			t.Fatalf("acknowledged event %s has no record", id)
		}
		if r.Seq != ev.seq {
			t.Fatalf("%s has seq %d; it was acknowledged with %d", id, r.Seq, ev.seq)
		}
		if ev.terminal != nil && !sameRecord(*ev.terminal, r) {
			t.Fatalf("terminal record of %s changed (-then +now):\n%s", id, gocmp.Diff(*ev.terminal, r))
		}
		if r.Attempts < ev.sends {
			t.Fatalf("%s persisted with %d attempts after %d sends", id, r.Attempts, ev.sends)
		}
		if r.Attempts > mt.cfg.MaxAttempts {
			t.Fatalf("%s has %d attempts; MaxAttempts is %d", id, r.Attempts, mt.cfg.MaxAttempts)
		}
	}
	// The store, fed only by Persist, holds exactly what Records says.
	stored := make([]machine.Record, 0, len(mt.store))
	for _, r := range mt.store {
		stored = append(stored, r)
	}
	slices.SortFunc(stored, func(a, b machine.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	if !slices.EqualFunc(recs, stored, sameRecord) {
		t.Fatalf("the persisted store differs from Records (-records +store):\n%s", gocmp.Diff(recs, stored))
	}
	if mt.m.Queued() != queued {
		t.Fatalf("Queued() = %d; %d records are not terminal", mt.m.Queued(), queued)
	}
	flying := mt.m.InFlight()
	limit := 1
	if mt.cfg.Ordering == machine.Independent {
		limit = mt.cfg.Window
	}
	if len(flying) > limit {
		t.Fatalf("%d attempts in flight; the limit is %d", len(flying), limit)
	}
	for _, x := range flying {
		r := byID[x.ID]
		if r.State.Terminal() || r.Attempts != x.Attempt {
			t.Fatalf("in flight %s#%d but the record is %s", x.ID, x.Attempt, r.Format(epoch))
		}
	}
}

// sameRecord is cmp.Diff's verdict on two records, cheaply.
func sameRecord(a, b machine.Record) bool {
	return a.ID == b.ID && a.Seq == b.Seq && bytes.Equal(a.Payload, b.Payload) && a.AcceptedAt.Equal(b.AcceptedAt) &&
		a.State == b.State && a.Attempts == b.Attempts && a.NextAt.Equal(b.NextAt) && a.Reason == b.Reason
}

// String helps rapid print the model on failure.
func (mt *modelTest) String() string {
	return fmt.Sprintf("config %+v at %s", mt.cfg, machine.FormatInstant(mt.now, epoch))
}

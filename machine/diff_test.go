// The differential test proves the indexed machine equal to the machine it
// replaced (kept in internal/reference): rapid feeds both the same inputs
// (accepts, adoptions, ticks, results with every outcome, stale and
// duplicate results, probe results, misuse, restarts, and Recover from
// arbitrary valid record sets) and after every
// input requires the same error, the same Batch, the same Records,
// circuit, queue, in-flight list and stats, compared with cmp.Diff. With
// an idempotency window set, the new machine may forget settled records:
// then inputs never name a forgotten ID, batches must still be identical,
// and Records must be the reference's minus settled records only.
package machine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/machine/internal/reference"
)

// diffSteps counts the inputs compared across a test run, for the log.
var diffSteps int

type diffTest struct {
	cfg    machine.Config
	m      *machine.Machine
	ref    *reference.Machine
	now    time.Time
	wake   time.Time
	sent   []machine.Send // every Send, for stale results
	probeN uint64         // highest probe number of this incarnation
	fresh  int            // names fresh IDs uniquely
	ids    []string       // every ID offered so far, for duplicates
}

func drawDiffConfig(t *rapid.T) machine.Config {
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
		MaxQueued:         rapid.IntRange(1, 40).Draw(t, "maxQueued"),
		MaxPayloadBytes:   4,
		Seed:              rapid.Uint64().Draw(t, "seed"),
	}
	c.MaxBackoff = c.BaseBackoff + ms("maxBackoffExtra", 0, 4_000)
	c.ProbeMaxInterval = c.ProbeBaseInterval + ms("probeMaxExtra", 0, 4_000)
	if c.Ordering == machine.Independent {
		c.Window = rapid.IntRange(1, 6).Draw(t, "window")
	}
	if rapid.IntRange(0, 3).Draw(t, "windowed") == 0 {
		c.KeepSettled = rapid.IntRange(0, 6).Draw(t, "keepSettled")
		c.KeepSettledFor = ms("keepSettledFor", 0, 10_000)
	}
	return c
}

func TestDifferential(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := &diffTest{cfg: drawDiffConfig(t), now: epoch}
		if rapid.Bool().Draw(t, "startByRecover") {
			dt.recoverFrom(t, dt.drawRecords(t))
		} else {
			m, err := machine.New(dt.cfg)
			ref, rerr := reference.New(dt.cfg)
			if err != nil || rerr != nil {
				t.Fatalf("New: %v / reference %v", err, rerr)
			}
			dt.m, dt.ref = m, ref
		}
		t.Repeat(map[string]func(*rapid.T){
			"accept":       dt.accept,
			"burst":        dt.burst,
			"adopt":        dt.adopt,
			"tick":         dt.tick,
			"result":       dt.result,
			"stale-result": dt.staleResult,
			"probe-result": dt.probeResult,
			"misuse":       dt.misuse,
			"restart":      dt.restart,
			"":             dt.check,
		})
	})
	t.Logf("%d inputs compared", diffSteps)
}

// advance moves the clock: not at all, a little, far (past MaxAge), to the
// last WakeAt, or just before it.
func (dt *diffTest) advance(t *rapid.T) time.Time {
	switch rapid.IntRange(0, 5).Draw(t, "clock") {
	case 1, 2:
		dt.now = dt.now.Add(time.Duration(rapid.IntRange(1, 2_000).Draw(t, "ms")) * time.Millisecond)
	case 3:
		dt.now = dt.now.Add(time.Duration(rapid.IntRange(1, 30).Draw(t, "s")) * time.Second)
	case 4:
		if dt.wake.After(dt.now) {
			dt.now = dt.wake
		}
	case 5:
		if dt.wake.After(dt.now.Add(time.Nanosecond)) {
			dt.now = dt.wake.Add(-time.Nanosecond)
		}
	}
	return dt.now
}

// forgotten reports whether the new machine forgot id while the reference
// still knows it: inputs that name it would legitimately differ.
func (dt *diffTest) forgotten(id string) bool {
	if dt.cfg.KeepSettled == 0 && dt.cfg.KeepSettledFor == 0 {
		return false
	}
	inRef := slices.ContainsFunc(dt.ref.Records(), func(r machine.Record) bool { return r.ID == id })
	inNew := slices.ContainsFunc(dt.m.Records(), func(r machine.Record) bool { return r.ID == id })
	return inRef && !inNew
}

// drawID picks a known ID (a duplicate) or a fresh one, never a forgotten one.
func (dt *diffTest) drawID(t *rapid.T) string {
	if len(dt.ids) > 0 && rapid.IntRange(0, 3).Draw(t, "dup") == 0 {
		if id := rapid.SampledFrom(dt.ids).Draw(t, "known"); !dt.forgotten(id) {
			return id
		}
	}
	dt.fresh++
	id := fmt.Sprintf("e%d", dt.fresh)
	dt.ids = append(dt.ids, id)
	return id
}

func drawPayload(t *rapid.T, limit int) []byte {
	return []byte(rapid.StringN(0, limit, limit).Draw(t, "payload"))
}

// step feeds in to both machines and compares what they say.
func (dt *diffTest) step(t *rapid.T, in machine.Input) {
	diffSteps++
	b, err := dt.m.Step(in)
	rb, rerr := dt.ref.Step(in)
	if fmt.Sprint(err) != fmt.Sprint(rerr) {
		t.Fatalf("%s: error %v; reference %v", in.Format(epoch), err, rerr)
	}
	if diff := gocmp.Diff(rb, b); diff != "" {
		t.Fatalf("%s: batch (-reference +machine):\n%s", in.Format(epoch), diff)
	}
	dt.record(b)
}

func (dt *diffTest) record(b machine.Batch) {
	dt.sent = append(dt.sent, b.Sends...)
	for _, p := range b.Probes {
		dt.probeN = p.N
	}
	if !b.WakeAt.IsZero() {
		dt.wake = b.WakeAt
	}
}

func (dt *diffTest) accept(t *rapid.T) {
	at := dt.advance(t)
	limit := dt.cfg.MaxPayloadBytes
	if rapid.IntRange(0, 9).Draw(t, "oversized") == 0 {
		limit++
	}
	dt.step(t, machine.Accept{At: at, ID: dt.drawID(t), Payload: drawPayload(t, limit)})
}

// burst accepts several fresh events at one instant and delivers what is
// in flight after each, so that history grows.
func (dt *diffTest) burst(t *rapid.T) {
	for range rapid.IntRange(1, 15).Draw(t, "burst") {
		dt.fresh++
		id := fmt.Sprintf("e%d", dt.fresh)
		dt.ids = append(dt.ids, id)
		dt.step(t, machine.Accept{At: dt.now, ID: id})
		if rapid.Bool().Draw(t, "deliver") {
			for _, x := range dt.m.InFlight() {
				// An earlier result of this loop may have let x die (its
				// attempt timed out) and leave the window since.
				if !dt.forgotten(x.ID) {
					dt.step(t, machine.Result{At: dt.now, ID: x.ID, Attempt: x.Attempt, Outcome: machine.OutcomeDelivered})
				}
			}
		}
		dt.now = dt.now.Add(time.Duration(rapid.IntRange(0, 50).Draw(t, "gapMs")) * time.Millisecond)
	}
}

// adopt hands over a record a shared store accepted: usually new, with a
// Seq above the last (gaps allowed) and an acceptance time that may lie
// well before now (so expiry is out of acceptance order); sometimes known,
// oversized, not new, or with a Seq too low.
func (dt *diffTest) adopt(t *rapid.T) {
	at := dt.advance(t)
	var last uint64
	if recs := dt.ref.Records(); len(recs) > 0 {
		last = recs[len(recs)-1].Seq
	}
	r := machine.Record{
		ID:         dt.drawID(t),
		Seq:        last + rapid.Uint64Range(0, 3).Draw(t, "seqGap"),
		Payload:    drawPayload(t, dt.cfg.MaxPayloadBytes+rapid.IntRange(0, 1).Draw(t, "over")),
		AcceptedAt: at.Add(-time.Duration(rapid.IntRange(0, 25_000).Draw(t, "ageMs")) * time.Millisecond),
		State:      machine.Pending,
	}
	r.NextAt = r.AcceptedAt.Add(time.Duration(rapid.IntRange(0, 5_000).Draw(t, "nextMs")) * time.Millisecond)
	if rapid.IntRange(0, 9).Draw(t, "notNew") == 0 {
		r.State, r.Attempts = machine.Retry, 1
	}
	dt.step(t, machine.Adopt{At: at, Record: r})
}

func (dt *diffTest) tick(t *rapid.T) { dt.step(t, machine.Tick{At: dt.advance(t)}) }

var diffOutcomes = []machine.Outcome{machine.OutcomeDelivered, machine.OutcomeFailed, machine.OutcomeRefused, machine.OutcomeTimedOut}

func (dt *diffTest) drawResult(t *rapid.T, x machine.Send) machine.Result {
	in := machine.Result{At: dt.advance(t), ID: x.ID, Attempt: x.Attempt, Outcome: rapid.SampledFrom(diffOutcomes).Draw(t, "outcome")}
	if in.Outcome == machine.OutcomeFailed && rapid.Bool().Draw(t, "hint") {
		in.RetryAfter = time.Duration(rapid.IntRange(1, 10_000).Draw(t, "retryAfterMs")) * time.Millisecond
	}
	return in
}

func (dt *diffTest) result(t *rapid.T) {
	flying := dt.m.InFlight()
	if len(flying) == 0 {
		t.Skip("nothing in flight")
	}
	dt.step(t, dt.drawResult(t, rapid.SampledFrom(flying).Draw(t, "attempt")))
}

// staleResult reports on any attempt ever sent (twice, late, after a
// restart), or on an ID never accepted.
func (dt *diffTest) staleResult(t *rapid.T) {
	x := machine.Send{ID: "unknown", Attempt: 1}
	if len(dt.sent) > 0 && rapid.IntRange(0, 9).Draw(t, "known") > 0 {
		x = rapid.SampledFrom(dt.sent).Draw(t, "sent")
	}
	if dt.forgotten(x.ID) {
		t.Skip("the new machine forgot it")
	}
	dt.step(t, dt.drawResult(t, x))
}

func (dt *diffTest) probeResult(t *rapid.T) {
	n := rapid.Uint64Range(1, dt.probeN+2).Draw(t, "probeN")
	if dt.probeN > 0 && rapid.IntRange(0, 2).Draw(t, "current") > 0 {
		n = dt.probeN
	}
	dt.step(t, machine.ProbeResult{At: dt.advance(t), N: n, Healthy: rapid.Bool().Draw(t, "healthy")})
}

// misuse sends inputs that both machines must refuse with the same error.
func (dt *diffTest) misuse(t *rapid.T) {
	var in machine.Input
	switch rapid.IntRange(0, 5).Draw(t, "misuse") {
	case 0:
		in = machine.Tick{At: dt.now.Add(-time.Millisecond)}
	case 1:
		in = machine.Accept{At: dt.now}
	case 2:
		in = machine.Result{At: dt.now, ID: "x", Attempt: 0, Outcome: machine.OutcomeDelivered}
	case 3:
		in = machine.Result{At: dt.now, ID: "x", Attempt: 1, Outcome: machine.Outcome(9)}
	case 4:
		in = machine.ProbeResult{At: dt.now}
	case 5:
		if len(dt.sent) == 0 {
			t.Skip("nothing sent")
		}
		x := rapid.SampledFrom(dt.sent).Draw(t, "sent")
		if dt.forgotten(x.ID) {
			t.Skip("the new machine forgot it")
		}
		in = machine.Result{At: dt.now, ID: x.ID, Attempt: x.Attempt + 5, Outcome: machine.OutcomeDelivered}
	}
	dt.step(t, in)
}

// restart rebuilds both machines from what the store holds: every record
// the reference has, which is every record ever persisted.
func (dt *diffTest) restart(t *rapid.T) {
	dt.advance(t)
	recs := dt.ref.Records()
	rapid.Permutation(recs).Draw(t, "order")
	dt.recoverFrom(t, recs)
}

// drawRecords draws a valid record set for Recover: distinct IDs and Seqs
// (gaps allowed), every state, attempts up to past MaxAttempts, and times
// anywhere around now.
func (dt *diffTest) drawRecords(t *rapid.T) []machine.Record {
	n := rapid.IntRange(0, 12).Draw(t, "records")
	seqs := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 30), n, n, func(s uint64) uint64 { return s }).Draw(t, "seqs")
	ms := func(label string) time.Duration {
		return time.Duration(rapid.IntRange(-25_000, 5_000).Draw(t, label)) * time.Millisecond
	}
	recs := make([]machine.Record, n)
	for i, seq := range seqs {
		dt.fresh++
		id := fmt.Sprintf("e%d", dt.fresh)
		dt.ids = append(dt.ids, id)
		r := machine.Record{
			ID: id, Seq: seq, Payload: drawPayload(t, dt.cfg.MaxPayloadBytes),
			AcceptedAt: dt.now.Add(ms("accepted")),
			State:      machine.State(rapid.IntRange(int(machine.Pending), int(machine.Dead)).Draw(t, "state")),
			Attempts:   rapid.IntRange(0, dt.cfg.MaxAttempts+1).Draw(t, "attempts"),
			NextAt:     dt.now.Add(ms("next")),
		}
		if r.State == machine.Dead {
			r.Reason = rapid.SampledFrom([]machine.DeadReason{machine.Exhausted, machine.Expired, machine.Rejected}).Draw(t, "reason")
		}
		recs[i] = r
	}
	return recs
}

func (dt *diffTest) recoverFrom(t *rapid.T, recs []machine.Record) {
	diffSteps++
	m, b, err := machine.Recover(dt.cfg, dt.now, recs)
	ref, rb, rerr := reference.Recover(dt.cfg, dt.now, recs)
	if fmt.Sprint(err) != fmt.Sprint(rerr) {
		t.Fatalf("Recover: error %v; reference %v", err, rerr)
	}
	if err != nil {
		t.Fatalf("Recover from a valid record set: %v", err)
	}
	if diff := gocmp.Diff(rb, b); diff != "" {
		t.Fatalf("Recover: batch (-reference +machine):\n%s", diff)
	}
	dt.m, dt.ref, dt.probeN, dt.wake = m, ref, 0, time.Time{}
	dt.record(b)
}

// check compares everything the two machines show.
func (dt *diffTest) check(t *rapid.T) {
	if dt.m == nil {
		return
	}
	type view struct {
		Circuit  machine.Circuit
		Queued   int
		InFlight []machine.Send
		Stats    machine.Stats
		Now      time.Time
	}
	got := view{dt.m.Circuit(), dt.m.Queued(), dt.m.InFlight(), dt.m.Stats(), dt.m.Now()}
	want := view{dt.ref.Circuit(), dt.ref.Queued(), dt.ref.InFlight(), dt.ref.Stats(), dt.ref.Now()}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Fatalf("state (-reference +machine):\n%s", diff)
	}
	recs, refRecs := dt.m.Records(), dt.ref.Records()
	if dt.cfg.KeepSettled == 0 && dt.cfg.KeepSettledFor == 0 {
		if diff := gocmp.Diff(refRecs, recs); diff != "" {
			t.Fatalf("Records (-reference +machine):\n%s", diff)
		}
		return
	}
	checkForgetting(t, dt.cfg, refRecs, recs)
}

// checkForgetting holds a windowed machine's records to the reference's:
// the same records in the same order, less some settled ones; and no more
// settled ones forgotten than the window's count asks (forgetting by time
// and of adopted records is checked in window_test.go).
func checkForgetting(t *rapid.T, cfg machine.Config, refRecs, recs []machine.Record) {
	i := 0
	settledKept, settledForgotten := 0, 0
	for _, want := range refRecs {
		if i < len(recs) && recs[i].ID == want.ID {
			if diff := gocmp.Diff(want, recs[i]); diff != "" {
				t.Fatalf("record %s (-reference +machine):\n%s", want.ID, diff)
			}
			if want.State.Terminal() {
				settledKept++
			}
			i++
			continue
		}
		if !want.State.Terminal() {
			t.Fatalf("the machine forgot %s, which is not settled", want.Format(epoch))
		}
		settledForgotten++
	}
	if i != len(recs) {
		t.Fatalf("the machine holds %s, which the reference does not (or out of order)", recs[i].Format(epoch))
	}
	if cfg.KeepSettled > 0 && settledKept > cfg.KeepSettled {
		t.Fatalf("the machine keeps %d settled records; KeepSettled is %d", settledKept, cfg.KeepSettled)
	}
}

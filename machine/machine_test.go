// Table tests prove the machine's small contracts one row at a time, each
// row with a reason, compared with cmp.Diff (-want +got): config validation
// names the bad field, the backoff schedules cap, double, jitter within
// bounds and never overflow, and misuse errors wrap the right sentinel and
// change nothing.
package machine_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
)

// configError is what a test can see of a Validate result.
type configError struct {
	Field string // first word after the sentinel; "" when valid
	Wraps bool   // errors.Is(err, ErrInvalidConfig)
}

func describeConfigError(err error) configError {
	if err == nil {
		return configError{}
	}
	rest, _ := strings.CutPrefix(err.Error(), machine.ErrInvalidConfig.Error()+": ")
	field, _, _ := strings.Cut(rest, " ")
	return configError{Field: field, Wraps: errors.Is(err, machine.ErrInvalidConfig)}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		change func(*machine.Config)
		want   configError
	}{
		{"default", "DefaultConfig must be valid", func(*machine.Config) {}, configError{}},
		{"strict-window-0", "strict reads Window 0 as 1", func(c *machine.Config) { c.Window = 0 }, configError{}},
		{"independent-window-5", "independent allows any Window >= 1",
			func(c *machine.Config) { c.Ordering, c.Window = machine.Independent, 5 }, configError{}},
		{"jitter-0", "0% jitter is allowed", func(c *machine.Config) { c.JitterPercent = 0 }, configError{}},
		{"jitter-100", "100% jitter is allowed", func(c *machine.Config) { c.JitterPercent = 100 }, configError{}},
		{"retry-after-0", "MaxRetryAfter 0 ignores hints", func(c *machine.Config) { c.MaxRetryAfter = 0 }, configError{}},
		{"backoff-equal", "MaxBackoff may equal BaseBackoff", func(c *machine.Config) { c.MaxBackoff = c.BaseBackoff }, configError{}},
		{"probe-equal", "ProbeMaxInterval may equal ProbeBaseInterval",
			func(c *machine.Config) { c.ProbeMaxInterval = c.ProbeBaseInterval }, configError{}},
		{"seed-0", "any seed is valid", func(c *machine.Config) { c.Seed = 0 }, configError{}},

		{"ordering-zero", "the zero Ordering is invalid so the choice is explicit",
			func(c *machine.Config) { c.Ordering = 0 }, configError{"Ordering", true}},
		{"ordering-unknown", "only Strict and Independent exist",
			func(c *machine.Config) { c.Ordering = 3 }, configError{"Ordering", true}},
		{"strict-window-2", "strict allows one in flight",
			func(c *machine.Config) { c.Window = 2 }, configError{"Window", true}},
		{"strict-window-negative", "a negative window is never valid",
			func(c *machine.Config) { c.Window = -1 }, configError{"Window", true}},
		{"independent-window-0", "independent needs at least one in flight",
			func(c *machine.Config) { c.Ordering, c.Window = machine.Independent, 0 }, configError{"Window", true}},
		{"max-attempts-0", "at least one attempt", func(c *machine.Config) { c.MaxAttempts = 0 }, configError{"MaxAttempts", true}},
		{"max-age-0", "durations must be positive", func(c *machine.Config) { c.MaxAge = 0 }, configError{"MaxAge", true}},
		{"max-age-negative", "durations must be positive", func(c *machine.Config) { c.MaxAge = -time.Second }, configError{"MaxAge", true}},
		{"base-backoff-0", "durations must be positive", func(c *machine.Config) { c.BaseBackoff = 0 }, configError{"BaseBackoff", true}},
		{"max-backoff-0", "durations must be positive", func(c *machine.Config) { c.MaxBackoff = 0 }, configError{"MaxBackoff", true}},
		{"max-backoff-below-base", "the cap must not be below the base",
			func(c *machine.Config) { c.MaxBackoff = c.BaseBackoff - 1 }, configError{"MaxBackoff", true}},
		{"attempt-timeout-0", "durations must be positive", func(c *machine.Config) { c.AttemptTimeout = 0 }, configError{"AttemptTimeout", true}},
		{"probe-timeout-0", "durations must be positive", func(c *machine.Config) { c.ProbeTimeout = 0 }, configError{"ProbeTimeout", true}},
		{"probe-base-0", "durations must be positive", func(c *machine.Config) { c.ProbeBaseInterval = 0 }, configError{"ProbeBaseInterval", true}},
		{"probe-max-0", "durations must be positive", func(c *machine.Config) { c.ProbeMaxInterval = 0 }, configError{"ProbeMaxInterval", true}},
		{"probe-max-below-base", "the cap must not be below the base",
			func(c *machine.Config) { c.ProbeMaxInterval = c.ProbeBaseInterval - 1 }, configError{"ProbeMaxInterval", true}},
		{"jitter-negative", "percent within 0..100", func(c *machine.Config) { c.JitterPercent = -1 }, configError{"JitterPercent", true}},
		{"jitter-101", "percent within 0..100", func(c *machine.Config) { c.JitterPercent = 101 }, configError{"JitterPercent", true}},
		{"retry-after-negative", "a negative bound means nothing", func(c *machine.Config) { c.MaxRetryAfter = -1 }, configError{"MaxRetryAfter", true}},
		{"threshold-0", "the breaker needs a streak of at least 1", func(c *machine.Config) { c.BreakerThreshold = 0 }, configError{"BreakerThreshold", true}},
		{"max-queued-0", "at least one event may wait", func(c *machine.Config) { c.MaxQueued = 0 }, configError{"MaxQueued", true}},
		{"max-payload-0", "a payload of at least one byte", func(c *machine.Config) { c.MaxPayloadBytes = 0 }, configError{"MaxPayloadBytes", true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := machine.DefaultConfig()
			tt.change(&cfg)
			if diff := cmp.Diff(tt.want, describeConfigError(cfg.Validate())); diff != "" {
				t.Errorf("Validate (%s) (-want +got):\n%s", tt.reason, diff)
			}
			// New and Recover refuse exactly what Validate refuses.
			m, err := machine.New(cfg)
			if diff := cmp.Diff(tt.want, describeConfigError(err)); diff != "" {
				t.Errorf("New (%s) (-want +got):\n%s", tt.reason, diff)
			}
			if (m == nil) != tt.want.Wraps {
				t.Errorf("New returned machine %v with error %v", m, err)
			}
			_, _, err = machine.Recover(cfg, epoch, nil)
			if diff := cmp.Diff(tt.want, describeConfigError(err)); diff != "" {
				t.Errorf("Recover (%s) (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

func TestBackoffSchedule(t *testing.T) {
	const maxDuration = time.Duration(math.MaxInt64)
	tests := []struct {
		name     string
		reason   string
		base     time.Duration
		max      time.Duration
		n        int
		want     time.Duration
		wantProb time.Duration // ProbeBackoff with the same base and cap
	}{
		{"n1", "the first retry waits the base", time.Second, time.Minute, 1, time.Second, time.Second},
		{"n2", "each failure doubles it", time.Second, time.Minute, 2, 2 * time.Second, 2 * time.Second},
		{"n6", "2^5 s = 32s is still under the cap", time.Second, time.Minute, 6, 32 * time.Second, 32 * time.Second},
		{"n7-capped", "64s is capped at 1m", time.Second, time.Minute, 7, time.Minute, time.Minute},
		{"n100-capped", "far past the cap stays at the cap", time.Second, time.Minute, 100, time.Minute, time.Minute},
		{"cap-not-power", "a cap between powers of two is reached exactly", time.Second, 5 * time.Second, 4, 5 * time.Second, 5 * time.Second},
		{"base-equals-cap", "no room to double", time.Second, time.Second, 5, time.Second, time.Second},
		{"n0", "n below 1 is read as the first", time.Second, time.Minute, 0, time.Second, time.Second},
		{"n-negative", "n below 1 is read as the first", time.Second, time.Minute, -7, time.Second, time.Second},
		{"huge-n", "the doubling stops at the cap, it never wraps", time.Second, time.Hour, math.MaxInt, time.Hour, time.Hour},
		{"huge-cap-62", "2^61 ns still doubles", 1, maxDuration, 62, 1 << 61, 1 << 61},
		{"huge-cap-63", "2^62 ns is the last doubling", 1, maxDuration, 63, 1 << 62, 1 << 62},
		{"huge-cap-64", "2^63 ns would overflow: saturate at the cap", 1, maxDuration, 64, maxDuration, maxDuration},
		{"huge-base", "a base at the largest duration stays there", maxDuration, maxDuration, math.MaxInt, maxDuration, maxDuration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := machine.DefaultConfig()
			cfg.JitterPercent = 0
			cfg.BaseBackoff, cfg.MaxBackoff = tt.base, tt.max
			cfg.ProbeBaseInterval, cfg.ProbeMaxInterval = tt.base, tt.max
			got := []time.Duration{cfg.Backoff("e1", tt.n), cfg.ProbeBackoff(tt.n)}
			if diff := cmp.Diff([]time.Duration{tt.want, tt.wantProb}, got); diff != "" {
				t.Errorf("[Backoff, ProbeBackoff] (%s) (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

// TestBackoffPinned pins values a port must reproduce (FORMAT.md lists the
// first three).
func TestBackoffPinned(t *testing.T) {
	cfg := machine.DefaultConfig() // seed 1, 20% jitter, 1s..5m, probes 1s..1m
	tests := []struct {
		name   string
		reason string
		got    time.Duration
		want   time.Duration
	}{
		{"e1-1", "first retry of e1", cfg.Backoff("e1", 1), 918124281},
		{"e1-12", "capped at 5m, jittered", cfg.Backoff("e1", 12), 257170479394},
		{"probe-1", "first probe wait", cfg.ProbeBackoff(1), 962533616},
		{"probe-8", "capped at 1m, jittered", cfg.ProbeBackoff(8), 50161597124},
		{"e2-1", "another ID, another value", cfg.Backoff("e2", 1), 923975733},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	ids := []string{"", "e1", "e2", "\x00probe", strings.Repeat("z", machine.MaxIDBytes)}
	for _, percent := range []int{0, 1, 20, 50, 99, 100} {
		for _, seed := range []uint64{0, 1, math.MaxUint64} {
			cfg := machine.DefaultConfig()
			cfg.JitterPercent, cfg.Seed = percent, seed
			plain := cfg
			plain.JitterPercent = 0
			for _, id := range ids {
				for _, n := range []int{-1, 0, 1, 2, 3, 9, 10, 64, math.MaxInt} {
					d := plain.Backoff(id, n)
					got := cfg.Backoff(id, n)
					low := d - d/100*time.Duration(percent)
					if got < low || got > d {
						t.Errorf("Backoff(%q, %d) at %d%% seed %d = %v; want within [%v, %v]", id, n, percent, seed, got, low, d)
					}
					if again := cfg.Backoff(id, n); again != got {
						t.Errorf("Backoff(%q, %d) is not deterministic: %v then %v", id, n, got, again)
					}
					pd := plain.ProbeBackoff(n)
					pgot := cfg.ProbeBackoff(n)
					if plow := pd - pd/100*time.Duration(percent); pgot < plow || pgot > pd {
						t.Errorf("ProbeBackoff(%d) at %d%% seed %d = %v; want within [%v, %v]", n, percent, seed, pgot, plow, pd)
					}
				}
			}
		}
	}
}

// TestBackoffJitterVaries checks that the jitter depends on the seed, the
// ID and n: a constant would synchronise every client's retries.
func TestBackoffJitterVaries(t *testing.T) {
	cfg := machine.DefaultConfig()
	distinct := func(values []time.Duration) int {
		seen := map[time.Duration]bool{}
		for _, v := range values {
			seen[v] = true
		}
		return len(seen)
	}
	var bySeed, byID, byN []time.Duration
	for i := range 50 {
		c := cfg
		c.Seed = uint64(i)
		bySeed = append(bySeed, c.Backoff("e1", 9))
		byID = append(byID, cfg.Backoff("e"+strings.Repeat("x", i), 9))
		byN = append(byN, cfg.Backoff("e1", 20+i)) // all capped: only jitter differs
	}
	got := []int{distinct(bySeed), distinct(byID), distinct(byN)}
	if diff := cmp.Diff([]int{50, 50, 50}, got); diff != "" {
		t.Errorf("distinct values out of 50 [by seed, by ID, by n] (-want +got):\n%s", diff)
	}
}

// newRecord is a record a shared store hands over for adoption.
func newRecord(id string, seq uint64) machine.Record {
	return machine.Record{ID: id, Seq: seq, State: machine.Pending, AcceptedAt: epoch, NextAt: epoch}
}

func withState(r machine.Record, s machine.State) machine.Record { r.State = s; return r }
func withAttempts(r machine.Record, n int) machine.Record        { r.Attempts = n; return r }
func withPayload(r machine.Record, n int) machine.Record         { r.Payload = make([]byte, n); return r }

// weird is an Input of a type Step does not know.
type weird struct{ machine.Tick }

func TestStepMisuse(t *testing.T) {
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	// setup builds a machine with some history: e1 delivered, e2 in flight
	// (attempt 2), a probe answered, MaxQueued reached.
	setup := func(t *testing.T) *machine.Machine {
		cfg := machine.DefaultConfig()
		cfg.JitterPercent = 0
		cfg.Ordering, cfg.Window = machine.Independent, 2
		cfg.BreakerThreshold = 1
		cfg.MaxQueued = 2
		cfg.MaxPayloadBytes = 8
		m, err := machine.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []machine.Input{
			machine.Accept{At: at(0), ID: "e1", Payload: []byte("one")},
			machine.Accept{At: at(0), ID: "e2", Payload: []byte("two")},
			machine.Result{At: at(time.Second), ID: "e1", Attempt: 1, Outcome: machine.OutcomeDelivered},
			machine.Result{At: at(time.Second), ID: "e2", Attempt: 1, Outcome: machine.OutcomeFailed},
			machine.ProbeResult{At: at(2 * time.Second), N: 1, Healthy: true},
			machine.Accept{At: at(2 * time.Second), ID: "e3"},
		} {
			if _, err := m.Step(in); err != nil {
				t.Fatalf("setup %s: %v", in.Format(epoch), err)
			}
		}
		if got := m.InFlight(); len(got) != 2 || got[0].ID != "e2" || got[0].Attempt != 2 {
			t.Fatalf("setup: in flight %v; want e2#2 and e3#1", got)
		}
		return m
	}
	now := at(2 * time.Second)
	tests := []struct {
		name   string
		reason string
		in     machine.Input
		want   error
	}{
		{"nil", "no input at all", nil, machine.ErrBadInput},
		{"unknown-type", "an Input type Step does not know", weird{machine.Tick{At: now}}, machine.ErrBadInput},
		{"tick-backwards", "clock readings never go backwards", machine.Tick{At: now.Add(-1)}, machine.ErrTimeWentBackwards},
		{"accept-backwards", "the clock is checked for every input", machine.Accept{At: now.Add(-1), ID: "e9"}, machine.ErrTimeWentBackwards},
		{"result-backwards", "the clock is checked before the result", machine.Result{At: now.Add(-1), ID: "e2", Attempt: 2, Outcome: machine.OutcomeDelivered}, machine.ErrTimeWentBackwards},
		{"probe-backwards", "the clock is checked before the probe", machine.ProbeResult{At: now.Add(-1), N: 1}, machine.ErrTimeWentBackwards},
		{"accept-empty-id", "an ID is required", machine.Accept{At: now, ID: ""}, machine.ErrBadInput},
		{"accept-long-id", "IDs are bounded by MaxIDBytes", machine.Accept{At: now, ID: strings.Repeat("x", machine.MaxIDBytes+1)}, machine.ErrBadInput},
		{"accept-big-payload", "payloads are bounded by MaxPayloadBytes", machine.Accept{At: now, ID: "e1", Payload: make([]byte, 9)}, machine.ErrBadInput},
		{"accept-queue-full", "two events wait, MaxQueued is 2", machine.Accept{At: now, ID: "e9"}, machine.ErrQueueFull},
		{"result-outcome-0", "the zero Outcome is not an outcome", machine.Result{At: now, ID: "e2", Attempt: 2}, machine.ErrBadInput},
		{"result-outcome-5", "outcomes end at timed out", machine.Result{At: now, ID: "e2", Attempt: 2, Outcome: 5}, machine.ErrBadInput},
		{"result-attempt-0", "attempts count from 1", machine.Result{At: now, ID: "e2", Attempt: 0, Outcome: machine.OutcomeFailed}, machine.ErrBadInput},
		{"result-attempt-negative", "attempts count from 1", machine.Result{At: now, ID: "e2", Attempt: -1, Outcome: machine.OutcomeFailed}, machine.ErrBadInput},
		{"result-retry-after-negative", "a hint cannot be negative", machine.Result{At: now, ID: "e2", Attempt: 2, Outcome: machine.OutcomeFailed, RetryAfter: -1}, machine.ErrBadInput},
		{"result-retry-after-delivered", "hints go with failed only", machine.Result{At: now, ID: "e2", Attempt: 2, Outcome: machine.OutcomeDelivered, RetryAfter: 1}, machine.ErrBadInput},
		{"result-retry-after-refused", "hints go with failed only", machine.Result{At: now, ID: "e2", Attempt: 2, Outcome: machine.OutcomeRefused, RetryAfter: 1}, machine.ErrBadInput},
		{"result-retry-after-timeout", "hints go with failed only", machine.Result{At: now, ID: "e2", Attempt: 2, Outcome: machine.OutcomeTimedOut, RetryAfter: 1}, machine.ErrBadInput},
		{"result-never-sent", "e2 had two attempts, not three", machine.Result{At: now, ID: "e2", Attempt: 3, Outcome: machine.OutcomeDelivered}, machine.ErrNoSuchAttempt},
		{"result-never-sent-terminal", "e1 had one attempt; terminal does not excuse it", machine.Result{At: now, ID: "e1", Attempt: 2, Outcome: machine.OutcomeDelivered}, machine.ErrNoSuchAttempt},
		{"adopt-backwards", "the clock is checked for adoptions", machine.Adopt{At: now.Add(-1), Record: newRecord("e9", 4)}, machine.ErrTimeWentBackwards},
		{"adopt-seq-not-above", "an adopted Seq is above every known Seq", machine.Adopt{At: now, Record: newRecord("e9", 3)}, machine.ErrBadRecord},
		{"adopt-not-pending", "an adopted record is new", machine.Adopt{At: now, Record: withState(newRecord("e9", 4), machine.Retry)}, machine.ErrBadRecord},
		{"adopt-attempted", "an adopted record has no attempt", machine.Adopt{At: now, Record: withAttempts(newRecord("e9", 4), 1)}, machine.ErrBadRecord},
		{"adopt-malformed", "an adopted record is a valid record", machine.Adopt{At: now, Record: newRecord("", 4)}, machine.ErrBadRecord},
		{"pointer-input", "inputs are values; a pointer (possibly nil) is refused, not dereferenced", (*machine.Accept)(nil), machine.ErrBadInput},
		{"probe-0", "probes count from 1", machine.ProbeResult{At: now, N: 0, Healthy: true}, machine.ErrNoSuchAttempt},
		{"adopt-long-id", "adopted IDs are bounded like accepted ones", machine.Adopt{At: now, Record: newRecord(strings.Repeat("x", machine.MaxIDBytes+1), 4)}, machine.ErrBadRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := setup(t)
			before := snap(m)
			b, err := m.Step(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Step (%s): error %v; want one wrapping %v", tt.reason, err, tt.want)
			}
			if diff := cmp.Diff(machine.Batch{}, b); diff != "" {
				t.Errorf("Step (%s) returned a batch with its error (-want +got):\n%s", tt.reason, diff)
			}
			if diff := cmp.Diff(before, snap(m)); diff != "" {
				t.Errorf("Step (%s) changed the machine (-before +after):\n%s", tt.reason, diff)
			}
			// The machine still works: the next valid input is taken.
			if _, err := m.Step(machine.Tick{At: now}); err != nil {
				t.Errorf("Tick after the misuse: %v", err)
			}
		})
	}
}

// TestStepBoundaries checks inputs at the edge of the limits, which must
// be taken.
func TestStepBoundaries(t *testing.T) {
	cfg := machine.DefaultConfig()
	cfg.MaxPayloadBytes = 8
	cfg.MaxQueued = 1
	tests := []struct {
		name   string
		reason string
		in     machine.Accept
		want   []machine.Ack
	}{
		{"id-max-bytes", "an ID of exactly MaxIDBytes is allowed",
			machine.Accept{At: epoch, ID: strings.Repeat("x", machine.MaxIDBytes)},
			[]machine.Ack{{ID: strings.Repeat("x", machine.MaxIDBytes), Seq: 1}}},
		{"payload-max-bytes", "a payload of exactly MaxPayloadBytes is allowed",
			machine.Accept{At: epoch, ID: "e1", Payload: make([]byte, 8)}, []machine.Ack{{ID: "e1", Seq: 1}}},
		{"binary-id", "IDs are opaque bytes", machine.Accept{At: epoch, ID: "\x00\xff"}, []machine.Ack{{ID: "\x00\xff", Seq: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := machine.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.Step(tt.in)
			if err != nil {
				t.Fatalf("Step (%s): %v", tt.reason, err)
			}
			if diff := cmp.Diff(tt.want, b.Acks); diff != "" {
				t.Errorf("Acks (%s) (-want +got):\n%s", tt.reason, diff)
			}
			// MaxQueued is 1: a duplicate is still acknowledged when full.
			b, err = m.Step(tt.in)
			if err != nil {
				t.Fatalf("duplicate (%s): %v", tt.reason, err)
			}
			want := []machine.Ack{{ID: tt.in.ID, Seq: 1, Duplicate: true}}
			if diff := cmp.Diff(want, b.Acks); diff != "" {
				t.Errorf("duplicate Acks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecoverBadRecords(t *testing.T) {
	rec := func(id string, seq uint64, s machine.State, attempts int, why machine.DeadReason) machine.Record {
		return machine.Record{ID: id, Seq: seq, State: s, Attempts: attempts, Reason: why, AcceptedAt: epoch, NextAt: epoch}
	}
	good := rec("ok", 9, machine.Pending, 0, machine.NotDead)
	tests := []struct {
		name    string
		reason  string
		records []machine.Record
		want    error
	}{
		{"none", "an empty store is a new stream", nil, nil},
		{"all-states", "every state and reason a machine writes",
			[]machine.Record{
				rec("p", 1, machine.Pending, 0, machine.NotDead), rec("r", 2, machine.Retry, 1, machine.NotDead),
				rec("k", 3, machine.Parked, 1, machine.NotDead), rec("d", 4, machine.Delivered, 1, machine.NotDead),
				rec("x", 5, machine.Dead, 8, machine.Exhausted), rec("y", 6, machine.Dead, 0, machine.Expired),
				rec("z", 7, machine.Dead, 1, machine.Rejected),
			}, nil},
		{"dup-id", "an ID is accepted once", []machine.Record{rec("a", 1, machine.Pending, 0, 0), rec("a", 2, machine.Pending, 0, 0)}, machine.ErrBadRecord},
		{"dup-seq", "a Seq is given once", []machine.Record{rec("a", 1, machine.Pending, 0, 0), rec("b", 1, machine.Pending, 0, 0)}, machine.ErrBadRecord},
		{"seq-0", "sequences start at 1", []machine.Record{rec("a", 0, machine.Pending, 0, 0)}, machine.ErrBadRecord},
		{"empty-id", "an ID is required", []machine.Record{rec("", 1, machine.Pending, 0, 0)}, machine.ErrBadRecord},
		{"state-0", "the zero State is no state", []machine.Record{rec("a", 1, 0, 0, 0)}, machine.ErrBadRecord},
		{"state-6", "states end at Dead", []machine.Record{rec("a", 1, 6, 0, 0)}, machine.ErrBadRecord},
		{"attempts-negative", "attempts count up from 0", []machine.Record{rec("a", 1, machine.Pending, -1, 0)}, machine.ErrBadRecord},
		{"dead-no-reason", "a dead record says why", []machine.Record{rec("a", 1, machine.Dead, 1, machine.NotDead)}, machine.ErrBadRecord},
		{"dead-bad-reason", "reasons end at Rejected", []machine.Record{rec("a", 1, machine.Dead, 1, 4)}, machine.ErrBadRecord},
		{"reason-not-dead", "only dead records have a reason", []machine.Record{rec("a", 1, machine.Retry, 1, machine.Expired)}, machine.ErrBadRecord},
		{"bad-after-good", "one bad record spoils the store", []machine.Record{good, rec("a", 1, machine.Dead, 1, 0)}, machine.ErrBadRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, err := machine.Recover(machine.DefaultConfig(), epoch, tt.records)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Recover (%s): error %v; want %v", tt.reason, err, tt.want)
			}
			if (m == nil) != (err != nil) {
				t.Errorf("Recover (%s): machine %v with error %v", tt.reason, m, err)
			}
		})
	}
}

func TestRecordsIsACopy(t *testing.T) {
	m, err := machine.New(machine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(machine.Accept{At: epoch, ID: "e1", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
	recs := m.Records()
	recs[0].State = machine.Dead
	recs[0].Attempts = 99
	if diff := cmp.Diff(machine.Pending, m.Records()[0].State); diff != "" {
		t.Errorf("changing Records() changed the machine (-want +got):\n%s", diff)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		got    string
		want   string
	}{
		{"strict", "ordering names", machine.Strict.String(), "strict"},
		{"independent", "ordering names", machine.Independent.String(), "independent"},
		{"ordering-0", "invalid values stay readable", machine.Ordering(0).String(), "Ordering(0)"},
		{"pending", "state names", machine.Pending.String(), "pending"},
		{"parked", "state names", machine.Parked.String(), "parked"},
		{"state-9", "invalid values stay readable", machine.State(9).String(), "State(9)"},
		{"not-dead", "no reason prints nothing", machine.NotDead.String(), ""},
		{"expired", "reason names", machine.Expired.String(), "expired"},
		{"reason-9", "invalid values stay readable", machine.DeadReason(9).String(), "DeadReason(9)"},
		{"timeout", "outcome names", machine.OutcomeTimedOut.String(), "timeout"},
		{"outcome-0", "invalid values stay readable", machine.Outcome(0).String(), "Outcome(0)"},
		{"checking", "circuit names", machine.Checking.String(), "checking"},
		{"circuit-0", "invalid values stay readable", machine.Circuit(0).String(), "Circuit(0)"},
		{"accept-format", "inputs print as one line",
			machine.Accept{At: epoch.Add(1500 * time.Millisecond), ID: "e1", Payload: []byte("abc")}.Format(epoch), "accept e1 bytes=3 at=1.5s"},
		{"adopt-format", "inputs print as one line",
			machine.Adopt{At: epoch.Add(time.Second), Record: withPayload(newRecord("e1", 7), 2)}.Format(epoch), "adopt e1 seq=7 bytes=2 at=1s"},
		{"tick-format", "inputs print as one line", machine.Tick{At: epoch}.Format(epoch), "tick at=0s"},
		{"result-format", "a hint is shown when set",
			machine.Result{At: epoch.Add(time.Minute), ID: "e1", Attempt: 2, Outcome: machine.OutcomeFailed, RetryAfter: time.Second}.Format(epoch),
			"result e1#2 failed retry-after=1s at=1m0s"},
		{"probe-format", "inputs print as one line",
			machine.ProbeResult{At: epoch.Add(time.Second), N: 3}.Format(epoch), "probe-result 3 down at=1s"},
		{"empty-batch", "an empty batch prints nothing", machine.Batch{}.Format(epoch), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

func TestBatchEmpty(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		b      machine.Batch
		want   bool
	}{
		{"zero", "the zero batch asks nothing", machine.Batch{}, true},
		{"wake", "a wake-up is a request", machine.Batch{WakeAt: epoch}, false},
		{"ignored", "an explanation counts as output", machine.Batch{Ignored: "stale"}, false},
		{"probe", "a probe is a request", machine.Batch{Probes: []machine.Probe{{N: 1}}}, false},
		{"circuit", "a transition is news", machine.Batch{Circuit: []machine.CircuitChange{{From: machine.Closed, To: machine.Checking}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.b.Empty()); diff != "" {
				t.Errorf("Empty (%s) (-want +got):\n%s", tt.reason, diff)
			}
		})
	}
}

// Rate tests prove the rate limit (Config.RateLimit per RatePer): a
// config with one out of range is refused by name; a burst goes out
// RateLimit at a time, each next start at the instant the window allows,
// with WakeAt at that instant; a recovered machine counts a full window
// at its recovery; and, under rapid's random inputs (the model test's
// actions), no RatePer ever holds more than RateLimit starts, no start
// waits when the limit allows it, and strict order still holds.
package machine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/courierlab/courier/machine"
)

func rateConfig(o machine.Ordering, window, limit int, per time.Duration) machine.Config {
	c := machine.DefaultConfig()
	c.Ordering, c.Window, c.RateLimit, c.RatePer = o, window, limit, per
	return c
}

func TestRateValidate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     int
		per       time.Duration
		wantField string // "" for a valid config
	}{
		{"off", 0, 0, ""},
		{"set", 5, time.Second, ""},
		{"largest", machine.MaxRateLimit, time.Second, ""},
		{"negative limit", -1, time.Second, "RateLimit"},
		{"limit over the bound", machine.MaxRateLimit + 1, time.Second, "RateLimit"},
		{"limit without interval", 5, 0, "RatePer"},
		{"negative interval", 5, -time.Second, "RatePer"},
		{"interval without limit", 0, time.Second, "RatePer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rateConfig(machine.Independent, 4, tc.limit, tc.per).Validate()
			switch {
			case tc.wantField == "" && err != nil:
				t.Fatalf("Validate: %v; want nil", err)
			case tc.wantField != "" && (!errors.Is(err, machine.ErrInvalidConfig) || !strings.Contains(err.Error(), ": "+tc.wantField+" ")):
				t.Fatalf("Validate: %v; want ErrInvalidConfig naming %s", err, tc.wantField)
			}
		})
	}
}

// sendTimes drives m with a burst of n events accepted at epoch, each
// delivered at once, ticking at every WakeAt, and returns when each
// event's one attempt started.
func sendTimes(t *testing.T, m *machine.Machine, n int) ([]time.Duration, []time.Duration) {
	t.Helper()
	var starts, wakes []time.Duration
	var wake time.Time
	var inFlight []machine.Send
	handle := func(b machine.Batch, at time.Time) {
		for _, x := range b.Sends {
			starts = append(starts, at.Sub(epoch))
			inFlight = append(inFlight, x)
		}
		wake = b.WakeAt
	}
	for i := range n {
		handle(step(t, m, machine.Accept{ID: fmt.Sprintf("e%02d", i), Payload: []byte("x"), At: epoch}), epoch)
	}
	for range 10 * n {
		for len(inFlight) > 0 {
			x := inFlight[0]
			inFlight = inFlight[1:]
			handle(step(t, m, machine.Result{ID: x.ID, Attempt: x.Attempt, Outcome: machine.OutcomeDelivered, At: m.Now()}), m.Now())
		}
		if len(starts) == n {
			break
		}
		if wake.IsZero() {
			t.Fatalf("after %d starts nothing to wake for", len(starts))
		}
		wakes = append(wakes, wake.Sub(epoch))
		handle(step(t, m, machine.Tick{At: wake}), wake)
	}
	return starts, wakes
}

func TestRateBurst(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		cfg       machine.Config
		n         int
		wantStart []time.Duration
		wantWake  []time.Duration
	}{
		{
			name:      "independent: three at once, then three a second later",
			cfg:       rateConfig(machine.Independent, 8, 3, time.Second),
			n:         7,
			wantStart: ms(0, 0, 0, 1000, 1000, 1000, 2000),
			wantWake:  ms(1000, 2000),
		},
		{
			name:      "strict: the head waits for the window like any event",
			cfg:       rateConfig(machine.Strict, 1, 2, 500*time.Millisecond),
			n:         5,
			wantStart: ms(0, 0, 500, 500, 1000),
			wantWake:  ms(500, 1000),
		},
		{
			name:      "off: every start at once",
			cfg:       rateConfig(machine.Independent, 8, 0, 0),
			n:         5,
			wantStart: ms(0, 0, 0, 0, 0),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			starts, wakes := sendTimes(t, newMachine(t, tc.cfg), tc.n)
			if diff := cmp.Diff(tc.wantStart, starts); diff != "" {
				t.Errorf("starts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWake, wakes); diff != "" {
				t.Errorf("WakeAt (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRateRecover: a recovered machine does not know when its predecessor
// started attempts, so it counts RateLimit starts at its recovery.
func TestRateRecover(t *testing.T) {
	cfg := rateConfig(machine.Independent, 8, 2, time.Second)
	at := epoch.Add(time.Minute)
	recs := []machine.Record{
		{ID: "a", Seq: 1, Payload: []byte("x"), AcceptedAt: epoch, State: machine.Pending, NextAt: epoch},
		{ID: "b", Seq: 2, Payload: []byte("x"), AcceptedAt: epoch, State: machine.Pending, NextAt: epoch},
	}
	m, b, err := machine.Recover(cfg, at, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Sends) != 0 || !b.WakeAt.Equal(at.Add(time.Second)) {
		t.Fatalf("Recover: %d sends, WakeAt %s; want none, and a wake at recovery + RatePer", len(b.Sends), machine.FormatInstant(b.WakeAt, epoch))
	}
	b = step(t, m, machine.Tick{At: at.Add(time.Second)})
	if len(b.Sends) != 2 {
		t.Fatalf("a RatePer after recovery: %d sends, want 2", len(b.Sends))
	}
}

// rateModel follows a modelTest's sends for the rate limit: the instant
// of every start, and of the full window each recovery counts.
type rateModel struct {
	mt     *modelTest
	starts []time.Time // the starts the limit counts, recoveries' included
	seen   int         // len(mt.sent) already in starts
}

// after takes the last action's sends and judges them.
func (rm *rateModel) after(t *rapid.T) {
	cfg := &rm.mt.cfg
	for ; rm.seen < len(rm.mt.sent); rm.seen++ {
		at := rm.mt.sentAt[rm.seen]
		rm.starts = append(rm.starts, at)
		if k := len(rm.starts) - 1 - cfg.RateLimit; k >= 0 && at.Before(rm.starts[k].Add(cfg.RatePer)) {
			t.Fatalf("start %d of %s at %s: %d starts since %s, within RatePer %v (RateLimit %d)", rm.seen+1, rm.mt.sent[rm.seen].ID,
				machine.FormatInstant(at, epoch), cfg.RateLimit+1, machine.FormatInstant(rm.starts[k], epoch), cfg.RatePer, cfg.RateLimit)
		}
	}
	rm.notHeldNeedlessly(t)
}

// notHeldNeedlessly: if an attempt could start now but for the limit, the
// limit does hold it, and WakeAt is no later than the instant it lets go.
func (rm *rateModel) notHeldNeedlessly(t *rapid.T) {
	m, cfg := rm.mt.m, &rm.mt.cfg
	now := m.Now()
	if m.Circuit() != machine.Closed {
		return
	}
	flying := map[string]bool{}
	for _, x := range m.InFlight() {
		flying[x.ID] = true
	}
	window := max(cfg.Window, 1)
	if len(flying) >= window {
		return
	}
	var ready string
	for _, r := range m.Records() {
		if r.State.Terminal() {
			continue
		}
		if !flying[r.ID] && r.State != machine.Parked && !now.Before(r.NextAt) {
			ready = r.ID
			break
		}
		if cfg.Ordering == machine.Strict {
			break // the head holds the rest
		}
	}
	if ready == "" {
		return
	}
	k := len(rm.starts) - cfg.RateLimit
	if k < 0 || !now.Before(rm.starts[k].Add(cfg.RatePer)) {
		t.Fatalf("%s is due at %s with room in the window and the circuit closed, and the rate limit allows a start, yet none went out",
			ready, machine.FormatInstant(now, epoch))
	}
	if free := rm.starts[k].Add(cfg.RatePer); rm.mt.wake.IsZero() || rm.mt.wake.After(free) {
		t.Fatalf("%s is held by the rate limit until %s, but WakeAt is %s", ready, machine.FormatInstant(free, epoch), machine.FormatInstant(rm.mt.wake, epoch))
	}
}

// restart notes the full window a recovery counts: Recover starts
// nothing, then RateLimit starts count at its instant.
func (rm *rateModel) restart(t *rapid.T) {
	rm.mt.restart(t)
	if n := len(rm.mt.sent) - rm.seen; n > 0 {
		t.Fatalf("Recover started %d attempts; its rate window is full", n)
	}
	for range rm.mt.cfg.RateLimit {
		rm.starts = append(rm.starts, rm.mt.now)
	}
	rm.after(t)
}

func TestRateModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		cfg.RateLimit = rapid.IntRange(1, 4).Draw(t, "rateLimit")
		cfg.RatePer = time.Duration(rapid.IntRange(1, 3_000).Draw(t, "ratePerMs")) * time.Millisecond
		m, err := machine.New(cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		mt := &modelTest{cfg: cfg, m: m, now: epoch, events: map[string]*refEvent{}, store: map[string]machine.Record{}}
		rm := &rateModel{mt: mt}
		judged := func(action func(*rapid.T)) func(*rapid.T) {
			return func(t *rapid.T) { action(t); rm.after(t) }
		}
		t.Repeat(map[string]func(*rapid.T){
			"accept":       judged(mt.accept),
			"tick":         judged(mt.tick),
			"result":       judged(mt.result),
			"stale-result": judged(mt.staleResult),
			"probe-result": judged(mt.probeResult),
			"restart":      rm.restart,
			"burst":        judged(mt.burst),
			"adopt":        judged(mt.adopt),
			"":             mt.check,
		})
	})
}

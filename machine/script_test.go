// Script tests prove the machine's step-by-step behaviour by replaying the
// language-neutral interaction scripts in testdata/machine (format in
// testdata/machine/FORMAT.md) with datadriven and comparing every Batch as
// Batch.Format renders it.
package machine_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/google/go-cmp/cmp"

	"github.com/courierlab/courier/machine"
)

// epoch is instant 0s of every script: script times are durations since it.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scriptDir holds the vectors. Regenerate their expected output with
//
//	go test ./machine -run TestScripts -rewrite
//
// and review the diff before committing it: a changed output is a changed
// behaviour, to be understood, never blessed.
const scriptDir = "../testdata/machine"

func TestScripts(t *testing.T) {
	datadriven.Walk(t, scriptDir, func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return // FORMAT.md
		}
		s := &script{}
		datadriven.RunTest(t, path, s.run)
	})
}

// scriptConfig is the config `new` starts from: DefaultConfig without
// jitter, so that delays read as written. FORMAT.md lists it.
func scriptConfig() machine.Config {
	c := machine.DefaultConfig()
	c.JitterPercent = 0
	// The vectors show every record the machine ever held (and "restart"
	// recovers from them), so they run with no idempotency window; the
	// window has its own tests in window_test.go.
	c.KeepSettled, c.KeepSettledFor = 0, 0
	return c
}

// script is the state of one script file: the machine under test.
type script struct {
	m *machine.Machine
}

// args gives a command's arguments by key and fails the test on an
// argument no handler asked for, so that a typo cannot pass silently.
type args struct {
	t    *testing.T
	d    *datadriven.TestData
	used map[string]bool
}

func newArgs(t *testing.T, d *datadriven.TestData) *args {
	return &args{t: t, d: d, used: make(map[string]bool)}
}

func (a *args) vals(key string) ([]string, bool) {
	arg, ok := a.d.Arg(key)
	if !ok {
		return nil, false
	}
	a.used[key] = true
	return arg.Vals, true
}

func (a *args) str(key string) (string, bool) {
	vs, ok := a.vals(key)
	if !ok {
		return "", false
	}
	if len(vs) != 1 {
		a.d.Fatalf(a.t, "%s wants one value, got %v", key, vs)
	}
	return vs[0], true
}

func (a *args) must(key string) string {
	s, ok := a.str(key)
	if !ok {
		a.d.Fatalf(a.t, "missing argument %s", key)
	}
	return s
}

func (a *args) flag(key string) bool {
	_, ok := a.vals(key)
	return ok
}

func (a *args) duration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		a.d.Fatalf(a.t, "bad duration %q: %v", s, err)
	}
	return d
}

func (a *args) integer(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		a.d.Fatalf(a.t, "bad integer %q: %v", s, err)
	}
	return n
}

func (a *args) at() time.Time { return epoch.Add(a.duration(a.must("at"))) }

// done fails the test if the command had an argument nobody read.
func (a *args) done() {
	for _, arg := range a.d.CmdArgs {
		if !a.used[arg.Key] {
			a.d.Fatalf(a.t, "unknown argument %q for %s", arg.Key, a.d.Cmd)
		}
	}
}

// configure applies kebab-case config overrides (max-attempts=3, ...).
func (a *args) configure(c *machine.Config) {
	for _, arg := range a.d.CmdArgs {
		if !configKeys[arg.Key] {
			continue
		}
		v, _ := a.str(arg.Key)
		switch arg.Key {
		case "ordering":
			switch v {
			case "strict":
				c.Ordering = machine.Strict
			case "independent":
				c.Ordering = machine.Independent
			default:
				c.Ordering = machine.Ordering(a.integer(v))
			}
		case "window":
			c.Window = a.integer(v)
		case "max-attempts":
			c.MaxAttempts = a.integer(v)
		case "max-age":
			c.MaxAge = a.duration(v)
		case "base-backoff":
			c.BaseBackoff = a.duration(v)
		case "max-backoff":
			c.MaxBackoff = a.duration(v)
		case "jitter-percent":
			c.JitterPercent = a.integer(v)
		case "max-retry-after":
			c.MaxRetryAfter = a.duration(v)
		case "attempt-timeout":
			c.AttemptTimeout = a.duration(v)
		case "breaker-threshold":
			c.BreakerThreshold = a.integer(v)
		case "probe-timeout":
			c.ProbeTimeout = a.duration(v)
		case "probe-base-interval":
			c.ProbeBaseInterval = a.duration(v)
		case "probe-max-interval":
			c.ProbeMaxInterval = a.duration(v)
		case "max-queued":
			c.MaxQueued = a.integer(v)
		case "max-payload-bytes":
			c.MaxPayloadBytes = a.integer(v)
		case "rate-limit":
			c.RateLimit = a.integer(v)
		case "rate-per":
			c.RatePer = a.duration(v)
		case "seed":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				a.d.Fatalf(a.t, "bad seed %q: %v", v, err)
			}
			c.Seed = n
		}
	}
}

var configKeys = map[string]bool{
	"ordering": true, "window": true, "max-attempts": true, "max-age": true,
	"base-backoff": true, "max-backoff": true, "jitter-percent": true,
	"max-retry-after": true, "attempt-timeout": true, "breaker-threshold": true,
	"probe-timeout": true, "probe-base-interval": true, "probe-max-interval": true,
	"max-queued": true, "max-payload-bytes": true, "seed": true,
	"rate-limit": true, "rate-per": true,
}

// formatConfig prints the config as new's output line; the rate limit
// only when it is set, so that the scripts written before it stay as
// they were.
func formatConfig(c machine.Config) string {
	rate := ""
	if c.RateLimit != 0 || c.RatePer != 0 {
		rate = fmt.Sprintf(" rate-limit=%d rate-per=%s", c.RateLimit, c.RatePer)
	}
	return fmt.Sprintf("config ordering=%s window=%d max-attempts=%d max-age=%s base-backoff=%s max-backoff=%s "+
		"jitter-percent=%d max-retry-after=%s attempt-timeout=%s breaker-threshold=%d probe-timeout=%s "+
		"probe-base-interval=%s probe-max-interval=%s max-queued=%d max-payload-bytes=%d seed=%d%s\n",
		c.Ordering, c.Window, c.MaxAttempts, c.MaxAge, c.BaseBackoff, c.MaxBackoff,
		c.JitterPercent, c.MaxRetryAfter, c.AttemptTimeout, c.BreakerThreshold, c.ProbeTimeout,
		c.ProbeBaseInterval, c.ProbeMaxInterval, c.MaxQueued, c.MaxPayloadBytes, c.Seed, rate)
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	a := newArgs(t, d)
	defer a.done()
	if d.Cmd != "new" && d.Cmd != "recover" && d.Cmd != "backoff" && d.Cmd != "probe-backoff" && s.m == nil {
		d.Fatalf(t, "%s before new or recover", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		cfg := scriptConfig()
		a.configure(&cfg)
		m, err := machine.New(cfg)
		if err != nil {
			s.m = nil
			return "error: " + err.Error()
		}
		s.m = m
		return formatConfig(cfg)

	case "recover":
		cfg := scriptConfig()
		a.configure(&cfg)
		return s.recover(t, cfg, a.at(), parseRecords(t, d))

	case "restart":
		// A crash: memory is lost, the store holds what was persisted.
		cfg := s.m.Config()
		a.configure(&cfg)
		return s.recover(t, cfg, a.at(), s.m.Records())

	case "accept":
		in := machine.Accept{At: a.at(), ID: a.must("id")}
		if v, ok := a.str("bytes"); ok {
			in.Payload = []byte(strings.Repeat("x", a.integer(v)))
		}
		if v, ok := a.str("payload"); ok {
			in.Payload = []byte(v)
		}
		return s.step(t, in)

	case "adopt":
		// A record a shared store accepted and numbered: one input line.
		records := parseRecords(t, d)
		if len(records) != 1 {
			d.Fatalf(t, "adopt takes one record line, got %d", len(records))
		}
		return s.step(t, machine.Adopt{At: a.at(), Record: records[0]})

	case "tick":
		return s.step(t, machine.Tick{At: a.at()})

	case "result":
		in := machine.Result{At: a.at(), ID: a.must("id"), Attempt: a.integer(a.must("attempt"))}
		switch o := a.must("outcome"); o {
		case "delivered":
			in.Outcome = machine.OutcomeDelivered
		case "failed":
			in.Outcome = machine.OutcomeFailed
		case "refused":
			in.Outcome = machine.OutcomeRefused
		case "timeout":
			in.Outcome = machine.OutcomeTimedOut
		default:
			in.Outcome = machine.Outcome(a.integer(o))
		}
		if v, ok := a.str("retry-after"); ok {
			in.RetryAfter = a.duration(v)
		}
		return s.step(t, in)

	case "probe-result":
		n, err := strconv.ParseUint(a.must("n"), 10, 64)
		if err != nil {
			d.Fatalf(t, "bad probe number: %v", err)
		}
		healthy, err := strconv.ParseBool(a.must("healthy"))
		if err != nil {
			d.Fatalf(t, "bad healthy: %v", err)
		}
		return s.step(t, machine.ProbeResult{At: a.at(), N: n, Healthy: healthy})

	case "records":
		payloads := a.flag("payloads")
		var b strings.Builder
		for _, r := range s.m.Records() {
			b.WriteString(r.Format(epoch))
			if payloads {
				fmt.Fprintf(&b, " payload=%q", r.Payload)
			}
			b.WriteByte('\n')
		}
		return b.String()

	case "circuit":
		return fmt.Sprintf("circuit %s\n", s.m.Circuit())

	case "in-flight":
		var b strings.Builder
		for _, x := range s.m.InFlight() {
			fmt.Fprintf(&b, "in-flight %s#%d seq=%d\n", x.ID, x.Attempt, x.Seq)
		}
		return b.String()

	case "backoff", "probe-backoff":
		cfg := scriptConfig()
		if s.m != nil {
			cfg = s.m.Config()
		}
		a.configure(&cfg)
		var b strings.Builder
		if d.Cmd == "backoff" {
			id := a.must("id")
			ns, _ := a.vals("n")
			for _, v := range ns {
				n := a.integer(v)
				fmt.Fprintf(&b, "backoff %s n=%d %s\n", id, n, cfg.Backoff(id, n))
			}
		} else {
			ks, _ := a.vals("k")
			for _, v := range ks {
				k := a.integer(v)
				fmt.Fprintf(&b, "probe-backoff k=%d %s\n", k, cfg.ProbeBackoff(k))
			}
		}
		return b.String()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// snapshot is everything observable about a machine; a failed Step must
// leave it unchanged.
type snapshot struct {
	Records  []machine.Record
	Now      time.Time
	Circuit  machine.Circuit
	Queued   int
	InFlight []machine.Send
	Stats    machine.Stats
}

func snap(m *machine.Machine) snapshot {
	return snapshot{m.Records(), m.Now(), m.Circuit(), m.Queued(), m.InFlight(), m.Stats()}
}

func (s *script) step(t *testing.T, in machine.Input) string {
	t.Helper()
	before := snap(s.m)
	b, err := s.m.Step(in)
	if err != nil {
		if diff := cmp.Diff(before, snap(s.m)); diff != "" {
			t.Fatalf("%s: error %v changed the machine (-before +after):\n%s", in.Format(epoch), err, diff)
		}
		return "error: " + err.Error()
	}
	checkBatch(t, b)
	return b.Format(epoch)
}

func (s *script) recover(t *testing.T, cfg machine.Config, at time.Time, records []machine.Record) string {
	t.Helper()
	m, b, err := machine.Recover(cfg, at, records)
	if err != nil {
		s.m = nil
		return "error: " + err.Error()
	}
	s.m = m
	checkBatch(t, b)
	return b.Format(epoch)
}

// checkBatch asserts what every batch must hold: each Send's attempt is in
// the same batch's Persist, already counted.
func checkBatch(t *testing.T, b machine.Batch) {
	t.Helper()
	for _, x := range b.Sends {
		found := false
		for _, r := range b.Persist {
			if r.ID == x.ID {
				found = true
				if r.Attempts != x.Attempt {
					t.Fatalf("send %s#%d but persisted attempts=%d", x.ID, x.Attempt, r.Attempts)
				}
			}
		}
		if !found {
			t.Fatalf("send %s#%d without its record in Persist", x.ID, x.Attempt)
		}
	}
}

// parseRecords reads recover's input: one record a line, in the form
// Record.Format prints, plus optional accepted=D and payload=S.
func parseRecords(t *testing.T, d *datadriven.TestData) []machine.Record {
	var out []machine.Record
	for line := range strings.Lines(d.Input) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		r := machine.Record{ID: fields[0], AcceptedAt: epoch}
		if r.ID == `""` {
			r.ID = ""
		}
		hasNext := false
		for _, f := range fields[1:] {
			key, val, ok := strings.Cut(f, "=")
			if !ok {
				r.State = parseState(t, d, key)
				continue
			}
			switch key {
			case "seq":
				n, err := strconv.ParseUint(val, 10, 64)
				if err != nil {
					d.Fatalf(t, "bad seq in %q: %v", line, err)
				}
				r.Seq = n
			case "state":
				n, err := strconv.ParseUint(val, 10, 8)
				if err != nil {
					d.Fatalf(t, "bad state in %q: %v", line, err)
				}
				r.State = machine.State(n)
			case "attempts":
				n, err := strconv.Atoi(val)
				if err != nil {
					d.Fatalf(t, "bad attempts in %q: %v", line, err)
				}
				r.Attempts = n
			case "next":
				r.NextAt = epoch.Add(parseDuration(t, d, val))
				hasNext = true
			case "accepted":
				r.AcceptedAt = epoch.Add(parseDuration(t, d, val))
			case "reason":
				r.Reason = parseReason(t, d, val)
			case "payload":
				r.Payload = []byte(val)
			default:
				d.Fatalf(t, "unknown record field %q in %q", key, line)
			}
		}
		if !hasNext {
			r.NextAt = r.AcceptedAt
		}
		out = append(out, r)
	}
	return out
}

func parseDuration(t *testing.T, d *datadriven.TestData, s string) time.Duration {
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "bad duration %q: %v", s, err)
	}
	return v
}

func parseState(t *testing.T, d *datadriven.TestData, s string) machine.State {
	for st := machine.Pending; st <= machine.Dead; st++ {
		if st.String() == s {
			return st
		}
	}
	d.Fatalf(t, "unknown state %q", s)
	return 0
}

func parseReason(t *testing.T, d *datadriven.TestData, s string) machine.DeadReason {
	for r := machine.NotDead; r <= machine.Rejected; r++ {
		if r.String() == s {
			return r
		}
	}
	n, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		d.Fatalf(t, "unknown reason %q", s)
	}
	return machine.DeadReason(n)
}

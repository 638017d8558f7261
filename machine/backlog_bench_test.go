// Backlog benchmarks show how the cost of Accept, Result and Tick grows
// with the events a stream holds (0, 1,000, 100,000): waiting in retry,
// parked behind an open circuit, held behind a blocked strict head, and a
// long delivered history; and how much memory a waiting event takes.
// Targets (issue 9): a steady accept→deliver cycle ≤ 1 µs and ≤ 2
// allocations; the cost at 100,000 within 2× of the cost at 0; 100,000
// accepts into a blocked strict stream in under 1 s in total. The file
// compiles against the machine as it was before it was indexed, so that
// benchstat can compare the two (the old machine needs minutes to build
// the 100,000 backlogs: compare it at 0 and 1,000). The timed loops call
// Step directly, not mustStep: formatting the input on failure would make
// every input escape to the heap, an allocation the machine does not make.
package machine_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

var backlogs = []int{0, 1_000, 100_000}

// backlogKind builds a machine holding n events of one kind of backlog,
// and returns it with the clock reading it stopped at.
type backlogKind struct {
	name  string
	build func(b *testing.B, n int) (*machine.Machine, time.Time)
}

// longConfig keeps a benchmark's events from expiring, exhausting or
// tripping the breaker over millions of iterations, and lets the queue
// hold them.
func longConfig(ordering machine.Ordering, window int) machine.Config {
	cfg := benchConfig(ordering, window)
	cfg.MaxAge = 100_000 * time.Hour
	cfg.MaxAttempts = 1 << 30
	cfg.MaxQueued = 1 << 30
	cfg.MaxRetryAfter = 1_000 * time.Hour
	cfg.BreakerThreshold = 1 << 30
	return cfg
}

func newBench(b *testing.B, cfg machine.Config) *machine.Machine {
	m, err := machine.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

var kinds = []backlogKind{
	{"retry", func(b *testing.B, n int) (*machine.Machine, time.Time) {
		// Independent: n events failed once and wait an hour; new events
		// pass them.
		m := newBench(b, longConfig(machine.Independent, 4))
		for i := range n {
			id := "r" + strconv.Itoa(i)
			mustStep(b, m, machine.Accept{At: epoch, ID: id})
			mustStep(b, m, machine.Result{At: epoch, ID: id, Attempt: 1, Outcome: machine.OutcomeFailed, RetryAfter: 500 * time.Hour})
		}
		return m, epoch
	}},
	{"parked", func(b *testing.B, n int) (*machine.Machine, time.Time) {
		// Strict: a failure trips the breaker, the probe fails, and n
		// events are parked behind the open circuit.
		cfg := longConfig(machine.Strict, 1)
		cfg.BreakerThreshold = 1
		m := newBench(b, cfg)
		mustStep(b, m, machine.Accept{At: epoch, ID: "head"})
		batch := mustStep(b, m, machine.Result{At: epoch, ID: "head", Attempt: 1, Outcome: machine.OutcomeFailed})
		if len(batch.Probes) != 1 {
			b.Fatalf("the failure sent no probe: %s", batch.Format(epoch))
		}
		mustStep(b, m, machine.ProbeResult{At: epoch, N: batch.Probes[0].N, Healthy: false})
		if m.Circuit() != machine.Open {
			b.Fatalf("circuit %s; want open", m.Circuit())
		}
		for i := range n {
			mustStep(b, m, machine.Accept{At: epoch, ID: "p" + strconv.Itoa(i)})
		}
		return m, epoch
	}},
	{"blocked", func(b *testing.B, n int) (*machine.Machine, time.Time) {
		return buildBlocked(b, longConfig(machine.Strict, 1), n), epoch
	}},
	{"history", func(b *testing.B, n int) (*machine.Machine, time.Time) {
		// Strict: n events accepted and delivered.
		m := newBench(b, longConfig(machine.Strict, 1))
		for i := range n {
			id := "h" + strconv.Itoa(i)
			mustStep(b, m, machine.Accept{At: epoch, ID: id})
			mustStep(b, m, machine.Result{At: epoch, ID: id, Attempt: 1, Outcome: machine.OutcomeDelivered})
		}
		return m, epoch
	}},
}

// buildBlocked returns a strict machine under cfg whose head failed and
// waits 500 hours, with n events waiting behind it, at epoch.
func buildBlocked(b *testing.B, cfg machine.Config, n int) *machine.Machine {
	m := newBench(b, cfg)
	mustStep(b, m, machine.Accept{At: epoch, ID: "head"})
	mustStep(b, m, machine.Result{At: epoch, ID: "head", Attempt: 1, Outcome: machine.OutcomeFailed, RetryAfter: 500 * time.Hour})
	for i := range n {
		mustStep(b, m, machine.Accept{At: epoch, ID: "b" + strconv.Itoa(i)})
	}
	return m
}

func kind(name string) backlogKind {
	for _, k := range kinds {
		if k.name == name {
			return k
		}
	}
	panic("no backlog kind " + name)
}

// benchIDs makes the IDs of b.N new events before the timer starts.
func benchIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "n" + strconv.Itoa(i)
	}
	return ids
}

// cycleIDs makes the IDs of n cycles through m before the timer starts:
// at most twice the idempotency window, reused in turn, so that the IDs
// the benchmark holds (and the garbage collector scans at every cycle it
// runs) do not grow with b.N. An ID comes back only after KeepSettled
// later events settled, when the machine has forgotten it: it is a new
// event again, which the cycle checks (a duplicate would send nothing).
func cycleIDs(m *machine.Machine, n int) []string {
	if keep := m.Config().KeepSettled; keep > 0 && n > 2*keep {
		n = 2 * keep
	}
	return benchIDs(n)
}

// BenchmarkCycle measures one accept→deliver cycle (an Accept that sends
// the event, and the Result that delivers it) past a backlog the new
// events are not held by: events waiting in retry, or a delivered history.
func BenchmarkCycle(b *testing.B) {
	for _, k := range []string{"retry", "history"} {
		for _, n := range backlogs {
			b.Run(fmt.Sprintf("%s/backlog=%d", k, n), func(b *testing.B) {
				m, now := kind(k).build(b, n)
				ids := cycleIDs(m, b.N)
				payload := []byte("payload")
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					now = now.Add(time.Millisecond)
					id := ids[i%len(ids)]
					batch, err := m.Step(machine.Accept{At: now, ID: id, Payload: payload})
					if err != nil || len(batch.Sends) != 1 {
						b.Fatalf("accept %s: %v; sent %d attempts, want 1", id, err, len(batch.Sends))
					}
					batch, err = m.Step(machine.Result{At: now, ID: id, Attempt: 1, Outcome: machine.OutcomeDelivered})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAccept measures one Accept into a stream that cannot send it:
// parked behind an open circuit, or held behind a blocked strict head.
// The backlog grows by one per iteration from its starting size.
func BenchmarkAccept(b *testing.B) {
	for _, k := range []string{"parked", "blocked"} {
		for _, n := range backlogs {
			b.Run(fmt.Sprintf("%s/backlog=%d", k, n), func(b *testing.B) {
				m, now := kind(k).build(b, n)
				ids := benchIDs(b.N)
				payload := []byte("payload")
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					batch, err := m.Step(machine.Accept{At: now, ID: ids[i], Payload: payload})
					if err != nil || len(batch.Sends) != 0 {
						b.Fatalf("accept %s: %v; sent %d attempts past the %s backlog", ids[i], err, len(batch.Sends), k)
					}
				}
			})
		}
	}
}

// BenchmarkTick measures a Tick, 1ms after the last, that finds nothing
// due (but, behind the open circuit, a probe now and then).
func BenchmarkTick(b *testing.B) {
	for _, k := range kinds {
		for _, n := range backlogs {
			b.Run(fmt.Sprintf("%s/backlog=%d", k.name, n), func(b *testing.B) {
				m, now := k.build(b, n)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					now = now.Add(time.Millisecond)
					batch, err := m.Step(machine.Tick{At: now})
					if err != nil || len(batch.Sends) != 0 {
						b.Fatalf("tick: %v; sent %d attempts", err, len(batch.Sends))
					}
				}
			})
		}
	}
}

// BenchmarkResult measures the Result of a failed attempt at the head of
// a strict stream with a backlog behind it, and the Tick that sends the
// head again when its backoff has passed: the head keeps failing while
// the backlog waits.
//
// Each iteration spends one attempt of the head and moves the clock by
// one backoff, so the machine's limits must outlast b.N iterations: a
// backoff of 1ms (jittered down to 0.8ms) keeps a billion iterations
// within a fortnight of MaxAge's 100,000 hours, and the benchmark refuses
// a b.N that would exhaust MaxAttempts instead of measuring a dead head.
func BenchmarkResult(b *testing.B) {
	cfg := longConfig(machine.Strict, 1)
	cfg.BaseBackoff, cfg.MaxBackoff = time.Millisecond, time.Millisecond
	for _, n := range backlogs {
		b.Run(fmt.Sprintf("blocked/backlog=%d", n), func(b *testing.B) {
			if b.N+2 > cfg.MaxAttempts {
				b.Fatalf("b.N %d would exhaust the head's MaxAttempts %d", b.N, cfg.MaxAttempts)
			}
			m := buildBlocked(b, cfg, n)
			now := epoch.Add(500 * time.Hour)
			if batch := mustStep(b, m, machine.Tick{At: now}); len(batch.Sends) != 1 {
				b.Fatalf("the head was not sent again after its retry: %s", batch.Format(epoch))
			}
			attempt := 2
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				batch, err := m.Step(machine.Result{At: now, ID: "head", Attempt: attempt, Outcome: machine.OutcomeFailed})
				if err != nil || batch.WakeAt.IsZero() {
					b.Fatalf("result head#%d: %v; wake at %v, want the head's backoff", attempt, err, batch.WakeAt)
				}
				now = batch.WakeAt // the head's backoff
				batch, err = m.Step(machine.Tick{At: now})
				if err != nil || len(batch.Sends) != 1 {
					b.Fatalf("tick after head#%d: %v; sent %d attempts, want the head again", attempt, err, len(batch.Sends))
				}
				attempt++
			}
		})
	}
}

// BenchmarkAcceptBlocked100k measures accepting 100,000 events into a
// strict stream whose head is blocked: the whole outage's backlog, from
// nothing (target: under 1 s per iteration).
func BenchmarkAcceptBlocked100k(b *testing.B) {
	ids := benchIDs(100_000)
	b.ReportAllocs()
	for range b.N {
		m, now := kind("blocked").build(b, 0)
		for _, id := range ids {
			if _, err := m.Step(machine.Accept{At: now, ID: id}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkMemoryPerEvent reports the heap one waiting event takes beyond
// its 200-byte payload (its ID included), over 100,000 events held behind
// a blocked strict head (target: ≤ 250 bytes).
func BenchmarkMemoryPerEvent(b *testing.B) {
	const n = 100_000
	payload := make([]byte, 200)
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, now := kind("blocked").build(b, 0)
		for i := range n {
			mustStep(b, m, machine.Accept{At: now, ID: "event-" + strconv.Itoa(i), Payload: payload})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(m)
		perEvent := float64(after.HeapAlloc-before.HeapAlloc)/n - float64(len(payload))
		b.ReportMetric(perEvent, "bytes/event")
	}
}

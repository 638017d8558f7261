// Benchmarks measure the cost of one Step in steady state and with a long
// backlog, and of Recover from a large store, so that a change to the
// machine's data structures shows up in benchstat.
package machine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

func benchConfig(ordering machine.Ordering, window int) machine.Config {
	cfg := machine.DefaultConfig()
	cfg.Ordering, cfg.Window = ordering, window
	return cfg
}

// mustStep applies in, failing the benchmark on misuse.
func mustStep(b *testing.B, m *machine.Machine, in machine.Input) machine.Batch {
	batch, err := m.Step(in)
	if err != nil {
		b.Fatalf("%s: %v", in.Format(epoch), err)
	}
	return batch
}

// BenchmarkStep measures one accept followed by the delivery of the attempt
// it starts, in independent order, over a machine that holds a backlog of
// 100 events waiting on a long retry and 10,000 delivered ones.
func BenchmarkStep(b *testing.B) {
	cfg := benchConfig(machine.Independent, 4)
	cfg.BreakerThreshold = 1_000_000 // keep the backlog's failures from tripping the circuit
	m, err := machine.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	now := epoch
	for i := range 10_000 {
		mustStep(b, m, machine.Accept{At: now, ID: fmt.Sprintf("old%d", i)})
		for _, x := range m.InFlight() {
			mustStep(b, m, machine.Result{At: now, ID: x.ID, Attempt: x.Attempt, Outcome: machine.OutcomeDelivered})
		}
	}
	for i := range 100 {
		id := fmt.Sprintf("stuck%d", i)
		mustStep(b, m, machine.Accept{At: now, ID: id})
		mustStep(b, m, machine.Result{At: now, ID: id, Attempt: 1, Outcome: machine.OutcomeFailed, RetryAfter: time.Hour})
	}
	payload := []byte("payload")
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now = now.Add(time.Millisecond)
		batch := mustStep(b, m, machine.Accept{At: now, ID: ids[i], Payload: payload})
		if len(batch.Sends) != 1 {
			b.Fatalf("accept %s sent %d attempts; want 1", ids[i], len(batch.Sends))
		}
		x := batch.Sends[0]
		mustStep(b, m, machine.Result{At: now, ID: x.ID, Attempt: x.Attempt, Outcome: machine.OutcomeDelivered})
	}
}

// BenchmarkStepBacklog measures a tick over a strict machine with 1,000
// events waiting behind a head that is in retry: the step must look at
// the backlog to find nothing to do and the next wake-up.
func BenchmarkStepBacklog(b *testing.B) {
	cfg := benchConfig(machine.Strict, 1)
	m, err := machine.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	now := epoch
	for i := range 1_000 {
		mustStep(b, m, machine.Accept{At: now, ID: fmt.Sprintf("e%d", i)})
	}
	mustStep(b, m, machine.Result{At: now, ID: "e0", Attempt: 1, Outcome: machine.OutcomeFailed, RetryAfter: time.Hour})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(time.Millisecond)
		batch := mustStep(b, m, machine.Tick{At: now})
		if len(batch.Sends) != 0 {
			b.Fatalf("tick sent %d attempts", len(batch.Sends))
		}
	}
}

// BenchmarkRecover measures rebuilding a machine from 10,000 records:
// 9,000 delivered, 1,000 waiting (so the circuit starts checking).
func BenchmarkRecover(b *testing.B) {
	cfg := benchConfig(machine.Independent, 8)
	records := make([]machine.Record, 10_000)
	for i := range records {
		r := machine.Record{ID: fmt.Sprintf("e%d", i), Seq: uint64(len(records) - i), Payload: []byte("payload"),
			AcceptedAt: epoch, State: machine.Delivered, Attempts: 1, NextAt: epoch}
		if i%10 == 0 {
			r.State, r.Attempts, r.NextAt = machine.Retry, 2, epoch.Add(time.Minute)
		}
		records[i] = r
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := machine.Recover(cfg, epoch, records); err != nil {
			b.Fatal(err)
		}
	}
}

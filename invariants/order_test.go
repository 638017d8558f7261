// The indexed order check gives the walk it replaced the same answer on
// random histories (sequences mostly in order, sometimes not; records that
// settle, and sometimes come back, as only a broken run does), and its cost
// per send does not grow with the backlog (BenchmarkCheckStrict).
package invariants

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
)

// walk is the order check before the index: from the start of the
// acceptance order, stop at the first seq at or above seq, or at the first
// non-terminal event (blocked if its seq is below seq).
func walk(seqs []uint64, terminal []bool, seq uint64) (int, bool) {
	for i, s := range seqs {
		if s >= seq {
			return 0, false
		}
		if !terminal[i] {
			return i, true
		}
	}
	return 0, false
}

func TestStrictOrderMatchesWalk(t *testing.T) {
	for trial := uint64(1); trial <= 200; trial++ {
		r := rand.New(rand.NewPCG(trial, 9))
		var o strictOrder
		var seqs []uint64
		var terminal []bool
		next := uint64(1)
		for step := range 300 {
			switch k := r.IntN(10); {
			case k < 3 || len(seqs) == 0: // accept
				seq := next
				if r.IntN(8) == 0 && next > 3 {
					seq = next - 1 - r.Uint64N(3) // out of order or reused
				} else {
					next++
				}
				pos := o.add(seq)
				seqs, terminal = append(seqs, seq), append(terminal, true)
				term := r.IntN(4) == 0
				o.set(pos, term)
				terminal[pos] = term
			case k < 7: // a record settles, or (rarely) comes back
				pos := r.IntN(len(seqs))
				term := r.IntN(6) != 0
				o.set(pos, term)
				terminal[pos] = term
			default: // a send
				seq := seqs[r.IntN(len(seqs))] + uint64(r.IntN(2))
				wantPos, wantBlocked := walk(seqs, terminal, seq)
				pos, blocked := o.blocker(seq)
				if pos != wantPos || blocked != wantBlocked {
					t.Fatalf("trial %d step %d: blocker(%d) = %d, %v; the walk says %d, %v", trial, step, seq, pos, blocked, wantPos, wantBlocked)
				}
			}
		}
	}
}

// strictRun is a clean strict run of n events: each accepted, acked, sent
// once, applied and persisted delivered, with backlog events waiting
// before the first is delivered so that every send has them behind it.
func strictRun(n int) Run {
	p := machine.Config{Ordering: machine.Strict, Window: 1, MaxAttempts: 3, MaxAge: time.Hour, AttemptTimeout: time.Second}
	run := Run{Policy: p, Finished: true, ReceiverFences: true, Entries: make([]Entry, 0, 7*n)}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]machine.Record, n)
	for i := range n {
		recs[i] = machine.Record{ID: fmt.Sprintf("e%06d", i), Seq: uint64(i + 1), AcceptedAt: at, State: machine.Pending}
		run.Add(Entry{At: at, Kind: Persisted, ID: recs[i].ID, Seq: recs[i].Seq, Record: recs[i]})
		run.Add(Entry{At: at, Kind: Acked, ID: recs[i].ID, Seq: recs[i].Seq})
	}
	for i := range n {
		r := &recs[i]
		r.Attempts = 1
		run.Add(Entry{At: at, Kind: Persisted, ID: r.ID, Seq: r.Seq, Record: *r})
		run.Add(Entry{At: at, Kind: Sent, ID: r.ID, Seq: r.Seq, Attempt: 1})
		run.Add(Entry{At: at, Kind: Applied, ID: r.ID, Seq: r.Seq, Attempt: 1})
		run.Add(Entry{At: at, Kind: Replied, ID: r.ID, Attempt: 1, Detail: machine.OutcomeDelivered.String()})
		r.State = machine.Delivered
		run.Add(Entry{At: at, Kind: Persisted, ID: r.ID, Seq: r.Seq, Record: *r})
	}
	run.Final = recs
	return run
}

func TestStrictRunIsClean(t *testing.T) {
	if vs := Check(strictRun(50)); len(vs) != 0 {
		t.Fatalf("the benchmark's run is not clean: %v", vs)
	}
}

// BenchmarkCheckStrict judges a clean strict run of n events; ns/event
// stays flat from 1,000 to 100,000 events (it grew linearly before the
// index).
func BenchmarkCheckStrict(b *testing.B) {
	for _, n := range []int{0, 1_000, 100_000} {
		run := strictRun(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Check(run)
			}
			if n > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
			}
		})
	}
}

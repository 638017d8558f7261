// Tests that the production shell, run under testing/synctest with two
// workers sharing a store, through channel outages, lost and slow replies,
// an unavailable store, Saves whose reply is lost after they committed and
// leases stolen mid-send, keeps every guarantee: invariants.Check judges
// each stream's observation log (nothing lost, applied once, order,
// bounded sends, ...), the faults are counted so that a run that met none
// fails, and no goroutine outlives the shutdown.
package courier_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

// shellSeeds is how many seeds the fault suite runs, each in both
// orderings; hunt longer with go test -run TestShellUnderFaults -shell.seeds=500.
var shellSeeds = flag.Uint64("shell.seeds", 6, "seeds of TestShellUnderFaults, each run in strict and independent order")

// shellWorld is one faulty run's settings.
type shellWorld struct {
	seed     uint64
	ordering machine.Ordering
	streams  int
	events   int // per stream
	workers  int // per Service (Config.Workers)
}

func shellPolicy(o machine.Ordering) machine.Config {
	c := machine.DefaultConfig()
	c.Ordering = o
	c.Window = 1
	if o == machine.Independent {
		c.Window = 4
	}
	c.MaxAttempts = 10
	c.MaxAge = time.Hour
	c.BaseBackoff = time.Second
	c.MaxBackoff = 20 * time.Second
	c.MaxRetryAfter = 0
	c.AttemptTimeout = 5 * time.Second
	c.BreakerThreshold = 3
	c.ProbeTimeout = 2 * time.Second
	c.ProbeBaseInterval = time.Second
	c.ProbeMaxInterval = 10 * time.Second
	return c
}

const (
	shellLeaseTTL = 15 * time.Second
	shellPoll     = time.Second
)

// faultTally sums what the faults did over every seed, so that a suite
// whose faults never struck fails.
type faultTally struct {
	mu                                                           sync.Mutex
	stolen, lostSaves, lostReplies, discarded, openings, dead, n int
	// secondWorker counts leases granted to a Service's second worker.
	secondWorker int
}

func TestShellUnderFaults(t *testing.T) {
	defer goleak.VerifyNone(t)
	var tally faultTally
	for seed := uint64(1); seed <= *shellSeeds; seed++ {
		for _, o := range []machine.Ordering{machine.Strict, machine.Independent} {
			// Odd seeds run two workers in each Service: four owners,
			// two per process, take the streams from each other.
			w := shellWorld{seed: seed, ordering: o, streams: 5, events: 20, workers: 1 + int(seed%2)}
			t.Run(fmt.Sprintf("seed=%d/%s", seed, o), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { runShell(t, w, &tally) })
			})
		}
	}
	t.Logf("faults over %d runs: %d leases stolen, %d saves with lost replies, %d lost replies, %d receiver discards, %d circuit openings; %d dead letters",
		tally.n, tally.stolen, tally.lostSaves, tally.lostReplies, tally.discarded, tally.openings, tally.dead)
	t.Logf("leases granted to the second worker of a Service: %d", tally.secondWorker)
	if tally.stolen == 0 || tally.lostSaves == 0 || tally.lostReplies == 0 || tally.discarded == 0 || tally.openings == 0 || tally.secondWorker == 0 {
		t.Errorf("a fault never struck: the suite proves less than it claims")
	}
}

func runShell(t *testing.T, w shellWorld, tally *faultTally) {
	start := time.Now()
	f := &faults{
		rnd:        rand.New(rand.NewPCG(w.seed, uint64(w.ordering))),
		end:        start.Add(10 * time.Minute),
		outages:    []window{{start.Add(time.Minute), start.Add(3 * time.Minute)}},
		storeDown:  []window{{start.Add(4 * time.Minute), start.Add(4*time.Minute + 30*time.Second)}},
		lostReply:  0.08,
		slow:       0.05,
		lostSave:   0.03,
		steal:      0.03,
		maxLatency: 200 * time.Millisecond,
		stealTTL:   10 * time.Second,
	}
	rec := &recorder{}
	st := newFaultStore(rec, f)
	ch := newFakeChannel(rec, f, st, w.ordering == machine.Strict)
	pol := shellPolicy(w.ordering)

	ctx, cancel := context.WithCancel(t.Context())
	var services []*courier.Service
	var running sync.WaitGroup
	for i := range 2 {
		owner := fmt.Sprintf("w%d", i+1)
		svc, err := courier.New(courier.Config{
			Worker: worker.Config{
				Owner:      owner,
				Store:      st,
				Policy:     func(string) (machine.Config, error) { return pol, nil },
				MaxStreams: 3,
				LeaseTTL:   shellLeaseTTL,
				Poll:       shellPoll,
				Observer:   rec.observer(),
			},
			Workers:         w.workers,
			Channel:         ch,
			MaxInFlight:     6,
			ShutdownTimeout: 10 * time.Second,
			Logger:          testLogger(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		services = append(services, svc)
		running.Go(func() {
			if err := svc.Run(ctx); err != nil {
				t.Errorf("%s: Run: %v", owner, err)
			}
		})
	}

	streams := make([]string, w.streams)
	var producers sync.WaitGroup
	for i := range streams {
		streams[i] = fmt.Sprintf("s%d", i+1)
		rnd := rand.New(rand.NewPCG(w.seed, uint64(i)+100))
		producers.Go(func() { produce(ctx, t, services, streams[i], w.events, rnd) })
	}
	waitGroup(t, "the producers", &producers, time.Hour) // some 2 minutes of the bubble's time
	for limit := start.Add(3 * time.Hour); !settled(st.Store, streams) && time.Now().Before(limit); {
		time.Sleep(time.Second)
	}
	cancel()
	waitGroup(t, "the services after their context ended", &running, runLimit)

	// Shutdown released every lease: the streams can be taken at once.
	for _, s := range streams {
		if _, err := st.Store.Acquire(context.Background(), s, "after", time.Second); err != nil {
			t.Errorf("stream %s is still held after the shutdown: %v", s, err)
		}
	}

	healed := f.end
	slack := shellLeaseTTL + f.stealTTL + 2*shellPoll + 30*time.Second // handover, theft, polls, store outage
	base := invariants.Run{
		Policy:         pol,
		Finished:       true,
		HealedAt:       healed,
		Slack:          slack,
		LivenessBound:  invariants.LivenessBound(pol, w.events, 0, f.maxLatency) + slack,
		ReceiverFences: ch.fence,
	}
	runs := rec.runs(base, st.Store.Records)
	for _, s := range streams {
		run := runs[s]
		for _, v := range invariants.Check(run) {
			t.Errorf("stream %s: %s", s, v)
		}
		final := st.Store.Records(s)
		if len(final) != w.events {
			t.Errorf("stream %s holds %d events, want %d", s, len(final), w.events)
		}
		tally.mu.Lock()
		for _, r := range final {
			if r.State == machine.Dead {
				tally.dead++
			}
		}
		for _, e := range run.Entries {
			switch {
			case e.Kind == invariants.Discarded:
				tally.discarded++
			case e.Kind == invariants.CircuitChanged && e.Circuit == machine.Open:
				tally.openings++
			case e.Kind == invariants.LeaseGranted && strings.HasSuffix(e.Worker, "/2"):
				tally.secondWorker++
			}
		}
		tally.mu.Unlock()
	}
	tally.mu.Lock()
	tally.stolen += f.stolen
	tally.lostSaves += f.lostSaves
	tally.lostReplies += f.lostReplies
	tally.n++
	tally.mu.Unlock()
	if t.Failed() {
		t.Logf("seed %d %s: replay with go test -run 'TestShellUnderFaults/seed=%d/%s' -v", w.seed, w.ordering, w.seed, w.ordering)
	}
}

// produce publishes n events on stream, alternating between the services,
// each until the store acknowledges it, and sometimes twice.
func produce(ctx context.Context, t *testing.T, services []*courier.Service, stream string, n int, rnd *rand.Rand) {
	for i := range n {
		id := fmt.Sprintf("%s-e%d", stream, i+1)
		copies := 1 + rnd.IntN(4)/3 // a quarter of the events are offered twice
		for c := range copies {
			svc := services[(i+c)%len(services)]
			payload := fmt.Appendf(nil, `{"event":%q,"copy":%d}`, id, c)
			for {
				_, err := svc.Publish(ctx, stream, id, payload)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Errorf("publish %s: %v", id, err)
					return
				}
				time.Sleep(500 * time.Millisecond) // the store is down: offer it again
			}
		}
		time.Sleep(time.Duration(100+rnd.IntN(5000)) * time.Millisecond)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Benchmarks deliveries per second through the whole shell (claim,
// rebuild, persist the attempt, send on its own goroutine, persist the
// outcome) with memstore and a channel that answers at once, for 1, 16
// and 256 streams in strict order. Producers publish while the shell
// runs, each stream's backlog held to 64 events, so that the figure is
// the shell's steady rate, not the cost of a machine holding all b.N
// events at once (a machine's step grows with its waiting events).
package courier_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

// instant answers every attempt and probe at once, delivered.
type instant struct{}

func (instant) Send(context.Context, channel.Attempt) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func (instant) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func BenchmarkDeliveries(b *testing.B) {
	for _, streams := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) { benchDeliveries(b, streams) })
	}
}

func benchDeliveries(b *testing.B, streams int) {
	const backlog = 64
	st := memstore.New(time.Now)
	n := b.N
	done := make(chan struct{})
	delivered := 0
	slots := make(map[string]chan struct{}, streams)
	names := make([]string, streams)
	for i := range names {
		names[i] = fmt.Sprintf("s%03d", i)
		slots[names[i]] = make(chan struct{}, backlog)
	}
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "bench", Store: st, MaxStreams: streams, LeaseTTL: time.Minute, Poll: time.Second,
			Policy: func(string) (machine.Config, error) { return machine.DefaultConfig(), nil },
			Observer: worker.ObserverFunc(func(e worker.Event) {
				if e.Kind != worker.Persisted {
					return
				}
				for _, r := range e.Records {
					if r.State == machine.Delivered {
						<-slots[e.Stream]
						if delivered++; delivered == n {
							close(done)
						}
					}
				}
			}),
		},
		Channel:     instant{},
		MaxInFlight: 256,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	go func() { defer close(stopped); _ = svc.Run(ctx) }()
	var producers sync.WaitGroup
	for p, name := range names {
		producers.Go(func() {
			for i := p; i < n; i += streams {
				slots[name] <- struct{}{}
				if _, err := svc.Publish(ctx, name, fmt.Sprintf("e%d", i), []byte(`{"n":1}`)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	producers.Wait()
	cancel()
	<-stopped
	b.ReportMetric(float64(n)/elapsed.Seconds(), "deliveries/s")
}

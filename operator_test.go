// Tests that an operator's actions are logged once, at INFO, and never
// as faults or lost leases: a paused stream logs its pause once however
// many polls refuse it and its resume once; a replay that takes a
// stream from its owner says so. A recording slog handler counts the
// lines.
package courier_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

// lines is a slog handler that keeps every record's level and message.
type lines struct {
	mu   sync.Mutex
	recs []line
}

type line struct {
	level slog.Level
	msg   string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lines) WithGroup(string) slog.Handler            { return l }

func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, line{r.Level, r.Message})
	return nil
}

// mark is the number of lines so far, for since.
func (l *lines) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// since returns the lines from mark on at level or above.
func (l *lines) since(mark int, level slog.Level) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs[mark:] {
		if r.level >= level {
			out = append(out, fmt.Sprintf("%s %s", r.level, r.msg))
		}
	}
	return out
}

// switchChannel refuses every send (a dead letter at once) until accept
// is set, then delivers.
type switchChannel struct{ accept atomic.Bool }

func (c *switchChannel) Send(context.Context, channel.Attempt) channel.Outcome {
	if c.accept.Load() {
		return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
	}
	return channel.Outcome{Result: machine.OutcomeRefused, Status: 400, Detail: "refused"}
}

func (c *switchChannel) Probe(context.Context, string) channel.Outcome {
	return channel.Outcome{Result: machine.OutcomeDelivered, Status: 200}
}

func newOperatorService(t *testing.T, st *memstore.Store, ch channel.Channel, paused *atomic.Bool, log *lines) *courier.Service {
	pol := shellPolicy(machine.Strict)
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner: "w1", Store: st, MaxStreams: 4, LeaseTTL: 15 * time.Second, Poll: time.Second,
			Policy: func(stream string) (machine.Config, error) {
				if paused.Load() {
					return machine.Config{}, fmt.Errorf("%w: %q", courier.ErrPaused, stream)
				}
				return pol, nil
			},
		},
		Channel: ch,
		Logger:  slog.New(log),
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestPauseIsLoggedOnceAtInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(time.Now)
		ch := &switchChannel{}
		ch.accept.Store(true)
		var paused atomic.Bool
		paused.Store(true)
		log := &lines{}
		svc := newOperatorService(t, st, ch, &paused, log)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		if _, err := svc.Publish(ctx, "s", "e1", []byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // ten polls, each refused by the pause
		if got := log.since(0, slog.LevelInfo); len(got) != 1 || got[0] != "INFO courier: stream paused by operator" {
			t.Errorf("over ten polls of a paused stream the log at INFO and above is %q; want the pause once, at INFO", got)
		}
		if n := len(log.since(0, slog.LevelDebug)); n < 10 {
			t.Errorf("%d lines at DEBUG and above; the polls did not refuse the stream ten times", n)
		}
		mark := log.mark()
		paused.Store(false)
		time.Sleep(3 * time.Second)
		resumed := 0
		for _, l := range log.since(mark, slog.LevelInfo) {
			switch l {
			case "INFO courier: stream resumed":
				resumed++
			case "INFO courier: machine rebuilt from the store", "INFO courier: lease released":
			default:
				t.Errorf("after the resume: %q", l)
			}
		}
		if resumed != 1 {
			t.Errorf("the resume was logged %d times, want once", resumed)
		}
		if r, _ := st.Get(context.Background(), "e1"); r.State != machine.Delivered {
			t.Errorf("e1 is %s after the resume, want delivered", r.State)
		}
		cancel()
		if err := await(t, "Run after its context ended", done, runLimit); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReplayIsLoggedAtInfoNotAsALostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New(time.Now)
		ch := &switchChannel{} // refuses: e1 is a dead letter at once
		var paused atomic.Bool
		log := &lines{}
		svc := newOperatorService(t, st, ch, &paused, log)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- svc.Run(ctx) }()
		if _, err := svc.Publish(ctx, "s", "e1", []byte("x")); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // e1 is dead; w1 holds the stream until it has been idle for a poll
		if r, _ := st.Get(context.Background(), "e1"); r.State != machine.Dead {
			t.Fatalf("e1 is %s, want a dead letter to replay", r.State)
		}
		mark := log.mark()
		ch.accept.Store(true)
		if _, err := st.Replay(context.Background(), "e1", "operator"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		took := 0
		for _, l := range log.since(mark, slog.LevelInfo) {
			switch l {
			case "INFO courier: an operator's replay took the stream":
				took++
			case "INFO courier: machine rebuilt from the store", "INFO courier: lease released":
			default:
				t.Errorf("after the replay: %q", l)
			}
		}
		if took != 1 {
			t.Errorf("the replay taking the stream was logged %d times, want once", took)
		}
		if r, _ := st.Get(context.Background(), "e1"); r.State != machine.Delivered {
			t.Errorf("e1 is %s after the replay, want delivered", r.State)
		}
		cancel()
		if err := await(t, "Run after its context ended", done, runLimit); err != nil {
			t.Fatal(err)
		}
	})
}

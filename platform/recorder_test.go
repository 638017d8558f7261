// Tests that the Recorder, over the memory store, writes every attempt
// it queued, disables an endpoint at once on 410 and after DisableAfter
// of failures (telling OnDisabled once), drops and counts what does not
// fit its queue without blocking, and prunes attempts past the
// retention.
package platform_test

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platmem"
	"github.com/courierlab/courier/webhook"
)

type recEnv struct {
	t   *testing.T
	s   *platmem.Store
	app platform.Application
	ep  platform.Endpoint
	msg platform.Message
	at  time.Time
}

func newRecEnv(t *testing.T) *recEnv {
	e := &recEnv{t: t, s: platmem.New(nil), at: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)}
	ctx := t.Context()
	var err error
	if e.app, err = e.s.CreateApp(ctx, platform.Application{ID: platform.NewID(platform.AppKind, e.at), Name: "a"}); err != nil {
		t.Fatal(err)
	}
	e.ep, err = e.s.CreateEndpoint(ctx, platform.Endpoint{ID: platform.NewID(platform.EndpointKind, e.at), AppID: e.app.ID,
		URL: "https://example.com/", Secrets: []string{webhook.NewSecret()}, Enabled: true, Ordering: platform.Strict})
	if err != nil {
		t.Fatal(err)
	}
	if e.msg, _, err = e.s.CreateMessage(ctx, platform.Message{ID: platform.NewID(platform.MessageKind, e.at), AppID: e.app.ID,
		EventType: "t", Payload: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	return e
}

// attempt is an attempt d after the start, with status (0: no answer).
func (e *recEnv) attempt(d time.Duration, status int) platform.Attempt {
	outcome := platform.OutcomeFailed
	switch {
	case status == http.StatusOK:
		outcome = platform.OutcomeDelivered
	case status == http.StatusGone:
		outcome = platform.OutcomeRefused
	}
	return platform.Attempt{ID: platform.NewID(platform.AttemptKind, e.at.Add(d)), AppID: e.app.ID, MessageID: e.msg.ID,
		EndpointID: e.ep.ID, DeliveryID: platform.DeliveryID(e.msg.ID, e.ep.ID), At: e.at.Add(d), Status: status, Outcome: outcome}
}

// start runs a Recorder over e's store until the test ends.
func (e *recEnv) start(cfg platform.RecorderConfig) *platform.Recorder {
	cfg.Store = e.s
	r, err := platform.NewRecorder(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	e.t.Cleanup(func() { cancel(); <-done })
	return r
}

// waitAttempts waits (at most 10s) until the log holds n attempts.
func (e *recEnv) waitAttempts(n int) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := e.s.ListEndpointAttempts(e.t.Context(), e.app.ID, e.ep.ID, "", platform.MaxLimit)
		if err == nil && len(list) == n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the log holds %d attempts (err %v); want %d", len(list), err, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRecorderDisablesAfterFailingForDisableAfter(t *testing.T) {
	e := newRecEnv(t)
	disabled := make(chan string, 4)
	r := e.start(platform.RecorderConfig{DisableAfter: time.Hour,
		OnDisabled: func(_ context.Context, ep platform.Endpoint, reason string) { disabled <- ep.ID + " " + reason }})
	r.Record(e.attempt(0, 503))
	r.Record(e.attempt(30*time.Minute, 200)) // a success resets the streak
	r.Record(e.attempt(40*time.Minute, 503))
	r.Record(e.attempt(100*time.Minute-time.Microsecond, 0))
	e.waitAttempts(4)
	if ep, _ := e.s.GetEndpoint(t.Context(), e.ep.ID); !ep.Enabled {
		t.Fatal("disabled before failing for an hour")
	}
	r.Record(e.attempt(100*time.Minute, 503))
	r.Record(e.attempt(101*time.Minute, 503))
	e.waitAttempts(6)
	if got := <-disabled; got != e.ep.ID+" failing" {
		t.Errorf("OnDisabled got %q; want the endpoint, failing", got)
	}
	h, err := e.s.GetHealth(t.Context(), e.app.ID, e.ep.ID)
	if err != nil || h.DisabledReason != platform.DisabledFailing || h.Streak != 4 {
		t.Errorf("health = %+v, %v; want disabled, failing, streak 4", h, err)
	}
	select {
	case got := <-disabled:
		t.Errorf("OnDisabled called again: %q", got)
	default:
	}
}

func TestRecorderDisablesAtOnceOnGone(t *testing.T) {
	e := newRecEnv(t)
	disabled := make(chan string, 1)
	r := e.start(platform.RecorderConfig{
		OnDisabled: func(_ context.Context, ep platform.Endpoint, reason string) { disabled <- reason }})
	r.Record(e.attempt(0, 410))
	if got := <-disabled; got != platform.DisabledGone {
		t.Errorf("reason = %q; want gone", got)
	}
	if ep, _ := e.s.GetEndpoint(t.Context(), e.ep.ID); ep.Enabled {
		t.Error("the endpoint is still enabled after a 410")
	}
}

// Write, without Run, records at once and disables on 410 before it
// returns: the simulator feeds the health code so.
func TestRecorderWriteIsSynchronous(t *testing.T) {
	e := newRecEnv(t)
	var reasons []string
	r, err := platform.NewRecorder(platform.RecorderConfig{Store: e.s, DisableAfter: time.Minute,
		OnDisabled: func(_ context.Context, _ platform.Endpoint, reason string) { reasons = append(reasons, reason) }})
	if err != nil {
		t.Fatal(err)
	}
	r.Write(t.Context(), e.attempt(0, 503))
	r.Write(t.Context(), e.attempt(time.Second, 410))
	if ep, _ := e.s.GetEndpoint(t.Context(), e.ep.ID); ep.Enabled || !slices.Equal(reasons, []string{platform.DisabledGone}) {
		t.Errorf("after Write of a 410: enabled %v, OnDisabled reasons %q; want disabled, [gone]", ep.Enabled, reasons)
	}
	e.waitAttempts(2)
}

// Without Run, the queue fills; Record then drops at once and counts.
func TestRecorderDropsWhenFull(t *testing.T) {
	e := newRecEnv(t)
	var dropped atomic.Int64
	r, err := platform.NewRecorder(platform.RecorderConfig{Store: e.s, QueueLen: 2, OnDropped: func() { dropped.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	var kept []bool
	for i := range 4 {
		kept = append(kept, r.Record(e.attempt(time.Duration(i)*time.Second, 503)))
	}
	if want := []bool{true, true, false, false}; !slices.Equal(kept, want) || dropped.Load() != 2 {
		t.Errorf("Record = %v, dropped %d; want %v and 2", kept, dropped.Load(), want)
	}
}

// Run prunes at once: the attempts older than the retention go, the
// others stay.
func TestRecorderPrunes(t *testing.T) {
	e := newRecEnv(t)
	for _, d := range []time.Duration{0, time.Hour, 3 * time.Hour} {
		if _, err := e.s.RecordAttempt(t.Context(), e.attempt(d, 503)); err != nil {
			t.Fatal(err)
		}
	}
	e.start(platform.RecorderConfig{Retention: 2 * time.Hour, Now: func() time.Time { return e.at.Add(3*time.Hour + time.Minute) }})
	e.waitAttempts(1)
}

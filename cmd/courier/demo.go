package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/receiver"
)

// demo runs courier for real on a temporary SQLite file, with a local
// receiver built with the kit and a producer publishing over the API; it
// takes the receiver down and up and drops some replies while events
// flow, then checks that every accepted event was applied exactly once or
// is a dead letter the receiver refused. Then a second courier fans
// messages out to three endpoints, one healthy, one rate-limited and one
// down, and shows what each got (demo_fanout.go).
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("courier demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	events := fs.Int("events", 300, "events to publish")
	seed := fs.Uint64("seed", 1, "decides which replies are dropped and which events are poison")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if *events < 1 || *events > 100_000 {
		return usageError{fmt.Errorf("demo: -events %d must be within 1..100000", *events)}
	}
	dir, err := os.MkdirTemp("", "courier-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	d := &demoRun{out: stdout, n: *events, rnd: mrand.New(mrand.NewPCG(*seed, 0xdead)), applied: map[string]int{},
		tty: isTerminal(stdout), rec: &recorder{}}
	d.hooks = &hooks{rec: d.rec}
	return d.run(ctx, dir)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type demoRun struct {
	out io.Writer
	tty bool
	n   int

	rec    *recorder
	hooks  *hooks
	healed time.Time // no reply dropped from then on

	mu         sync.Mutex
	rnd        *mrand.Rand
	applied    map[string]int
	requests   int
	duplicates int
	dropped    int
	refused    int
	down       bool
	accepted   int
}

// poison: one event in 25 is refused by the receiver for good (422) and
// becomes a dead letter.
func poison(i int) bool { return i%25 == 24 }

func (d *demoRun) run(ctx context.Context, dir string) error {
	secret := webhook.NewSecret()
	token := randomToken()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	recvAddr := ln.Addr().String()
	kit, err := d.receiverHandler(secret)
	if err != nil {
		return err
	}
	recv := &http.Server{Handler: kit}
	go recv.Serve(ln)

	c, err := ParseConfig(fmt.Sprintf(`api_tokens = [%q]
allow_loopback = true
poll = "100ms"
shutdown_timeout = "5s"
[streams.orders]
url = "http://%s/webhooks"
secrets = [%q]
ordering = "independent"
window = 8
max_attempts = 30
base_backoff = "100ms"
max_backoff = "1s"
attempt_timeout = "2s"
probe_base_interval = "200ms"
probe_max_interval = "1s"
reject_statuses = [410, 422] # the receiver's 422 means never: dead at once
`, token, recvAddr, secret))
	if err != nil {
		return err
	}
	c.Database = filepath.Join(dir, "courier.db")
	c.Listen = "127.0.0.1:0"
	logPath := filepath.Join(dir, "courier.log")
	lf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer lf.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	ready := make(chan string, 1)
	served := make(chan error, 1)
	go func() { served <- serveConfig(sctx, c, slog.New(slog.NewJSONHandler(lf, nil)), ready, d.hooks) }()
	var base string
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-served:
		return err
	}
	fmt.Fprintf(d.out, "courier demo: courier on %s (SQLite %s), receiver on %s, %d events, one in 25 poison\n",
		base, c.Database, recvAddr, d.n)

	start := time.Now()
	prodDone := make(chan error, 1)
	go func() { prodDone <- d.produce(ctx, base, token) }()
	stopBar := d.progress(start)
	// The receiver goes down a second in, for two seconds, then comes back
	// on the same address.
	time.Sleep(time.Second)
	d.event("receiver down")
	d.setDown(true)
	d.goDown(recv)
	time.Sleep(2 * time.Second)
	ln2, err := net.Listen("tcp", recvAddr)
	if err != nil {
		stopBar()
		return fmt.Errorf("demo: receiver back on %s: %w", recvAddr, err)
	}
	recv = &http.Server{Handler: kit}
	go recv.Serve(ln2)
	d.setDown(false)
	d.event("receiver up")
	if err := <-prodDone; err != nil {
		stopBar()
		return err
	}
	d.mu.Lock()
	d.healed = time.Now()
	d.mu.Unlock()
	d.event("every event accepted; no reply dropped from now on")
	states, err := d.waitSettled(ctx, base, token, time.Now().Add(45*time.Second))
	stopBar()
	var final []machine.Record
	if err == nil {
		final, err = d.final(ctx)
	}
	_ = recv.Close()
	stop()
	if serr := <-served; serr != nil || err != nil {
		return errors.Join(err, serr)
	}
	violations, entries := d.check(c.Streams["orders"].Policy(), final)
	rerr := d.report(states, time.Since(start), violations, entries)
	fo, err := d.fanout(ctx, dir)
	if err != nil {
		return errors.Join(rerr, err)
	}
	return errors.Join(rerr, fo.report(d.out))
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// receiverHandler is the kit around an application that counts what it
// applies, refuses poison, and a wrapper that drops one reply in ten
// after the event was applied (the connection is closed unanswered).
func (d *demoRun) receiverHandler(secret string) (http.Handler, error) {
	type called struct{ yes bool }
	type key struct{}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := receiver.FromContext(r.Context())
		r.Context().Value(key{}).(*called).yes = true
		if strings.Contains(string(ev.Body), `"poison":true`) {
			d.mu.Lock()
			d.refused++
			d.mu.Unlock()
			http.Error(w, "this order cannot be processed", http.StatusUnprocessableEntity)
			return
		}
		d.mu.Lock()
		d.applied[ev.ID]++
		d.mu.Unlock()
		d.rec.add(invariants.Entry{Kind: invariants.Applied, ID: ev.ID, Seq: ev.Seq, Attempt: ev.Attempt})
		w.WriteHeader(http.StatusNoContent)
	})
	kit, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: time.Hour,
		Store: receiver.NewMemory(), Logger: slog.New(slog.DiscardHandler)}, app)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			kit.ServeHTTP(w, r)
			return
		}
		c := &called{}
		rec := httptest.NewRecorder()
		kit.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), key{}, c)))
		d.mu.Lock()
		d.requests++
		if !c.yes && rec.Code == http.StatusOK {
			d.duplicates++
			d.rec.add(invariants.Entry{Kind: invariants.Discarded, ID: r.Header.Get("webhook-id"), Detail: "duplicate"})
		}
		drop := d.healed.IsZero() && rec.Code < 300 && d.rnd.IntN(10) == 0
		if drop {
			d.dropped++
		}
		d.mu.Unlock()
		if drop {
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close() // applied, and the sender never hears of it
					return
				}
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}), nil
}

// goDown stops the receiver taking connections, but lets the requests it
// is serving answer: Close would cut their connections too, and a request
// the application had applied would lose its reply, be retried after the
// outage and be absorbed as a duplicate, a dropped reply the demo never
// counted ("replies dropped" would then fall one short of "duplicates
// absorbed"). The replies the demo drops are the ones it counts.
func (d *demoRun) goDown(recv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if recv.Shutdown(ctx) != nil {
		_ = recv.Close() // a request still running after 5s: cut it
	}
}

func (d *demoRun) setDown(v bool) {
	d.mu.Lock()
	d.down = v
	d.mu.Unlock()
}

// event prints a phase change on its own line.
func (d *demoRun) event(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tty {
		fmt.Fprintf(d.out, "\r\033[K")
	}
	fmt.Fprintf(d.out, "  %s\n", what)
}

// produce publishes every event over the API, ten milliseconds apart,
// resending an ID until courier acknowledges it.
func (d *demoRun) produce(ctx context.Context, base, token string) error {
	for i := range d.n {
		body := fmt.Sprintf(`{"id":"order-%05d","payload":{"order":%d,"poison":%t}}`, i, i, poison(i))
		for {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			status, err := apiCall(ctx, "POST", base+"/v1/streams/orders/events", token, body, nil)
			if err == nil && (status == 200 || status == 201) {
				break
			}
			if err == nil && status < 500 {
				return fmt.Errorf("demo: publish refused with %d", status)
			}
			time.Sleep(50 * time.Millisecond)
		}
		d.mu.Lock()
		d.accepted++
		d.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// apiCall sends body to url with the token and decodes a 2xx answer
// into out (if not nil).
func apiCall(ctx context.Context, method, url, token, body string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode/100 != 2 {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// progress redraws a bar on a terminal (every 100 ms) until stopped.
func (d *demoRun) progress(start time.Time) func() {
	if !d.tty {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				d.mu.Lock()
				fmt.Fprint(d.out, "\r\033[K")
				d.mu.Unlock()
				return
			case <-tick.C:
			}
			d.mu.Lock()
			settled := len(d.applied) + d.deadSeen()
			const width = 30
			fill := min(width, settled*width/max(1, d.n))
			state := "up"
			if d.down {
				state = "DOWN"
			}
			fmt.Fprintf(d.out, "\r\033[K  [%s%s] %3d/%d settled  accepted %d  receiver %s  dropped replies %d  duplicates absorbed %d  %4.1fs",
				strings.Repeat("#", fill), strings.Repeat(".", width-fill), settled, d.n, d.accepted, state,
				d.dropped, d.duplicates, time.Since(start).Seconds())
			d.mu.Unlock()
		}
	})
	return func() { close(done); wg.Wait() }
}

// deadSeen is how many poison events the receiver has refused at least
// once; the caller holds d.mu.
func (d *demoRun) deadSeen() int { return min(d.refused, d.n/25) }

type eventState struct {
	State      string `json:"state"`
	DeadReason string `json:"dead_reason"`
	Attempts   int    `json:"attempts"`
}

// waitSettled polls the API until every event is delivered or dead.
func (d *demoRun) waitSettled(ctx context.Context, base, token string, limit time.Time) (map[string]eventState, error) {
	for {
		states := make(map[string]eventState, d.n)
		open := 0
		for i := range d.n {
			id := fmt.Sprintf("order-%05d", i)
			var st eventState
			if _, err := apiCall(ctx, "GET", base+"/v1/events/"+id, token, "", &st); err != nil {
				return nil, err
			}
			states[id] = st
			if st.State != "delivered" && st.State != "dead" {
				open++
			}
		}
		if open == 0 || time.Now().After(limit) {
			return states, nil
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// final reads every event's record from the store.
func (d *demoRun) final(ctx context.Context) ([]machine.Record, error) {
	out := make([]machine.Record, 0, d.n)
	for i := range d.n {
		r, err := d.hooks.store.Get(ctx, fmt.Sprintf("order-%05d", i))
		if err != nil {
			return nil, err
		}
		out = append(out, r.Machine())
	}
	return out, nil
}

// check runs the checker over the recorded log and the store's final
// content.
func (d *demoRun) check(pol machine.Config, final []machine.Record) ([]invariants.Violation, int) {
	d.rec.mu.Lock()
	run := d.rec.run
	run.Entries = slices.Clone(run.Entries)
	d.rec.mu.Unlock()
	d.mu.Lock()
	healed := d.healed
	d.mu.Unlock()
	slack := 5 * time.Second // lease handling, polls and a real clock
	run.Policy, run.Final, run.Finished = pol, final, true
	// The worker's entries, its persists too (recordingStore.Save), carry
	// the clock reading its machine stepped with, so a NextAt is judged
	// against the instant it was computed from; Skew covers what the
	// rules compare with stamps of other readings of this process's
	// clock (the store's AcceptedAt, the receiver's and the leases').
	run.HealedAt, run.Slack, run.Skew = healed, slack, 10*time.Millisecond
	run.LivenessBound = invariants.LivenessBound(pol, d.n, d.n/25, 50*time.Millisecond) + slack
	return invariants.Check(run), len(run.Entries)
}

// report prints what happened and the verdicts; a broken guarantee is an
// error (exit 1).
func (d *demoRun) report(states map[string]eventState, took time.Duration, violations []invariants.Violation, entries int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delivered, dead, open := 0, 0, 0
	var bad []string
	for i := range d.n {
		id := fmt.Sprintf("order-%05d", i)
		st, n := states[id], d.applied[id]
		switch st.State {
		case "delivered":
			delivered++
		case "dead":
			dead++
		default:
			open++
		}
		switch {
		case poison(i) && (st.State != "dead" || st.DeadReason != "rejected" || n != 0):
			bad = append(bad, fmt.Sprintf("%s (poison): state %s %s, applied %d times; want dead (rejected), applied 0", id, st.State, st.DeadReason, n))
		case !poison(i) && (st.State != "delivered" || n != 1):
			bad = append(bad, fmt.Sprintf("%s: state %s, applied %d times; want delivered, applied once", id, st.State, n))
		}
	}
	w := bufio.NewWriter(d.out)
	defer w.Flush()
	fmt.Fprintf(w, "\nIn %.1fs:\n", took.Seconds())
	fmt.Fprintf(w, "  accepted             %d (each answered only once durable in SQLite)\n", d.accepted)
	fmt.Fprintf(w, "  delivered            %d, applied by the receiver %d\n", delivered, len(d.applied))
	fmt.Fprintf(w, "  webhook requests     %d (retries after the outage and the dropped replies)\n", d.requests)
	fmt.Fprintf(w, "  replies dropped      %d (applied, but courier never heard)\n", d.dropped)
	fmt.Fprintf(w, "  duplicates absorbed  %d (the kit answered 200 without applying again)\n", d.duplicates)
	fmt.Fprintf(w, "  dead letters         %d (refused by the receiver: 422)\n", dead)
	if open > 0 {
		fmt.Fprintf(w, "  not settled          %d\n", open)
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "\n%d events broke a guarantee:\n", len(bad))
		for _, b := range bad[:min(len(bad), 10)] {
			fmt.Fprintf(w, "  %s\n", b)
		}
	} else {
		fmt.Fprintf(w, "\nevery accepted event applied exactly once or dead as the receiver refused it: 0 lost, 0 applied twice\n")
	}
	for _, v := range violations[:min(len(violations), 10)] {
		fmt.Fprintf(w, "  %s\n", v)
	}
	if len(bad) > 0 || len(violations) > 0 {
		fmt.Fprintf(w, "verdict: FAIL — invariants.Check found %d violations in %d observations\n", len(violations), entries)
		return errors.New("demo: guarantees broken")
	}
	fmt.Fprintf(w, "verdict: PASS — invariants.Check judged %d observations: every invariant held\n", entries)
	return nil
}

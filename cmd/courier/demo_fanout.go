package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/courierlab/courier/webhook"
	"github.com/courierlab/courier/webhook/receiver"
)

// The demo's fan-out: one application, three endpoints, one message type.
const (
	fanoutMessages = 20
	fanoutLimit    = 5 // the rate-limited endpoint's rate_limit, attempts per second
	// fanoutSlack is what loopback jitter may take off a second between
	// the starts the limit spaces and their arrivals.
	fanoutSlack = 100 * time.Millisecond
)

// fanoutSink is the receiver of the healthy and the rate-limited
// endpoints: the kit, verifying signatures and absorbing duplicates,
// with every request's arrival noted per path.
type fanoutSink struct {
	mu       sync.Mutex
	applied  map[string]map[string]int // path -> webhook-id -> times applied
	arrivals map[string][]time.Time    // path -> every POST's arrival
}

func newFanoutSink(secret string) (*fanoutSink, http.Handler, error) {
	s := &fanoutSink{applied: map[string]map[string]int{}, arrivals: map[string][]time.Time{}}
	kit, err := receiver.New(receiver.Config{Secrets: []string{secret}, Window: time.Hour, Store: receiver.NewMemory(),
		Logger: slog.New(slog.DiscardHandler)}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := receiver.FromContext(r.Context())
		s.mu.Lock()
		if s.applied[r.URL.Path] == nil {
			s.applied[r.URL.Path] = map[string]int{}
		}
		s.applied[r.URL.Path][ev.ID]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	if err != nil {
		return nil, nil, err
	}
	return s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.mu.Lock()
			s.arrivals[r.URL.Path] = append(s.arrivals[r.URL.Path], time.Now())
			s.mu.Unlock()
		}
		kit.ServeHTTP(w, r)
	}), nil
}

// got is how many messages path applied, and how many of them more than once.
func (s *fanoutSink) got(path string) (distinct, twice int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.applied[path] {
		distinct++
		if n > 1 {
			twice++
		}
	}
	return distinct, twice
}

func (s *fanoutSink) arrived(path string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals[path]...)
}

// mostWithin is the most of the sorted instants ts that fall within one
// window shorter than w.
func mostWithin(ts []time.Time, w time.Duration) int {
	most := 0
	for i := range ts {
		n := 0
		for j := i; j < len(ts) && ts[j].Sub(ts[i]) < w; j++ {
			n++
		}
		most = max(most, n)
	}
	return most
}

// fanoutResult is what each endpoint got.
type fanoutResult struct {
	healthy, limited, down     int // messages applied (down: delivered)
	healthyTwice, limitedTwice int
	limitedMost                int           // most arrivals at the rate-limited endpoint within a second less the slack
	limitedSpan                time.Duration // its first arrival to its last
	downWaiting                int           // the down endpoint's deliveries neither delivered nor dead
}

// fanout runs a second courier, on a SQLite file of its own in dir
// (the first one's checker judges one stream), publishes fanoutMessages
// messages to an application with a healthy, a rate-limited and a down
// endpoint, waits until the first two have them all (at most 30 s), and
// reads where the down one's are.
func (d *demoRun) fanout(ctx context.Context, dir string) (fanoutResult, error) {
	secret, token := webhook.NewSecret(), randomToken()
	sink, h, err := newFanoutSink(secret)
	if err != nil {
		return fanoutResult{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fanoutResult{}, err
	}
	recv := &http.Server{Handler: h}
	go recv.Serve(ln)
	defer recv.Close()
	downAddr, err := closedAddr()
	if err != nil {
		return fanoutResult{}, err
	}
	base, stop, err := d.serveFanout(ctx, dir, token)
	if err != nil {
		return fanoutResult{}, err
	}
	defer stop()
	fmt.Fprintf(d.out, "\ncourier demo, fan-out: %d messages to one application with three endpoints: healthy, rate-limited (%d/s), down\n",
		fanoutMessages, fanoutLimit)
	app, eps, err := fanoutSetup(ctx, base, token, secret, "http://"+ln.Addr().String(), "http://"+downAddr)
	if err != nil {
		return fanoutResult{}, err
	}
	msgs := make([]string, 0, fanoutMessages)
	for i := range fanoutMessages {
		var m struct{ ID string }
		body := fmt.Sprintf(`{"event_type":"order.paid","payload":{"order":%d},"idempotency_key":"order-%d"}`, i, i)
		if status, err := apiCall(ctx, "POST", base+"/v1/apps/"+app+"/messages", token, body, &m); err != nil || status/100 != 2 {
			return fanoutResult{}, fmt.Errorf("demo: publishing message %d: %d %v", i, status, err)
		}
		msgs = append(msgs, m.ID)
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		h, _ := sink.got("/healthy")
		l, _ := sink.got("/limited")
		if h == fanoutMessages && l == fanoutMessages {
			break
		}
	}
	var r fanoutResult
	r.healthy, r.healthyTwice = sink.got("/healthy")
	r.limited, r.limitedTwice = sink.got("/limited")
	at := sink.arrived("/limited")
	r.limitedMost = mostWithin(at, time.Second-fanoutSlack)
	if len(at) > 0 {
		r.limitedSpan = at[len(at)-1].Sub(at[0])
	}
	for _, m := range msgs {
		var st eventState
		if _, err := apiCall(ctx, "GET", base+"/v1/events/"+m+"."+eps[2], token, "", &st); err != nil {
			return fanoutResult{}, err
		}
		switch st.State {
		case "delivered":
			r.down++
		case "dead":
		default:
			r.downWaiting++
		}
	}
	return r, nil
}

// closedAddr is a loopback address nothing listens on: the down endpoint.
func closedAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// serveFanout starts courier serve with no stream in its config, its log
// in dir, and returns its base URL and how to stop it.
func (d *demoRun) serveFanout(ctx context.Context, dir, token string) (string, func(), error) {
	c, err := ParseConfig(fmt.Sprintf("api_tokens = [%q]\nallow_loopback = true\npoll = \"100ms\"\nshutdown_timeout = \"2s\"\n", token))
	if err != nil {
		return "", nil, err
	}
	c.Database, c.Listen = filepath.Join(dir, "fanout.db"), "127.0.0.1:0"
	lf, err := os.Create(filepath.Join(dir, "fanout.log"))
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	ready, served := make(chan string, 1), make(chan error, 1)
	go func() { served <- serveConfig(sctx, c, slog.New(slog.NewJSONHandler(lf, nil)), ready, nil) }()
	stop := func() { cancel(); <-served; lf.Close() }
	select {
	case addr := <-ready:
		return "http://" + addr, stop, nil
	case err := <-served:
		cancel()
		lf.Close()
		return "", nil, err
	}
}

// fanoutSetup creates the event type, the application and its three
// endpoints by API, and returns the application's ID and the endpoints'
// (healthy, rate-limited, down).
func fanoutSetup(ctx context.Context, base, token, secret, recv, down string) (string, [3]string, error) {
	var eps [3]string
	if status, err := apiCall(ctx, "POST", base+"/v1/event-types", token, `{"name":"order.paid"}`, nil); err != nil || status != 201 {
		return "", eps, fmt.Errorf("demo: creating the event type: %d %v", status, err)
	}
	var app struct{ ID string }
	if status, err := apiCall(ctx, "POST", base+"/v1/apps", token, `{"name":"Demo"}`, &app); err != nil || status != 201 {
		return "", eps, fmt.Errorf("demo: creating the application: %d %v", status, err)
	}
	for i, body := range []string{
		fmt.Sprintf(`{"url":%q,"secrets":[%q],"description":"healthy"}`, recv+"/healthy", secret),
		fmt.Sprintf(`{"url":%q,"secrets":[%q],"description":"rate-limited","ordering":"independent","rate_limit":%d}`, recv+"/limited", secret, fanoutLimit),
		fmt.Sprintf(`{"url":%q,"secrets":[%q],"description":"down"}`, down+"/down", secret),
	} {
		var ep struct{ ID string }
		if status, err := apiCall(ctx, "POST", base+"/v1/apps/"+app.ID+"/endpoints", token, body, &ep); err != nil || status != 201 {
			return "", eps, fmt.Errorf("demo: creating endpoint %d: %d %v", i, status, err)
		}
		eps[i] = ep.ID
	}
	return app.ID, eps, nil
}

// report prints what each endpoint got, and is an error if an endpoint
// got other than it should: the healthy and rate-limited ones every
// message once, the latter never more than its limit in a second (less
// the slack) and so over at least the seconds the limit needs; the down
// one nothing, every delivery waiting.
func (r fanoutResult) report(w io.Writer) error {
	n := fanoutMessages
	need := time.Duration(n/fanoutLimit-1)*time.Second - fanoutSlack
	fmt.Fprintf(w, "  healthy        %d/%d applied, %d more than once\n", r.healthy, n, r.healthyTwice)
	fmt.Fprintf(w, "  rate-limited   %d/%d applied, %d more than once; at most %d in any %.1f s (limit %d/s), over %.1f s\n",
		r.limited, n, r.limitedTwice, r.limitedMost, (time.Second - fanoutSlack).Seconds(), fanoutLimit, r.limitedSpan.Seconds())
	fmt.Fprintf(w, "  down           %d/%d delivered, %d waiting to be retried (nothing listens there)\n", r.down, n, r.downWaiting)
	var bad []string
	if r.healthy != n || r.healthyTwice != 0 {
		bad = append(bad, "the healthy endpoint did not apply every message once")
	}
	if r.limited != n || r.limitedTwice != 0 {
		bad = append(bad, "the rate-limited endpoint did not apply every message once")
	}
	if r.limitedMost > fanoutLimit || r.limitedSpan < need {
		bad = append(bad, fmt.Sprintf("the rate-limited endpoint got more than %d in a second, or all %d in less than %v", fanoutLimit, n, need))
	}
	if r.down != 0 || r.downWaiting != n {
		bad = append(bad, "the down endpoint's deliveries are not all waiting")
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "fan-out: FAIL: %s\n", strings.Join(bad, "; "))
		return errors.New("demo: fan-out broken")
	}
	fmt.Fprintf(w, "fan-out: PASS: each endpoint got what its state allows, each message once\n")
	return nil
}

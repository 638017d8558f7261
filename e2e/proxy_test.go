// This file is the fault-injecting reverse proxy the end-to-end tests put
// between the HTTP channel and the receiver; it proves nothing by itself.
package e2e

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// faultPlan is what the proxy does wrong, while faults last.
type faultPlan struct {
	// refused and unavailable are outage windows: the first closes the
	// listening socket (connection refused, and open connections are
	// dropped), the second answers 503 without forwarding.
	refused, unavailable []window
	burst                float64 // chance a request starts a burst of 5xx
	burstLen             int     // the longest burst
	tooMany              float64 // 429 with Retry-After: 1, not forwarded
	drop                 float64 // forwarded, applied, the reply dropped
	slow                 float64 // forwarded, applied, the reply held past the attempt timeout
	slowFor              time.Duration
	end                  time.Time // no fault from then on
}

type window struct{ from, to time.Time }

func in(ws []window, t time.Time) bool {
	for _, w := range ws {
		if !t.Before(w.from) && t.Before(w.to) {
			return true
		}
	}
	return false
}

// faultCounts is what the proxy did, by kind.
type faultCounts struct {
	Passed, Refused, Unavailable, Burst, TooMany, Dropped, Slow int
}

// proxy forwards every request to target, unless its plan says
// otherwise. It listens on a fixed loopback address, so that it can stop
// listening during an outage and listen again after it.
type proxy struct {
	target string // http://host:port of the receiver
	plan   faultPlan
	client *http.Client
	ctx    context.Context // ends when the proxy closes: slow replies stop waiting
	cancel context.CancelFunc

	mu        sync.Mutex
	rnd       *rand.Rand
	burstLeft int
	counts    faultCounts
	addr      string
	ln        net.Listener
	srv       *http.Server
	serving   sync.WaitGroup
	closed    bool
}

func newProxy(target string, seed uint64, plan faultPlan) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{
		target: target, plan: plan, ctx: ctx, cancel: cancel,
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 32}, Timeout: 30 * time.Second},
		rnd:    rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		addr:   ln.Addr().String(),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	p.serve(ln)
	go p.outages()
	return p, nil
}

// URL is where the channel should send.
func (p *proxy) URL() string { return "http://" + p.addr }

func (p *proxy) serve(ln net.Listener) {
	p.ln = ln
	p.serving.Go(func() { _ = p.srv.Serve(ln) })
}

// outages closes the listener for each refused window and listens again
// on the same address after it.
func (p *proxy) outages() {
	for _, w := range p.plan.refused {
		if !sleepCtx(p.ctx, time.Until(w.from)) {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		_ = p.ln.Close()
		p.mu.Unlock()
		if !sleepCtx(p.ctx, time.Until(w.to)) {
			return
		}
		p.mu.Lock()
		if !p.closed {
			ln, err := net.Listen("tcp", p.addr)
			if err != nil {
				panic("proxy: cannot listen again on " + p.addr + ": " + err.Error())
			}
			p.serve(ln)
		}
		p.mu.Unlock()
	}
}

// Close stops the proxy and every handler it runs.
func (p *proxy) Close() faultCounts {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	_ = p.srv.Close()
	p.serving.Wait()
	p.client.CloseIdleConnections()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

type action uint8

const (
	pass action = iota
	refuse
	unavailable
	burst
	tooMany
	drop
	slow
)

// decide draws what happens to one request.
func (p *proxy) decide(r *http.Request) action {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	a := pass
	switch {
	case !now.Before(p.plan.end):
	case in(p.plan.refused, now):
		a = refuse // a connection opened before the listener closed
	case in(p.plan.unavailable, now):
		a = unavailable
	case p.burstLeft > 0:
		p.burstLeft--
		a = burst
	default:
		switch x := p.rnd.Float64(); {
		case x < p.plan.burst:
			p.burstLeft = p.rnd.IntN(p.plan.burstLen)
			a = burst
		case x < p.plan.burst+p.plan.tooMany:
			a = tooMany
		case r.Method != http.MethodPost: // drop and slow need an effect to lose
		case x < p.plan.burst+p.plan.tooMany+p.plan.drop:
			a = drop
		case x < p.plan.burst+p.plan.tooMany+p.plan.drop+p.plan.slow:
			a = slow
		}
	}
	switch a {
	case pass:
		p.counts.Passed++
	case refuse:
		p.counts.Refused++
	case unavailable:
		p.counts.Unavailable++
	case burst:
		p.counts.Burst++
	case tooMany:
		p.counts.TooMany++
	case drop:
		p.counts.Dropped++
	case slow:
		p.counts.Slow++
	}
	return a
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p.decide(r) {
	case refuse:
		hangUp(w)
		return
	case unavailable:
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	case burst:
		codes := [...]int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}
		http.Error(w, "burst", codes[time.Now().UnixNano()%int64(len(codes))])
		return
	case tooMany:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	case drop:
		if _, _, err := p.forward(r); err == nil {
			hangUp(w) // the receiver applied; the sender never hears it
		}
		return
	case slow:
		status, body, err := p.forward(r)
		if err != nil {
			return
		}
		sleepCtx(p.ctx, p.plan.slowFor) // the sender gives up first
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	status, body, err := p.forward(r)
	if err != nil {
		http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	for k, v := range bodyHeaders {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var bodyHeaders = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}

// forward sends r on to the receiver, whole even if the sender gives up
// meanwhile (a request that left cannot be called back), and returns the
// receiver's answer.
func (p *proxy) forward(r *http.Request) (int, []byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, nil, err
	}
	ctx := context.WithoutCancel(r.Context())
	out, err := http.NewRequestWithContext(ctx, r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp, err := p.client.Do(out)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	return resp.StatusCode, rb, err
}

// hangUp closes the connection without a reply.
func hangUp(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic("proxy: cannot hijack: " + err.Error())
	}
	_ = c.Close()
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/courierlab/courier"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platsqlite"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/sqlitestore"
	"github.com/courierlab/courier/worker"
)

// serveFlags are serve's command line; each flag also reads an
// environment variable, and the flag wins.
type serveFlags struct {
	config, listen, db, postgres, logFormat, record string
	allowLoopback                                   bool
}

func parseServeFlags(args []string, stderr io.Writer) (serveFlags, error) {
	var f serveFlags
	fs := flag.NewFlagSet("courier serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "config", os.Getenv("COURIER_CONFIG"), "TOML file declaring streams, secrets, policy and API tokens ($COURIER_CONFIG)")
	fs.StringVar(&f.listen, "listen", os.Getenv("COURIER_LISTEN"), "API address, default 127.0.0.1:8080 ($COURIER_LISTEN)")
	fs.StringVar(&f.db, "db", os.Getenv("COURIER_DB"), "SQLite file, default ./courier.db ($COURIER_DB)")
	fs.StringVar(&f.postgres, "postgres", os.Getenv("COURIER_POSTGRES"), "PostgreSQL DSN; used instead of SQLite ($COURIER_POSTGRES)")
	fs.StringVar(&f.logFormat, "log-format", "auto", "auto (text on a terminal, JSON otherwise), text or json")
	fs.StringVar(&f.record, "record", "", "for tests: append the observation log invariants.Check reads to this file, as JSON lines")
	fs.BoolVar(&f.allowLoopback, "allow-loopback", false, "let webhooks go to 127.0.0.0/8 and ::1 (development only)")
	if err := fs.Parse(args); err != nil {
		return f, usageError{err}
	}
	if fs.NArg() > 0 {
		return f, usageError{fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))}
	}
	return f, nil
}

// loadServeConfig reads the file (if any), then lets flags and the
// environment override it.
func loadServeConfig(f serveFlags) (*Config, error) {
	var c *Config
	var err error
	if f.config != "" {
		c, err = LoadConfig(f.config)
	} else {
		c, err = ParseConfig("")
	}
	if err != nil {
		return nil, usageError{err}
	}
	if f.listen != "" {
		c.Listen = f.listen
	}
	if f.db != "" {
		c.Database = f.db
	}
	if f.postgres != "" {
		c.Postgres = f.postgres
	}
	if f.allowLoopback {
		c.AllowLoopback = true
	}
	for t := range strings.SplitSeq(os.Getenv("COURIER_API_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.APITokens = append(c.APITokens, t)
		}
	}
	return c, nil
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, f.logFormat)
	if err != nil {
		return err
	}
	c, err := loadServeConfig(f)
	if err != nil {
		return err
	}
	var h *hooks
	if f.record != "" {
		rf, err := os.OpenFile(f.record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return usageError{fmt.Errorf("-record: %w", err)}
		}
		defer rf.Close()
		h = &hooks{rec: &recorder{out: rf}}
	}
	ctx, stop := signalContext(ctx, log)
	defer stop()
	return serveConfig(ctx, c, log, nil, h)
}

// signalContext ends at the first SIGINT or SIGTERM; a second one exits
// the process at once.
func signalContext(parent context.Context, log *slog.Logger) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			log.Info("signal: shutting down gracefully; send it again to exit at once", slog.String("signal", s.String()))
			cancel()
		case <-ctx.Done():
			return
		}
		s := <-sigs
		log.Warn("second signal: exiting now", slog.String("signal", s.String()))
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(sigs); cancel() }
}

// backend is the opened store and what the service needs besides: the
// pauses and the platform's store, in the same database.
type backend struct {
	st     store.Store
	pauses *pauses
	plat   platform.Store
	close  func()
	desc   string
}

func openBackend(ctx context.Context, c *Config) (*backend, error) {
	if c.Postgres != "" {
		return openPostgres(ctx, c.Postgres, c.PostgresSchema)
	}
	st, err := sqlitestore.Open(ctx, c.Database, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	p, err := openPauses(ctx, "sqlite", "file:"+c.Database+"?_pragma=busy_timeout(10000)", "")
	if err != nil {
		st.Close()
		return nil, err
	}
	ps, err := platsqlite.Open(ctx, c.Database, platsqlite.Options{})
	if err != nil {
		p.Close()
		st.Close()
		return nil, err
	}
	return &backend{st: st, pauses: p, plat: ps, desc: "sqlite:" + c.Database,
		close: func() { ps.Close(); p.Close(); st.Close() }}, nil
}

// serveConfig runs courier until ctx ends. ready, if not nil, receives
// the address the API listens on once it does (tests use port 0).
func serveConfig(ctx context.Context, c *Config, log *slog.Logger, ready chan<- string, h *hooks) error {
	if len(c.APITokens) == 0 {
		log.Warn("no API token configured (api_tokens or COURIER_API_TOKENS): every API call will be refused")
	}
	if c.AllowLoopback {
		log.Warn("SSRF: allow_loopback is on; webhooks may be sent to 127.0.0.0/8 and ::1. Never in production.")
	}
	if len(c.Streams) == 0 {
		log.Info("no stream declared in the config: courier delivers the applications' endpoints (/v1/apps) only")
	}
	be, err := openBackend(ctx, c)
	if err != nil {
		return err
	}
	defer be.close()
	eps := newEndpointChannels(be.plat, c.AllowLoopback, log)
	rt, err := newRouter(c, eps, log)
	if err != nil {
		return usageError{err}
	}
	defer rt.Close()

	res, err := newResource(ctx)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	defer mp.Shutdown(context.WithoutCancel(ctx))
	tp, stopTracing, err := newTracing(ctx, res)
	if err != nil {
		return usageError{err}
	}
	defer func() {
		// The spans still buffered go out, within a bound.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(fctx); err != nil {
			log.Warn("traces: flushing at exit", slog.Any("err", err))
		}
	}()

	host, _ := os.Hostname()
	owner := host + "/" + strconv.Itoa(os.Getpid()) + "/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	st := be.st
	var obs worker.Observer
	pol := policy(c, be.pauses, eps)
	if h != nil {
		h.store = st
		st = recordingStore{Store: st, rec: h.rec}
		obs = h.rec.observer()
		pol = h.rec.policy(pol)
	}
	svc, err := courier.New(courier.Config{
		Worker: worker.Config{
			Owner:      owner,
			Store:      st,
			Observer:   obs,
			Policy:     pol,
			MaxStreams: maxStreams,
			LeaseTTL:   c.LeaseTTL.Duration,
			Poll:       c.Poll.Duration,
		},
		Workers:         c.workers(),
		Channel:         rt,
		ShutdownTimeout: c.ShutdownTimeout.Duration,
		Logger:          log,
		MeterProvider:   mp,
		TracerProvider:  tp,
		Metrics:         courier.Metrics{StreamLabels: c.Metrics.StreamLabels, Streams: slices.Sorted(maps.Keys(c.Streams))},
	})
	if err != nil {
		return usageError{fmt.Errorf("config: %w", err)}
	}

	plat, err := newPlatform(be.plat, svc, log)
	if err != nil {
		return err
	}
	rec, closeOps, err := newRecorder(c, be.plat, mp, log)
	if err != nil {
		return err
	}
	defer closeOps()
	eps.rec = rec // before the first send: svc.Run starts below

	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var stopping atomic.Bool
	rp := newReplays(st, be.plat, owner, c.LeaseTTL.Duration, log)
	if c.Platform.ReplayPage > 0 {
		rp.page = c.Platform.ReplayPage
	}
	rp.run()
	defer rp.stop() // the jobs end before the store closes
	a := &api{cfg: c, svc: svc, st: st, plat: plat, pauses: be.pauses, rec: h.recorder(), replays: rp, log: log,
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ready: func() bool { return !stopping.Load() }}
	handler, err := instrumentAPI(a.handler(), mp, tp)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(runCtx) }()
	redriven := make(chan error, 1)
	go func() { redriven <- plat.Run(runCtx) }()
	// The attempt log stops after the worker, whose last attempts it writes.
	recCtx, stopRec := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRec()
	logged := make(chan error, 1)
	go func() { logged <- rec.Run(recCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("courier serving", slog.String("addr", ln.Addr().String()), slog.String("store", be.desc),
		slog.Int("streams", len(c.Streams)), slog.String("owner", owner))
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case <-ctx.Done():
	case err := <-served:
		stopRun()
		<-ran
		<-redriven
		stopRec()
		<-logged
		return fmt.Errorf("http: %w", err)
	}
	// Stop accepting first, let publishes in progress finish, then drain
	// the deliveries in flight and release the leases.
	stopping.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout.Duration)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("http shutdown", slog.Any("err", err))
	}
	rp.stop()
	stopRun()
	err = <-ran
	<-redriven
	stopRec()
	<-logged
	log.Info("courier stopped")
	return err
}

// policy gives each declared stream its configured policy and each
// endpoint's stream the endpoint's (endpointChannels.policy); an
// undeclared or paused stream, or a disabled endpoint's, gets an error,
// so the worker gives it straight back.
func policy(c *Config, p *pauses, eps *endpointChannels) func(string) (machine.Config, error) {
	return func(stream string) (machine.Config, error) {
		s, ok := c.Streams[stream]
		var pol machine.Config
		switch {
		case ok:
			pol = s.Policy()
		case eps != nil && platform.IsEndpointStream(stream):
			var err error
			if pol, err = eps.policy(stream); err != nil {
				return machine.Config{}, err
			}
		default:
			return machine.Config{}, fmt.Errorf("%w %q: not in the config", ErrUnknownStream, stream)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		paused, err := p.Paused(ctx, stream)
		if err != nil {
			return machine.Config{}, fmt.Errorf("reading whether %q is paused: %w", stream, err)
		}
		if paused {
			return machine.Config{}, fmt.Errorf("%w: %q", courier.ErrPaused, stream)
		}
		return pol, nil
	}
}

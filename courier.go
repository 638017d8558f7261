package courier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/worker"
)

// Config is a Service's worker, channel and limits.
type Config struct {
	// Worker is the worker's identity, store, policy and lease timing. Its
	// Observer, if set, sees every event after the Service's own logs and
	// metrics, one event at a time even when there are several Workers.
	Worker worker.Config
	// Channel carries the attempts and probes.
	Channel channel.Channel
	// Workers is how many workers the Service runs, each on a goroutine
	// of its own with its own leases: the store calls of streams that
	// different workers own run at once (and share the database's group
	// commit), while each stream still has one owner, so each machine
	// stays single-threaded. Worker.MaxStreams is shared among them (each
	// owns up to MaxStreams/Workers, rounded up) and Worker.Owner names
	// them (Owner/1 ... Owner/Workers when there are several); only the
	// first deletes settled records past the retention. Zero means 1. It
	// may not exceed Worker.MaxStreams.
	Workers int
	// MaxInFlight bounds the sends and probes in flight at once, over all
	// streams. Zero means 64.
	MaxInFlight int
	// MaxBatch bounds the replies a worker persists in one store call:
	// those that came in while it was busy go to the store together
	// (worker.Worker.DeliverAll), one commit for all of them when the
	// store is a store.BatchSaver. No reply waits for others to come.
	// Zero means 128.
	MaxBatch int
	// StoreTimeout bounds each round of store calls (one Advance or one
	// reply's batch). Zero means 10s.
	StoreTimeout time.Duration
	// ShutdownTimeout is how long Run lets attempts in flight finish after
	// its context ends, before it cancels them. Zero means 30s.
	ShutdownTimeout time.Duration

	// Logger receives structured logs; nil means slog.Default(). No
	// payload is ever logged.
	Logger *slog.Logger
	// MeterProvider and TracerProvider default to OpenTelemetry's global
	// ones.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	// Metrics bounds the stream label and the backlog gauges' store call.
	Metrics Metrics
}

// ErrPaused is for a Policy to wrap when an operator paused the stream:
// the worker gives the stream back as for any policy error, and the
// Service logs the pause once, at INFO, where another policy error is a
// worker fault logged at ERROR each time.
var ErrPaused = errors.New("courier: stream paused by an operator")

// Service runs Config.Workers workers: they claim streams, deliver their
// events over the channel, and let producers publish. Build it with New,
// run it with Run; Publish may be called from any goroutine, before or
// during Run.
type Service struct {
	cfg    Config
	tel    *telemetry
	sem    chan struct{}
	shards []*shard
	pubs   publishBatches

	mu      sync.Mutex
	owners  map[string]int // the shard holding each stream's lease, as its worker last told
	turn    int            // the shard told of the next publish to a stream no shard holds, when all are full
	running bool

	observing sync.Mutex // one Observe at a time, whichever shard's worker calls
}

// shard is one worker and the loop goroutine that owns it: every call to
// the worker, and so every store call and machine step of its streams,
// happens on that goroutine.
type shard struct {
	index  int
	owner  string // its worker's Config.Owner
	w      *worker.Worker
	repl   chan worker.Reply
	notify map[string]struct{} // streams published to locally since the loop looked; Service.mu
	handed []store.Record      // the records those publishes created, for the worker to adopt unread; Service.mu
	kick   chan struct{}       // capacity 1: the loop has notifications to read
	held   int                 // streams whose lease its worker holds, as it last told; Service.mu
	room   int                 // its worker's Config.MaxStreams
	snapAt time.Time           // when the loop last copied the worker's status for the gauges
}

// New checks cfg and returns a Service that is not running yet.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Channel == nil:
		return nil, fmt.Errorf("%w: Channel is nil", worker.ErrInvalidConfig)
	case cfg.Workers < 0 || cfg.Workers > max(cfg.Worker.MaxStreams, 1):
		return nil, fmt.Errorf("%w: Workers is %d; must be within [0, Worker.MaxStreams = %d]", worker.ErrInvalidConfig, cfg.Workers, cfg.Worker.MaxStreams)
	case cfg.MaxInFlight < 0:
		return nil, fmt.Errorf("%w: MaxInFlight is %d; must not be negative", worker.ErrInvalidConfig, cfg.MaxInFlight)
	case cfg.MaxBatch < 0:
		return nil, fmt.Errorf("%w: MaxBatch is %d; must not be negative", worker.ErrInvalidConfig, cfg.MaxBatch)
	case cfg.StoreTimeout < 0 || cfg.ShutdownTimeout < 0:
		return nil, fmt.Errorf("%w: StoreTimeout and ShutdownTimeout must not be negative", worker.ErrInvalidConfig)
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 64
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 128
	}
	if cfg.StoreTimeout == 0 {
		cfg.StoreTimeout = 10 * time.Second
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	tel, err := newTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, tel: tel, sem: make(chan struct{}, cfg.MaxInFlight), owners: map[string]int{},
		pubs: publishBatches{st: cfg.Worker.Store, timeout: cfg.StoreTimeout}}
	for k := range cfg.Workers {
		w, err := worker.New(s.workerConfig(k))
		if err != nil {
			return nil, err
		}
		s.shards = append(s.shards, &shard{index: k, owner: w.Config().Owner, w: w, repl: make(chan worker.Reply),
			notify: map[string]struct{}{}, kick: make(chan struct{}, 1), room: w.Config().MaxStreams})
	}
	return s, nil
}

// workerConfig is the config of shard k's worker: its share of the
// streams, its own owner name, and the Service as its observer.
func (s *Service) workerConfig(k int) worker.Config {
	wc := s.cfg.Worker
	wc.Observer = shardObserver{s: s, k: k}
	if n := s.cfg.Workers; n > 1 {
		wc.Owner = fmt.Sprintf("%s/%d", wc.Owner, k+1)
		wc.MaxStreams = (wc.MaxStreams + n - 1) / n
		if k > 0 {
			wc.Retention = 0 // one worker deletes; the others would only race it
		}
	}
	return wc
}

// shardObserver is shard k's worker's observer: it notes which streams
// the shard holds (so that a publish reaches their owner) and hands the
// event to the telemetry, one event at a time over all shards.
type shardObserver struct {
	s *Service
	k int
}

func (o shardObserver) Observe(e worker.Event) {
	s := o.s
	switch e.Kind {
	case worker.LeaseGranted:
		s.mu.Lock()
		if k, ok := s.owners[e.Stream]; ok {
			s.shards[k].held--
		}
		s.owners[e.Stream] = o.k
		s.shards[o.k].held++
		s.mu.Unlock()
	case worker.LeaseLost, worker.LeaseReleased:
		s.mu.Lock()
		if k, ok := s.owners[e.Stream]; ok && k == o.k {
			delete(s.owners, e.Stream)
			s.shards[k].held--
		}
		s.mu.Unlock()
	}
	s.observing.Lock()
	defer s.observing.Unlock()
	s.tel.Observe(e)
}

// Receipt says what the store holds for a published event.
type Receipt struct {
	// Seq is the event's place in its stream.
	Seq uint64
	// Duplicate is true when the ID had been published before: nothing
	// changed, not even the payload.
	Duplicate bool
}

// ErrRefused is wrapped by Publish's error when the Channel refused the
// event as one it could never carry (an ID that cannot be a webhook-id,
// say): nothing was stored, and publishing it again will not help.
var ErrRefused = errors.New("refused")

// Publish stores an event durably at the end of stream and returns once
// it is. If the Channel is a channel.Checker, an event it could never
// carry is refused first, with an error wrapping ErrRefused and the
// channel's, and nothing is stored. A nil error means the event will be
// delivered or kept as a dead letter, whatever crashes later. Publishing an ID again is idempotent.
// On an error the event may or may not have been stored; publish it again
// with the same ID. If this Service owns the stream, its worker adopts the
// event at once; otherwise the owner finds it at its next poll.
func (s *Service) Publish(ctx context.Context, stream, id string, payload []byte) (Receipt, error) {
	ctx, span := s.tel.startPublish(ctx, stream, id)
	if c, ok := s.cfg.Channel.(channel.Checker); ok {
		if err := c.Check(stream, id, payload); err != nil {
			err = fmt.Errorf("courier: publish %q on stream %q %w: %w", id, stream, ErrRefused, err)
			s.tel.endPublish(ctx, span, stream, publishRefused, 0, err)
			return Receipt{}, err
		}
	}
	out := s.pubs.enqueue(ctx, store.NewEvent{Stream: stream, ID: id, Payload: payload})
	rec, created, err := out.Record, out.Created, out.Err
	if err != nil {
		s.tel.storeFailed(ctx, "Enqueue", err)
		err = fmt.Errorf("courier: publish %q on stream %q: %w", id, stream, err)
		s.tel.endPublish(ctx, span, stream, publishFailed, 0, err)
		return Receipt{}, err
	}
	result := publishAccepted
	if !created {
		result = publishDuplicate
	}
	s.tel.endPublish(ctx, span, stream, result, rec.Seq, nil)
	s.notify(rec, created, out.HeldBy)
	return Receipt{Seq: rec.Seq, Duplicate: !created}, nil
}

// notify tells the shard that holds rec's stream of a local publish, so
// that it adopts the event at once (a record it created, without reading
// it back: worker.Enqueued). heldBy is the owner of the lease the store
// found valid on the stream (store.Enqueued.HeldBy): one of this
// Service's workers whose grant it has yet to observe is told as if it
// had; another process's worker adopts the event at its next poll, and
// no claim here could take the stream from it, so no shard is told.
// When no one holds the stream, the first shard with room is told
// (claimer), and claims at once.
func (s *Service) notify(rec store.Record, created bool, heldBy string) {
	s.mu.Lock()
	k, ok := s.owners[rec.Stream]
	if !ok && heldBy != "" {
		if k, ok = s.shardOwning(heldBy); !ok {
			s.mu.Unlock()
			return
		}
	}
	if !ok {
		k = s.claimer()
	}
	sh := s.shards[k]
	if created {
		sh.handed = append(sh.handed, rec)
	} else {
		sh.notify[rec.Stream] = struct{}{}
	}
	s.mu.Unlock()
	select {
	case sh.kick <- struct{}{}:
	default: // the loop has a kick pending already
	}
}

// claimer is the shard told of a publish to a stream no shard holds: the
// first with room for it, whose claim takes every stream due then. So
// the streams at work gather on as few workers as they fit in, and each
// worker's writes go to the store in fewer, larger batches (a worker
// makes the writes of all its streams that are ready in one
// transaction). When every shard is full, they take turns.
func (s *Service) claimer() int {
	for k, sh := range s.shards {
		if sh.held < sh.room {
			return k
		}
	}
	k := s.turn
	s.turn = (s.turn + 1) % len(s.shards)
	return k
}

// shardOwning returns the shard whose worker is named owner, if one is.
func (s *Service) shardOwning(owner string) (int, bool) {
	for k, sh := range s.shards {
		if sh.owner == owner {
			return k, true
		}
	}
	return 0, false
}

// ErrRunning is returned by Run when the Service is running already.
var ErrRunning = errors.New("courier: service already running")

// Run delivers until ctx ends, then shuts down gracefully: it claims and
// starts nothing more, lets the attempts in flight finish for up to
// ShutdownTimeout (then cancels them), and releases its leases. Each
// worker does this on its own goroutine. It returns nil after a shutdown
// that ctx asked for. Every goroutine it started has ended when it
// returns.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrRunning
	}
	s.running = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()

	var wg sync.WaitGroup
	for _, sh := range s.shards {
		wg.Go(func() { s.serve(ctx, sh) })
	}
	wg.Wait()
	return nil
}

// serve runs shard sh's loop until ctx ends, then shuts it down as Run
// says.
func (s *Service) serve(ctx context.Context, sh *shard) {
	// Store calls outlive ctx: replies that come in during the shutdown
	// must still be persisted, and the leases released.
	base := context.WithoutCancel(ctx)
	sendCtx, cancelSends := context.WithCancel(base)
	defer cancelSends()
	l := &loop{s: s, sh: sh, base: base, sendCtx: sendCtx, spacing: sendSpacing{}}
	l.advance(time.Now())
	l.run(ctx.Done(), false)

	// Shutdown: no claim, no new attempt; wait for those out.
	sh.w.Drain()
	s.cfg.Logger.LogAttrs(base, slog.LevelInfo, "courier: shutting down",
		slog.String("owner", sh.w.Config().Owner), slog.Int("in_flight", l.inFlight))
	grace, cancelGrace := context.WithTimeout(base, s.cfg.ShutdownTimeout)
	defer cancelGrace()
	l.run(grace.Done(), true)
	if l.inFlight > 0 {
		s.cfg.Logger.LogAttrs(base, slog.LevelWarn, "courier: shutdown timeout; cancelling attempts in flight",
			slog.Int("in_flight", l.inFlight))
		cancelSends()
		l.run(nil, true)
	}
	sctx, cancel := context.WithTimeout(base, s.cfg.StoreTimeout)
	defer cancel()
	sh.w.Stop(sctx, time.Now())
	s.tel.snapshot(sh.index, sh.w)
}

// ready is always ready to receive from: the loop's wake-up when timed
// work is due now.
var ready = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// loop is the goroutine that owns a shard's worker: every store call,
// every machine step and every reply of its streams goes through it.
type loop struct {
	s        *Service
	sh       *shard
	base     context.Context
	sendCtx  context.Context
	inFlight int
	spacing  sendSpacing // holds rate-limited sends as far apart as they started
}

// run serves the worker until stop closes or, when draining, until no
// send or probe is in flight.
func (l *loop) run(stop <-chan struct{}, draining bool) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if draining && l.inFlight == 0 {
			return
		}
		// Timed work that is due is one ready case among the others, not
		// done ahead of them: when it is due again by the time each
		// Advance ends (a store slower than the poll), replies would
		// otherwise wait unread until their attempts time out, answered,
		// and a shutdown would never be seen. But the replies waiting
		// already go first: that Advance would time out the attempts
		// they answer (the machine applies an input before the work its
		// instant makes due; the loop keeps that order).
		now, next, due := l.due()
		if due && l.takeReplies() > 0 {
			if draining && l.inFlight == 0 {
				return
			}
			now, next, due = l.due()
		}
		wake := timer.C
		if due {
			wake = ready
		} else {
			wait := time.Hour
			if !next.IsZero() {
				wait = next.Sub(now)
			}
			timer.Reset(wait)
		}
		select {
		case <-stop:
			return
		case r := <-l.sh.repl:
			l.inFlight--
			l.deliver(l.gather(r))
		case <-l.sh.kick:
			l.s.mu.Lock()
			for _, rec := range l.sh.handed {
				l.sh.w.Enqueued(rec)
			}
			l.sh.handed = nil
			for stream := range l.sh.notify {
				l.sh.w.Notify(stream)
				delete(l.sh.notify, stream)
			}
			l.s.mu.Unlock()
		case <-wake:
			if due {
				l.advance(now)
			}
		}
	}
}

// due reads the clock and the worker's next timed work, and whether that
// is due.
func (l *loop) due() (now, next time.Time, due bool) {
	now, next = time.Now(), l.sh.w.Next()
	return now, next, !next.IsZero() && !next.After(now)
}

// takeReplies delivers the replies that are waiting, in one batch, and
// says how many it took: no more than were in flight when it started, so
// that the answers to the sends it starts cannot hold the timed work off
// for ever.
func (l *loop) takeReplies() int {
	select {
	case r := <-l.sh.repl:
		l.inFlight--
		rs := l.gather(r)
		l.deliver(rs)
		return len(rs)
	default:
		return 0
	}
}

// gather returns r and the replies waiting behind it, MaxBatch at most:
// what one DeliverAll persists in one store call. It waits for none.
func (l *loop) gather(r worker.Reply) []worker.Reply {
	rs := []worker.Reply{r}
	for len(rs) < l.s.cfg.MaxBatch {
		select {
		case r := <-l.sh.repl:
			l.inFlight--
			rs = append(rs, r)
		default:
			return rs
		}
	}
	return rs
}

// advance runs the worker's timed work, its store calls bounded by
// StoreTimeout.
func (l *loop) advance(now time.Time) {
	ctx, cancel := context.WithTimeout(l.base, l.s.cfg.StoreTimeout)
	defer cancel()
	l.dispatch(l.sh.w.Advance(ctx, now))
	if now.Sub(l.sh.snapAt) >= time.Second {
		l.sh.snapAt = now
		l.spacing.prune(now)
		l.s.tel.snapshot(l.sh.index, l.sh.w)
	}
}

// deliver hands replies to the worker, their store calls bounded by
// StoreTimeout.
func (l *loop) deliver(rs []worker.Reply) {
	ctx, cancel := context.WithTimeout(l.base, l.s.cfg.StoreTimeout)
	defer cancel()
	l.dispatch(l.sh.w.DeliverAll(ctx, time.Now(), rs))
}

// dispatch starts one goroutine per send and probe; each hands its
// outcome back to the loop. A rate-limited stream's send may first wait
// (sendSpacing).
func (l *loop) dispatch(fx worker.Effects) {
	now := time.Now()
	for _, x := range fx.Sends {
		l.inFlight++
		hold := l.spacing.hold(x, now)
		go func() { l.sh.repl <- x.Reply(l.s.send(l.sendCtx, x, hold)) }()
	}
	for _, p := range fx.Probes {
		l.inFlight++
		go func() { l.sh.repl <- p.Reply(l.s.probe(l.sendCtx, p)) }()
	}
}

// acquire takes a slot of the global bound, or gives up when ctx ends.
func (s *Service) acquire(ctx context.Context) bool {
	select {
	case s.sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Service) release() { <-s.sem }

// wait waits d, or gives up when ctx ends first.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
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

// send carries out one attempt after hold: under the global bound, never
// at or after the lease's end by this worker's clock, within the
// attempt's timeout.
func (s *Service) send(ctx context.Context, x worker.Send, hold time.Duration) channel.Outcome {
	if !wait(ctx, hold) || !s.acquire(ctx) {
		return channel.Outcome{Result: machine.OutcomeTimedOut, Detail: "not sent: shutting down"}
	}
	defer s.release()
	if !time.Now().Before(x.Deadline) {
		s.tel.notSent(ctx, x)
		return channel.Outcome{Result: machine.OutcomeFailed, Detail: "not sent: the lease may have run out"}
	}
	ctx, cancel := context.WithTimeout(ctx, x.Timeout)
	defer cancel()
	ctx, at := s.tel.startAttempt(ctx, x)
	out := s.cfg.Channel.Send(ctx, x.Attempt)
	if out.Result == 0 {
		out.Result = machine.OutcomeTimedOut // a channel that breaks its contract
	}
	out.Detail = channel.Truncate(out.Detail)
	s.tel.endAttempt(ctx, at, out)
	return out
}

// probe runs one health probe under the same rules as a send.
func (s *Service) probe(ctx context.Context, p worker.Probe) channel.Outcome {
	if !s.acquire(ctx) {
		return channel.Outcome{Result: machine.OutcomeTimedOut, Detail: "not probed: shutting down"}
	}
	defer s.release()
	if !time.Now().Before(p.Deadline) {
		return channel.Outcome{Result: machine.OutcomeFailed, Detail: "not probed: the lease may have run out"}
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	return s.cfg.Channel.Probe(ctx, p.Stream)
}

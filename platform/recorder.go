package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of RecorderConfig's zero fields.
const (
	DefaultAttemptQueue     = 4096
	DefaultDisableAfter     = 5 * 24 * time.Hour // as Svix
	DefaultAttemptRetention = 30 * 24 * time.Hour
	DefaultPruneEvery       = time.Hour
)

// pruneBatch is how many attempts one DeleteAttemptsBefore call deletes.
const pruneBatch = 1000

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	Store Store
	// QueueLen bounds the attempts waiting to be written (0:
	// DefaultAttemptQueue). When it is full, Record drops the attempt:
	// delivery never waits for the log.
	QueueLen int
	// DisableAfter: an endpoint that has failed with no success for this
	// long is disabled (0: DefaultDisableAfter).
	DisableAfter time.Duration
	// Retention: attempts older than this are deleted, every PruneEvery
	// (0: DefaultAttemptRetention and DefaultPruneEvery).
	Retention  time.Duration
	PruneEvery time.Duration
	// Now is the clock of the pruning; nil means time.Now.
	Now func() time.Time
	// Logger receives a line per endpoint disabled and the log's own
	// failures; nil means slog.Default().
	Logger *slog.Logger
	// OnDisabled, if set, is called from Run once health has disabled
	// endpoint e, with the reason (DisabledGone, DisabledFailing): to
	// tell the operator.
	OnDisabled func(ctx context.Context, e Endpoint, reason string)
	// OnDropped, if set, is called by Record for each attempt dropped
	// because the queue was full.
	OnDropped func()
}

// Recorder writes the attempt log off the delivery path: a sender
// hands each attempt to Record, which never blocks, and Run writes them
// one by one (Store.RecordAttempt), disables an endpoint whose health
// says so (DisableReason, Store.DisableEndpoint), and prunes the log
// past its retention.
//
// What is dropped when the queue is full is lost to the log and to the
// endpoint's health: a 410 dropped disables nothing, but the next one
// will.
type Recorder struct {
	cfg   RecorderConfig
	queue chan Attempt
}

// NewRecorder checks cfg and returns a Recorder; start its Run.
func NewRecorder(cfg RecorderConfig) (*Recorder, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("platform: RecorderConfig.Store is nil")
	case cfg.QueueLen < 0, cfg.DisableAfter < 0, cfg.Retention < 0, cfg.PruneEvery < 0:
		return nil, fmt.Errorf("platform: RecorderConfig: QueueLen %d, DisableAfter %v, Retention %v and PruneEvery %v must not be negative",
			cfg.QueueLen, cfg.DisableAfter, cfg.Retention, cfg.PruneEvery)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.DisableAfter, DefaultDisableAfter)
	def(&cfg.Retention, DefaultAttemptRetention)
	def(&cfg.PruneEvery, DefaultPruneEvery)
	if cfg.QueueLen == 0 {
		cfg.QueueLen = DefaultAttemptQueue
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Recorder{cfg: cfg, queue: make(chan Attempt, cfg.QueueLen)}, nil
}

// Record queues a for Run to write, without waiting. It reports false,
// and calls OnDropped, when the queue is full and a is dropped.
func (r *Recorder) Record(a Attempt) bool {
	select {
	case r.queue <- a:
		return true
	default:
		if r.cfg.OnDropped != nil {
			r.cfg.OnDropped()
		}
		return false
	}
}

// drainTimeout bounds how long Run writes what is still queued once its
// context ends.
const drainTimeout = 5 * time.Second

// Run writes queued attempts and prunes the log at once and every
// PruneEvery, until ctx ends; it then writes what is still queued, for
// at most drainTimeout, and returns nil.
func (r *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.PruneEvery)
	defer t.Stop()
	r.prune(ctx)
	for {
		select {
		case a := <-r.queue:
			r.Write(ctx, a)
		case <-t.C:
			r.prune(ctx)
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
			defer cancel()
			for dctx.Err() == nil {
				select {
				case a := <-r.queue:
					r.Write(dctx, a)
				default:
					return nil
				}
			}
			return nil
		}
	}
}

// Write records a at once and disables its endpoint if its health says
// so (DisableReason), calling OnDisabled if that changed it. Run calls it
// for each queued attempt; a caller that runs no Run (the simulator,
// which judges health synchronously) calls it itself.
func (r *Recorder) Write(ctx context.Context, a Attempt) {
	h, err := r.cfg.Store.RecordAttempt(ctx, a)
	switch {
	case errors.Is(err, ErrNotFound):
		return // the endpoint was deleted meanwhile, and its log with it
	case err != nil:
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "attempt log: recording an attempt",
			slog.String("delivery", a.DeliveryID), slog.Any("err", err))
		return
	}
	reason := DisableReason(h, a, r.cfg.DisableAfter)
	if reason == "" {
		return
	}
	e, changed, err := r.cfg.Store.DisableEndpoint(ctx, a.AppID, a.EndpointID, reason)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "endpoint health: disabling an endpoint",
				slog.String("endpoint", a.EndpointID), slog.String("reason", reason), slog.Any("err", err))
		}
		return
	}
	if !changed {
		return // disabled already, by an operator or by an earlier attempt
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "endpoint disabled by its health; PATCH it with enabled true to resume",
		slog.String("app", e.AppID), slog.String("endpoint", e.ID), slog.String("reason", reason),
		slog.Int("status", a.Status), slog.Int64("failing_streak", h.Streak), slog.Time("failing_since", h.FailingSince))
	if r.cfg.OnDisabled != nil {
		r.cfg.OnDisabled(ctx, e, reason)
	}
}

// prune deletes the attempts past the retention, a batch at a time.
func (r *Recorder) prune(ctx context.Context) {
	cut := r.cfg.Now().Add(-r.cfg.Retention)
	total := 0
	for ctx.Err() == nil {
		n, err := r.cfg.Store.DeleteAttemptsBefore(ctx, cut, pruneBatch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "attempt log: pruning", slog.Any("err", err))
			}
			return
		}
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "attempt log pruned", slog.Int("deleted", total), slog.Duration("retention", r.cfg.Retention))
	}
}

package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Config is a worker's identity, store and limits. Every duration is on
// the worker's own clock.
type Config struct {
	// Owner names this worker in its leases. It must be unique among the
	// workers sharing the store, and should change with each process
	// incarnation (host, pid and start time, say).
	Owner string
	// Store is the durable store the workers share.
	Store store.Store
	// Policy returns the delivery policy of a stream (strict or
	// independent, limits, backoff). It is called when the worker takes a
	// stream over, and again at each renewal. An error at a takeover makes
	// the worker give the stream back at once; at a renewal (an operator
	// paused the stream since), the worker starts no new attempt on it and
	// gives it back once the attempts it sent are answered, or an
	// AttemptTimeout later at most.
	Policy func(stream string) (machine.Config, error)

	// MaxStreams is the most streams the worker owns at once, besides
	// those it is yielding (YieldAfter), which it keeps an
	// AttemptTimeout at most.
	MaxStreams int
	// LeaseTTL is the lease asked for on each claim and renewal.
	LeaseTTL time.Duration
	// RenewEvery is how long after a grant or renewal the lease is renewed
	// again; at most LeaseTTL/2. Zero means LeaseTTL/3, which leaves two
	// tries before the lease runs out.
	RenewEvery time.Duration
	// ClockMargin is taken off the lease's end as the worker sees it: the
	// most the worker's clock may run slow against the store's over one
	// LeaseTTL. Zero means LeaseTTL/10. It must be below
	// LeaseTTL-RenewEvery.
	ClockMargin time.Duration
	// Poll is how often the worker looks for streams to claim and for
	// records other producers enqueued on the streams it owns. A local
	// producer's Notify skips the wait.
	Poll time.Duration
	// IdleRelease is how long a stream with nothing left to do is kept
	// before it is given back. Zero means one Poll.
	IdleRelease time.Duration
	// FarRelease: a stream whose next timed work is more than FarRelease
	// away, with nothing out, is released until then
	// (store.Store.ReleaseUntil). Zero means LeaseTTL.
	FarRelease time.Duration
	// YieldAfter: a full worker gives back a stream it has owned this
	// long when the store grants it a waiting stream in its place, so
	// that streams beyond the workers' room rotate (schedule.go). Zero
	// means 2×LeaseTTL.
	YieldAfter time.Duration
	// RetryAfterFailure is how long the worker waits after a failed store
	// call before it tries again (a rebuild, a renewal). Zero means
	// Poll/4.
	RetryAfterFailure time.Duration
	// PageSize bounds the records read in one store call when the worker
	// rebuilds a stream or adopts new records. Zero means 1000.
	PageSize int

	// Retention is how long settled records (delivered, or dead letters
	// an operator discarded) are kept before the worker deletes them
	// (store.DeleteSettled). It must be longer than any producer may
	// resend an event: a deleted ID published again is a new event. Zero
	// keeps them forever.
	Retention time.Duration
	// RetentionEvery is how often the worker deletes, PageSize records
	// at most per call. Zero means a minute.
	RetentionEvery time.Duration

	// Observer, if set, receives every Event.
	Observer Observer
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("worker: invalid config")

// WithDefaults returns c with the defaults New fills in, unchecked: what
// a recorder of a worker's run tells the checker (ClockMargin and
// RenewEvery, which the lease-kept and pause rules judge by).
func (c Config) WithDefaults() Config {
	c.defaults()
	return c
}

func (c *Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	c.defaults()
	switch {
	case c.Owner == "":
		return bad("Owner", "is empty")
	case c.Store == nil:
		return bad("Store", "is nil")
	case c.Policy == nil:
		return bad("Policy", "is nil")
	case c.MaxStreams < 1:
		return bad("MaxStreams", "is %d; must be at least 1", c.MaxStreams)
	case c.LeaseTTL <= 0:
		return bad("LeaseTTL", "is %v; must be positive", c.LeaseTTL)
	case c.RenewEvery < 0 || c.RenewEvery > c.LeaseTTL/2:
		return bad("RenewEvery", "is %v; must be within (0, LeaseTTL/2 = %v]", c.RenewEvery, c.LeaseTTL/2)
	case c.ClockMargin < 0 || c.ClockMargin >= c.LeaseTTL-c.RenewEvery:
		return bad("ClockMargin", "is %v; must be below LeaseTTL-RenewEvery = %v", c.ClockMargin, c.LeaseTTL-c.RenewEvery)
	case c.Poll <= 0:
		return bad("Poll", "is %v; must be positive", c.Poll)
	case c.IdleRelease < 0:
		return bad("IdleRelease", "is %v; must not be negative", c.IdleRelease)
	case c.RetryAfterFailure < 0:
		return bad("RetryAfterFailure", "is %v; must not be negative", c.RetryAfterFailure)
	case c.FarRelease < 0:
		return bad("FarRelease", "is %v; must not be negative", c.FarRelease)
	case c.YieldAfter < 0:
		return bad("YieldAfter", "is %v; must not be negative", c.YieldAfter)
	case c.PageSize < 1:
		return bad("PageSize", "is %d; must be at least 1", c.PageSize)
	case c.Retention < 0:
		return bad("Retention", "is %v; must not be negative (0 keeps settled records)", c.Retention)
	case c.RetentionEvery < 0:
		return bad("RetentionEvery", "is %v; must not be negative", c.RetentionEvery)
	}
	return nil
}

// defaults fills in the zero fields that have a default.
func (c *Config) defaults() {
	if c.RenewEvery == 0 {
		c.RenewEvery = c.LeaseTTL / 3
	}
	if c.ClockMargin == 0 {
		c.ClockMargin = c.LeaseTTL / 10
	}
	if c.IdleRelease == 0 {
		c.IdleRelease = c.Poll
	}
	if c.RetryAfterFailure == 0 {
		c.RetryAfterFailure = c.Poll / 4
	}
	if c.PageSize == 0 {
		c.PageSize = 1000
	}
	if c.FarRelease == 0 {
		c.FarRelease = c.LeaseTTL
	}
	if c.YieldAfter == 0 {
		c.YieldAfter = 2 * c.LeaseTTL
	}
	if c.RetentionEvery == 0 {
		c.RetentionEvery = time.Minute
	}
}

// Worker owns up to MaxStreams streams of a shared store and carries out
// their machines' batches. It is not safe for concurrent use: one
// goroutine calls it, and that goroutine is the only one that touches a
// machine. It reads no clock, starts no goroutine and sets no timer: every
// call carries the driver's clock reading, and Next says when to call
// Advance again.
type Worker struct {
	cfg      Config
	streams  map[string]*stream
	order    []*stream // owned streams, by name: the order every pass takes
	claimAt  time.Time
	purgeAt  time.Time
	gen      uint64
	now      time.Time // the latest clock reading
	origin   time.Time // the first clock reading: the poll grid's origin
	draining bool
	out      Effects // what the current call hands out
	// batching is set while DeliverAll runs: a batch's Save waits in
	// saves, to be made with the others in one store call (deliver.go).
	batching bool
	saves    []pendingSave
	tails    []*stream // streams whose idle and far release wait for their saves (Advance)
	// held are the replies DeliverAll did not step, in the order they
	// came: replies of streams whose sends or probes it had handed out,
	// which the next call steps first (deliver.go).
	held []Reply
	// policies keeps Policy's answers under the planted bugs PolicyCached
	// and PauseSticky (planted.go); nil otherwise.
	policies map[string]machine.Config
	refused  map[string]time.Time
}

// New checks cfg (filling in the defaults it documents) and returns a
// worker that owns nothing yet.
func New(cfg Config) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, streams: make(map[string]*stream)}, nil
}

// Config returns the worker's config, defaults filled in.
func (w *Worker) Config() Config { return w.cfg }

// clock takes the driver's reading, never letting it go backwards: a wall
// clock stepped back must not make the machines refuse their inputs.
func (w *Worker) clock(reading time.Time) time.Time {
	if w.origin.IsZero() {
		w.origin = reading
	}
	if !reading.Before(w.now) {
		w.now = reading
	}
	return w.now
}

// nextPoll is the first instant after now on the grid of Polls from the
// worker's first clock reading. Every poll of the worker (claims, and
// each owned stream's look for new records) falls on that grid, so one
// Advance serves them all, however many streams the worker owns and
// whenever it took them over; each still comes within one Poll.
func (w *Worker) nextPoll(now time.Time) time.Time {
	n := now.Sub(w.origin)/w.cfg.Poll + 1
	return w.origin.Add(n * w.cfg.Poll)
}

// observe stamps e with the worker's clock and hands it to the Observer.
func (w *Worker) observe(e Event) {
	if w.cfg.Observer != nil {
		e.At, e.Owner = w.now, w.cfg.Owner
		w.cfg.Observer.Observe(e)
	}
}

// flush hands out the Effects built since the last call. They are the
// caller's: the worker keeps no reference to them.
func (w *Worker) flush() Effects {
	out := w.out
	w.out = Effects{}
	for _, x := range out.Sends {
		w.handedOver(x.Stream)
	}
	for _, p := range out.Probes {
		w.handedOver(p.Stream)
	}
	return out
}

// handedOver notes that stream's sends and probes are the driver's now.
func (w *Worker) handedOver(stream string) {
	if st := w.streams[stream]; st != nil {
		st.handedOut = false
	}
}

// Advance does what time has made due, stream by stream in name order:
// give up a lease the worker's clock says has run out, renew leases, rebuild
// machines, adopt records producers enqueued, tick machines at their
// WakeAt, give idle streams back; then claim due streams while there is
// room. Store calls take ctx.
func (w *Worker) Advance(ctx context.Context, reading time.Time) Effects {
	now := w.clock(reading)
	if len(w.held) > 0 {
		// Replies first, as a driver that delivered them would have,
		// and nothing else: a tick of a stream whose sends they handed
		// out waits until the driver made them (Next says now).
		w.deliverAll(ctx, now, nil)
		return w.flush()
	}
	w.batching = true
	defer func() { w.batching = false }()
	// The pass walks order itself, by index, with no copy. It adds no
	// stream (claims come after it), but advancing a stream may remove
	// it from order (lost or released), or remove another whose batch
	// the store refused (the waiting batches are saved together), so
	// the next stream is found by name.
	for i := 0; i < len(w.order); {
		st := w.order[i]
		switch {
		case !now.Before(st.due):
			w.advanceStream(ctx, st, now)
			w.reschedule(st)
		case !w.draining && st.closing == "" && st.m != nil && (st.m.Queued() > 0) != st.idleSince.IsZero():
			// Nothing timed is due, but the idle clock is to start or stop.
			w.idle(ctx, st, now)
			w.reschedule(st)
		}
		i = w.after(st.lease.Stream)
	}
	w.saveWaiting(ctx, now)
	for _, st := range w.tails {
		if !st.gone {
			w.idle(ctx, st, now)
			w.releaseFar(ctx, st, now)
			w.reschedule(st)
		}
	}
	w.tails = nil
	switch {
	case w.draining || now.Before(w.claimAt):
	case len(w.order) < w.cfg.MaxStreams:
		w.claim(ctx, now)
	default:
		w.swap(ctx, now) // full: rotate (schedule.go)
	}
	w.saveWaiting(ctx, now) // the batches of the streams just claimed
	if !w.draining && w.cfg.Retention > 0 && !now.Before(w.purgeAt) {
		w.purge(ctx, now)
	}
	return w.flush()
}

// renewedBeforeReply does first what Advance would do first at now: a
// worker that woke from a stall may find replies queued ahead of its
// overdue renewal, and a reply that frees a slot must not start an
// attempt on a stream an operator paused meanwhile. So a lease the
// worker's clock says ran out is given up, and an overdue renewal (with
// its Policy check) is carried out before the reply. It reports false if
// the stream was lost.
func (w *Worker) renewedBeforeReply(ctx context.Context, st *stream, now time.Time) bool {
	if !now.Before(st.expiresAt) && !w.lastRenewal(ctx, st, now) {
		return false
	}
	if now.Before(st.renewAt) {
		return true
	}
	return w.renewAndRecheck(ctx, st, now)
}

// Enqueued says that a local producer enqueued rec (as Store.Enqueue
// returned it, created): the owner adopts it at its next Advance without
// reading the store, when it follows the last record the owner knows (a
// record of another producer in between makes it read them all, as
// Notify does); a worker that does not own the stream tries to claim at
// once. Call Advance after it (Next says now).
func (w *Worker) Enqueued(rec store.Record) {
	st := w.streams[rec.Stream]
	if st == nil {
		w.claimAt = time.Time{}
		return
	}
	st.handed = append(st.handed, rec.Machine())
	w.reschedule(st)
}

// Notify says that a local producer enqueued on stream: the owner adopts
// at its next Advance, and a worker that does not own the stream tries to
// claim at once. Call Advance after it (Next says now).
func (w *Worker) Notify(stream string) {
	if st := w.streams[stream]; st != nil {
		st.adoptAt = time.Time{}
		w.reschedule(st)
		return
	}
	w.claimAt = time.Time{}
}

// Next returns the instant at which Advance has work: the earliest
// renewal, lease end, rebuild, adoption poll, machine WakeAt, idle release
// or claim poll. A machine whose WakeAt is zero adds nothing. Work that
// is due already gives the latest clock reading the worker has seen;
// call Advance once to start a new worker. Next is zero only when nothing
// is timed: a draining worker that owns no stream.
func (w *Worker) Next() time.Time {
	var next time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	if !w.draining && len(w.order) < w.cfg.MaxStreams {
		consider(w.claimAt)
	} else if at, ok := w.yieldAt(); ok && !w.draining {
		consider(later(w.claimAt, at))
	}
	if !w.draining && w.cfg.Retention > 0 {
		consider(w.purgeAt)
	}
	for _, st := range w.order {
		consider(st.due)
	}
	if len(w.held) > 0 {
		consider(w.now) // replies DeliverAll held (deliver.go)
	}
	switch {
	case !found:
		return time.Time{}
	case next.Before(w.now):
		return w.now // due already (a zero instant means at once)
	default:
		return next
	}
}

// Drain starts a graceful stop: the worker claims nothing more, adopts
// nothing, starts no attempt and no probe, and keeps renewing its leases
// while the driver waits for the attempts in flight. Replies to them are
// still persisted; a batch that would start an attempt is saved without
// that attempt (the store keeps the state from before it started), so a
// stop costs no event an attempt. Call Stop when they are in.
func (w *Worker) Drain() {
	w.draining = true
	for _, st := range w.order {
		w.reschedule(st)
	}
}

// reschedule sets st.due after a call acted on st.
func (w *Worker) reschedule(st *stream) { st.due = st.earliest(w.draining) }

// Stop releases every lease the worker holds and forgets every stream.
// Replies DeliverAll held are persisted first; replies that come later
// are dropped. A lease whose release fails is left to expire.
func (w *Worker) Stop(ctx context.Context, now time.Time) {
	w.clock(now)
	w.draining = true
	if len(w.held) > 0 {
		// Replies DeliverAll held are persisted as a drain persists the
		// others. Draining, nothing is handed out, so none is held again.
		w.deliverAll(ctx, w.now, nil)
		w.flush()
	}
	for _, st := range slices.Clone(w.order) {
		w.release(ctx, st, "shutting down")
	}
}

// Status is one owned stream, for metrics and tests.
type Status struct {
	Stream   string
	Token    uint64
	Circuit  machine.Circuit // 0 while the machine is being rebuilt
	Queued   int             // events not yet delivered or dead
	InFlight int             // attempts awaiting an outcome
}

// Streams returns the status of every owned stream, in name order.
func (w *Worker) Streams() []Status {
	out := make([]Status, 0, len(w.order))
	for _, st := range w.order {
		s := Status{Stream: st.lease.Stream, Token: st.lease.Token}
		if st.m != nil {
			s.Circuit, s.Queued, s.InFlight = st.m.Circuit(), st.m.Queued(), len(st.m.InFlight())
		}
		out = append(out, s)
	}
	return out
}

// Owned returns how many streams the worker holds a lease on: the length
// of Streams, without building it.
func (w *Worker) Owned() int { return len(w.order) }

// Owns reports whether the worker holds a lease on stream.
func (w *Worker) Owns(stream string) bool { return w.streams[stream] != nil }

// claim asks the store for due streams, as many as there is room for.
func (w *Worker) claim(ctx context.Context, now time.Time) {
	w.claimAt = w.nextPoll(now)
	leases, err := w.cfg.Store.ClaimDue(ctx, w.cfg.Owner, w.cfg.LeaseTTL, w.cfg.MaxStreams-len(w.order))
	if err != nil {
		// A claim whose reply was lost may have granted leases this worker
		// does not know of: they run out in one LeaseTTL, unused.
		w.observe(Event{Kind: StoreFailed, Op: "ClaimDue", Err: err})
		return
	}
	for _, l := range leases {
		w.adoptLease(ctx, l, now)
	}
}

// purge deletes settled records past the retention, a page at a time;
// a full page means more are due, so it comes back at the next poll.
func (w *Worker) purge(ctx context.Context, now time.Time) {
	w.purgeAt = now.Add(w.cfg.RetentionEvery)
	n, err := w.cfg.Store.DeleteSettled(ctx, w.cfg.Retention, w.cfg.PageSize)
	if err != nil {
		w.observe(Event{Kind: StoreFailed, Op: "DeleteSettled", Err: err})
		return
	}
	if n == w.cfg.PageSize {
		w.purgeAt = now.Add(min(w.cfg.Poll, w.cfg.RetentionEvery))
	}
	if n > 0 {
		w.observe(Event{Kind: Purged, Count: n})
	}
}

// adoptLease takes over a stream the store granted.
func (w *Worker) adoptLease(ctx context.Context, l store.Lease, now time.Time) {
	if old := w.streams[l.Stream]; old != nil {
		// The store granted a stream this worker thought it still held:
		// its clock ran slower than the margin allows. The old lease is
		// stale; only the new one counts.
		w.lose(old, "the store granted the stream again under a new lease", nil)
	}
	st := &stream{lease: l, since: now}
	w.observe(Event{Kind: LeaseGranted, Stream: l.Stream, Token: l.Token})
	cfg, err := w.policy(l.Stream)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		w.observe(Event{Kind: Faulted, Stream: l.Stream, Err: fmt.Errorf("policy for stream %q: %w", l.Stream, err)})
		// A lease the store calls stale ran out already (a slow call):
		// there is nothing left to give back.
		if err := w.cfg.Store.Release(ctx, l); err != nil && !errors.Is(err, store.ErrStaleLease) {
			w.observe(Event{Kind: StoreFailed, Stream: l.Stream, Op: "Release", Err: err})
		}
		return
	}
	st.cfg = plantedConfig(cfg)
	st.leased(now, &w.cfg)
	w.streams[l.Stream] = st
	i, _ := slices.BinarySearchFunc(w.order, l.Stream, func(a *stream, name string) int { return strings.Compare(a.lease.Stream, name) })
	w.order = slices.Insert(w.order, i, st)
	w.rebuild(ctx, st, now)
	w.reschedule(st)
}

// after is the index in order of the first owned stream whose name
// follows name.
func (w *Worker) after(name string) int {
	i, found := slices.BinarySearchFunc(w.order, name, func(a *stream, name string) int { return strings.Compare(a.lease.Stream, name) })
	if found {
		i++
	}
	return i
}

// forget removes a stream from the worker. The map entry goes only if it
// is st's: a stream granted again under a new lease (adoptLease) has the
// new one's, which must stay.
func (w *Worker) forget(st *stream) {
	st.gone = true
	if w.streams[st.lease.Stream] == st {
		delete(w.streams, st.lease.Stream)
	}
	w.order = slices.DeleteFunc(w.order, func(o *stream) bool { return o == st })
}

// lose: the worker is no longer the stream's owner. It drops the machine
// and acts on the stream no more; replies for it will be dropped.
// err is the store's refusal, if it gave one.
func (w *Worker) lose(st *stream, why string, err error) {
	w.observe(Event{Kind: LeaseLost, Stream: st.lease.Stream, Token: st.lease.Token, Detail: why, Err: err})
	w.withdraw(st.lease)
	w.forget(st)
}

// withdraw takes back the sends and probes the call under way handed out
// under lease l, which it has just lost: a slow store call may lose a
// lease in the middle of a call whose claim then takes the stream again,
// and the old lease's attempts must not go out beside the new machine's.
// They are matched by stream and token, so the new lease's stay.
func (w *Worker) withdraw(l store.Lease) {
	of := func(stream string, token uint64) bool { return stream == l.Stream && token == l.Token }
	w.out.Sends = slices.DeleteFunc(w.out.Sends, func(x Send) bool { return of(x.Stream, x.Token) })
	w.out.Probes = slices.DeleteFunc(w.out.Probes, func(p Probe) bool { return of(p.Stream, p.Token) })
}

// release gives the stream back.
func (w *Worker) release(ctx context.Context, st *stream, why string) {
	w.settle(ctx, st)
	if st.gone {
		return // lost when its waiting batch was refused
	}
	err := w.cfg.Store.Release(ctx, st.lease)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		w.lose(st, "release refused: "+err.Error(), err) // it was lost already
		return
	case err != nil:
		w.observe(Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Release", Err: err})
	default:
		w.observe(Event{Kind: LeaseReleased, Stream: st.lease.Stream, Token: st.lease.Token, Detail: why})
	}
	w.forget(st)
}

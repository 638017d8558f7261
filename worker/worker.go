package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/courierlab/courier/channel"
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
	// stream over; an error makes the worker give the stream back.
	Policy func(stream string) (machine.Config, error)

	// MaxStreams is the most streams the worker owns at once.
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

func (c *Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
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
	if c.RetentionEvery == 0 {
		c.RetentionEvery = time.Minute
	}
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
	case c.PageSize < 1:
		return bad("PageSize", "is %d; must be at least 1", c.PageSize)
	case c.Retention < 0:
		return bad("Retention", "is %v; must not be negative (0 keeps settled records)", c.Retention)
	case c.RetentionEvery < 0:
		return bad("RetentionEvery", "is %v; must not be negative", c.RetentionEvery)
	}
	return nil
}

// Worker owns up to MaxStreams streams of a shared store and carries out
// their machines' batches. It is not safe for concurrent use: one
// goroutine calls it, and that goroutine is the only one that touches a
// machine. It reads no clock, starts no goroutine and sets no timer: every
// call carries the driver's clock reading, and Next says when to call
// Advance again.
type Worker struct {
	cfg     Config
	streams map[string]*stream
	order   []*stream      // owned streams, by name: the order every pass takes
	ups     []store.Update // the last Save's updates, reused (Save keeps none)
	ans     store.Outcome  // the outcome ups points to, reused likewise
	claimAt stamp
	purgeAt stamp
	gen     uint64
	now     stamp // the latest clock reading
	origin  stamp // the first clock reading: the poll grid's origin
	// pollLo and pollHi are the last grid interval nextPoll computed:
	// nextPoll of any instant in [pollLo, pollHi) is pollHi. Zero until
	// the first.
	pollLo, pollHi stamp
	draining       bool
	out            Effects
	// replied is the stream the last Deliver found, if any: replies mostly
	// come for the stream of the one before. While it is not gone, it is
	// the one streams holds under its name (adoptLease replaces a stream
	// only after the old one is gone), so Deliver may take it instead of
	// a map lookup when the names match.
	replied *stream
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
func (w *Worker) clock(reading time.Time) *stamp {
	if w.origin.t.IsZero() {
		return w.firstClock(reading)
	}
	// The reading is set in place and the latest put back should it be
	// earlier, which it almost never is: one copy of a stamp, where
	// setting one aside and copying it in made two.
	latest := w.now
	if w.now.set(reading); w.now.before(&latest) {
		w.now = latest
	}
	return &w.now // unchanged until the call that read it returns
}

// firstClock is clock while the poll grid has no origin: until a reading
// that is not the zero instant.
func (w *Worker) firstClock(reading time.Time) *stamp {
	now := stampOf(reading)
	w.origin = now
	if !now.before(&w.now) {
		w.now = now
	}
	return &w.now
}

// nextPoll is the first instant after now on the grid of Polls from the
// worker's first clock reading. Every poll of the worker (claims, and
// each owned stream's look for new records) falls on that grid, so one
// Advance serves them all, however many streams the worker owns and
// whenever it took them over; each still comes within one Poll.
func (w *Worker) nextPoll(now *stamp) *stamp {
	// Every stream's poll in one Advance falls in the same interval of
	// the grid, and a worker's next poll mostly in the interval after:
	// comparisons and at most one addition, not a division, a
	// subtraction and two additions of instants. The interval after is
	// taken in place; should now lie beyond it too, the formula below
	// sets both ends again. The caller copies the instant once.
	if !w.pollHi.t.IsZero() && !now.before(&w.pollLo) {
		if now.before(&w.pollHi) {
			return &w.pollHi
		}
		w.pollLo = w.pollHi
		if w.pollHi.setAdd(&w.pollLo, w.cfg.Poll); now.before(&w.pollHi) {
			return &w.pollHi
		}
	}
	n := now.t.Sub(w.origin.t)/w.cfg.Poll + 1
	w.pollLo, w.pollHi = w.origin.add((n-1)*w.cfg.Poll), w.origin.add(n*w.cfg.Poll)
	return &w.pollHi
}

// observe stamps e with the worker's clock and hands it to the Observer.
// It takes e by pointer: an Event is large, and the Observer's call copies
// it once already.
func (w *Worker) observe(e *Event) {
	if w.cfg.Observer != nil {
		e.At = w.now.t
		w.cfg.Observer.Observe(*e)
	}
}

// flush hands out the Effects built since the last call. Their lists are
// the caller's for good: the worker never writes to them again (see
// room).
func (w *Worker) flush() Effects {
	if len(w.out.Sends) == 0 && len(w.out.Probes) == 0 {
		return Effects{} // most calls hand out nothing: this much inlines
	}
	return w.cutOut()
}

func (w *Worker) cutOut() Effects {
	return Effects{Sends: cut(&w.out.Sends), Probes: cut(&w.out.Probes)}
}

// slabLen is how many elements room allocates at once for the lists of
// Effects: one allocation serves that many sends (or probes), not one
// per call that hands any out.
const slabLen = 16

// room makes room in *list for n more elements, moving what it holds to
// a new slab of slabLen elements (more if they do not fit) when the
// current one is full. The lists of Effects are built in a slab's free
// part and cut off it (cut): each element is written once, before it is
// handed out, so that a list the caller keeps never changes.
func room[T any](list *[]T, n int) {
	if cap(*list)-len(*list) >= n {
		return
	}
	s := make([]T, len(*list), max(slabLen, 2*(len(*list)+n)))
	copy(s, *list)
	*list = s
}

// cut returns what *list holds, its capacity cut at its length (an append
// by the caller reallocates rather than write into the slab), and leaves
// *list empty at the start of the slab's free part. An empty list is
// handed out as nil.
func cut[T any](list *[]T) []T {
	n := len(*list)
	if n == 0 {
		return nil
	}
	out := (*list)[:n:n]
	*list = (*list)[n:]
	return out
}

// Advance does what time has made due, stream by stream in name order:
// give up a lease the worker's clock says has run out, renew leases, rebuild
// machines, adopt records producers enqueued, tick machines at their
// WakeAt, give idle streams back; then claim due streams while there is
// room. Store calls take ctx.
func (w *Worker) Advance(ctx context.Context, reading time.Time) Effects {
	now := w.clock(reading)
	// The pass walks order itself, by index, with no copy: advancing a
	// stream may remove that stream from order (lost or released), never
	// another, and adds none (claims come after the pass), so a stream
	// gone leaves the next one at its index.
	for i := 0; i < len(w.order); {
		st := w.order[i]
		if now.before(st.dueAt(w.draining)) {
			if !st.still {
				w.quiet(ctx, st, now)
			}
		} else {
			w.advanceStream(ctx, st, now)
		}
		if !st.gone {
			i++
		}
	}
	if !w.draining && len(w.order) < w.cfg.MaxStreams && !now.before(&w.claimAt) {
		w.claim(ctx, now)
	}
	if !w.draining && w.cfg.Retention > 0 && !now.before(&w.purgeAt) {
		w.purge(ctx, now)
	}
	return w.flush()
}

// Deliver hands a Send's or Probe's outcome to the machine that asked for
// it and carries out what follows. A reply for a stream the worker no
// longer owns, or for a machine it has since rebuilt, is dropped.
func (w *Worker) Deliver(ctx context.Context, reading time.Time, r Reply) Effects {
	now := w.clock(reading)
	st := w.replied
	if st == nil || st.gone || st.lease.Stream != r.Stream {
		st = w.streams[r.Stream]
		w.replied = st
	}
	if st == nil || st.m == nil || st.gen != r.Gen {
		w.observe(&Event{Kind: ReplyDropped, Stream: r.Stream, ID: r.ID, Attempt: r.Attempt, Outcome: r.Outcome,
			Detail: "the machine that asked for it is gone"})
		return w.flush()
	}
	var in machine.Input
	if r.Probe != 0 {
		if w.draining {
			return w.flush() // nothing new goes out while draining
		}
		w.observe(&Event{Kind: ProbeReplied, Stream: r.Stream, Token: st.lease.Token, Outcome: r.Outcome, Detail: strconv.FormatUint(r.Probe, 10)})
		in = machine.ProbeResult{At: now.t, N: r.Probe, Healthy: r.Outcome.Result == machine.OutcomeDelivered}
	} else {
		retryAfter := plantedRetryAfter(r.Outcome.RetryAfter)
		if r.Outcome.Result != machine.OutcomeFailed || retryAfter < 0 {
			retryAfter = 0 // a hint goes only with a retryable failure
		}
		w.observe(&Event{Kind: Replied, Stream: r.Stream, Token: st.lease.Token, ID: r.ID, Attempt: r.Attempt, Outcome: r.Outcome})
		in = machine.Result{At: now.t, ID: r.ID, Attempt: r.Attempt, Outcome: r.Outcome.Result, RetryAfter: retryAfter}
		w.stepAnswer(ctx, st, now, in, &answer{id: r.ID, outcome: store.Outcome{
			Attempt: r.Attempt,
			Status:  r.Outcome.Status,
			Detail:  channel.Truncate(strings.ToValidUTF8(r.Outcome.Detail, "?")),
		}})
		return w.flush()
	}
	w.step(ctx, st, now, in)
	return w.flush()
}

// Notify says that a local producer enqueued on stream: the owner adopts
// at its next Advance, and a worker that does not own the stream tries to
// claim at once. Call Advance after it (Next says now).
func (w *Worker) Notify(stream string) {
	if st := w.streams[stream]; st != nil {
		st.adoptAt = zeroStamp
		st.changed()
		return
	}
	w.claimAt = zeroStamp
}

// Next returns the instant at which Advance has work: the earliest
// renewal, lease end, rebuild, adoption poll, machine WakeAt, idle release
// or claim poll. A machine whose WakeAt is zero adds nothing. Work that
// is due already gives the latest clock reading the worker has seen;
// call Advance once to start a new worker. Next is zero only when nothing
// is timed: a draining worker that owns no stream.
func (w *Worker) Next() time.Time {
	// The earliest timer, raised to now if it is due already: each
	// stream's earliest is cached (stream.dueAt), so this reads one
	// instant per stream. The first earliest in this order is the one
	// returned, as its exact time.Time value.
	var next *stamp
	if !w.draining && len(w.order) < w.cfg.MaxStreams {
		next = &w.claimAt
	}
	if !w.draining && w.cfg.Retention > 0 && (next == nil || w.purgeAt.before(next)) {
		next = &w.purgeAt
	}
	for _, st := range w.order {
		if t := st.dueAt(w.draining); next == nil || t.before(next) {
			next = t
		}
	}
	switch {
	case next == nil:
		return time.Time{}
	case next.before(&w.now):
		return w.now.t // due already (a zero instant means at once)
	default:
		return next.t
	}
}

// Drain starts a graceful stop: the worker claims nothing more, adopts
// nothing, starts no attempt and no probe, and keeps renewing its leases
// while the driver waits for the attempts in flight. Replies to them are
// still persisted; a batch that would start an attempt is saved without
// that attempt (the store keeps the state from before it started), so a
// stop costs no event an attempt. Call Stop when they are in.
func (w *Worker) Drain() { w.draining = true }

// Stop releases every lease the worker holds and forgets every stream.
// Replies that come later are dropped. A lease whose release fails is left
// to expire.
func (w *Worker) Stop(ctx context.Context, now time.Time) {
	w.clock(now)
	w.draining = true
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
func (w *Worker) claim(ctx context.Context, now *stamp) {
	w.claimAt = *w.nextPoll(now)
	leases, err := w.cfg.Store.ClaimDue(ctx, w.cfg.Owner, w.cfg.LeaseTTL, w.cfg.MaxStreams-len(w.order))
	if err != nil {
		// A claim whose reply was lost may have granted leases this worker
		// does not know of: they run out in one LeaseTTL, unused.
		w.observe(&Event{Kind: StoreFailed, Op: "ClaimDue", Err: err})
		return
	}
	for _, l := range leases {
		w.adoptLease(ctx, l, now)
	}
}

// purge deletes settled records past the retention, a page at a time;
// a full page means more are due, so it comes back at the next poll.
func (w *Worker) purge(ctx context.Context, now *stamp) {
	w.purgeAt = now.add(w.cfg.RetentionEvery)
	n, err := w.cfg.Store.DeleteSettled(ctx, w.cfg.Retention, w.cfg.PageSize)
	if err != nil {
		w.observe(&Event{Kind: StoreFailed, Op: "DeleteSettled", Err: err})
		return
	}
	if n == w.cfg.PageSize {
		w.purgeAt = now.add(min(w.cfg.Poll, w.cfg.RetentionEvery))
	}
	if n > 0 {
		w.observe(&Event{Kind: Purged, Count: n})
	}
}

// adoptLease takes over a stream the store granted.
func (w *Worker) adoptLease(ctx context.Context, l store.Lease, now *stamp) {
	if old := w.streams[l.Stream]; old != nil {
		// The store granted a stream this worker thought it still held:
		// its clock ran slower than the margin allows. The old lease is
		// stale; only the new one counts.
		w.lose(old, "the store granted the stream again under a new lease", nil)
	}
	st := &stream{lease: l}
	w.observe(&Event{Kind: LeaseGranted, Stream: l.Stream, Token: l.Token})
	cfg, err := w.cfg.Policy(l.Stream)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		w.observe(&Event{Kind: Faulted, Stream: l.Stream, Err: fmt.Errorf("policy for stream %q: %w", l.Stream, err)})
		if err := w.cfg.Store.Release(ctx, l); err != nil {
			w.observe(&Event{Kind: StoreFailed, Stream: l.Stream, Op: "Release", Err: err})
		}
		return
	}
	st.cfg = plantedConfig(cfg)
	st.leased(now, &w.cfg)
	w.streams[l.Stream] = st
	i, _ := slices.BinarySearchFunc(w.order, l.Stream, func(a *stream, name string) int { return strings.Compare(a.lease.Stream, name) })
	w.order = slices.Insert(w.order, i, st)
	w.rebuild(ctx, st, now)
}

// forget removes a stream from the worker.
func (w *Worker) forget(st *stream) {
	st.gone = true
	delete(w.streams, st.lease.Stream)
	w.order = slices.DeleteFunc(w.order, func(o *stream) bool { return o == st })
}

// lose: the worker is no longer the stream's owner. It drops the machine
// and acts on the stream no more; replies for it will be dropped.
// err is the store's refusal, if it gave one.
func (w *Worker) lose(st *stream, why string, err error) {
	w.observe(&Event{Kind: LeaseLost, Stream: st.lease.Stream, Token: st.lease.Token, Detail: why, Err: err})
	w.forget(st)
}

// release gives the stream back.
func (w *Worker) release(ctx context.Context, st *stream, why string) {
	err := w.cfg.Store.Release(ctx, st.lease)
	switch {
	case errors.Is(err, store.ErrStaleLease):
		w.lose(st, "release refused: "+err.Error(), err) // it was lost already
		return
	case err != nil:
		w.observe(&Event{Kind: StoreFailed, Stream: st.lease.Stream, Op: "Release", Err: err})
	default:
		w.observe(&Event{Kind: LeaseReleased, Stream: st.lease.Stream, Token: st.lease.Token, Detail: why})
	}
	w.forget(st)
}

package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/machine"
)

// World is everything a run needs besides its seed: the policy, the
// workload and the faults. Offsets are virtual time since the run's epoch.
// Every fault is injected only before FaultsEnd; after it the run is in
// its liveness phase and must converge (poison and stubborn events are
// properties of events, not faults, and never heal).
type World struct {
	Policy machine.Config

	// Events is how many distinct events the producer offers, one every
	// Interarrival on average (gaps drawn uniformly in [0, 2*Interarrival]).
	Events       int
	Interarrival time.Duration

	// Streams spreads the events over this many streams (event i goes to
	// stream i mod Streams), each delivered and judged on its own; 0 or 1
	// is one stream, MaxWorldStreams at most.
	Streams int

	Producer Producer
	Channel  Channel
	Receiver Receiver
	Restarts Restarts

	// Cluster, when Cluster.Workers > 0, replaces the single sender with
	// workers sharing one store through stream leases.
	Cluster Cluster

	// Store fails the store's calls themselves, one by one; Operator acts
	// on the store as an operator's tool does.
	Store    StoreFaults
	Operator Operator

	// HTTP, when HTTP.On, sends through the real HTTP channel into the
	// real receiver kit, in memory (httpworld.go).
	HTTP HTTP

	// Platform, when it has endpoints, publishes messages through the
	// platform's fan-out to them (platform.go).
	Platform Platform

	// Driver is how each node's driver hands its worker the replies.
	Driver Driver

	// FaultsEnd is when every fault stops: the start of the liveness phase.
	FaultsEnd time.Duration
	// MaxDuration stops the run if it has not settled by then. Zero: a
	// minute after every accepted event's MaxAge plus AttemptTimeout, by
	// which every event must be terminal (the limit moves with the latest
	// acceptance, which backpressure can delay).
	MaxDuration time.Duration
}

// Producer offers the events and resends one (same ID) whose
// acknowledgement does not come within AckTimeout.
type Producer struct {
	AckTimeout time.Duration
	// SendTwice offers every event twice; the second copy follows within
	// TwiceDelay (zero: at the same instant), so the copies may race.
	SendTwice  bool
	TwiceDelay time.Duration
	// SamePayload gives every event the same payload (each copy still
	// differs), so that only IDs tell distinct events apart.
	SamePayload bool
}

// Window is a span of virtual time, [From, To).
type Window struct {
	From, To time.Duration
}

func (w Window) String() string { return fmt.Sprintf("[%v,%v)", w.From, w.To) }

func (w Window) contains(d time.Duration) bool { return d >= w.From && d < w.To }

// Channel is the network between sender and receiver. Outside its fault
// windows it is healthy: a round trip (2*LatencyMax) must be shorter than
// every timeout, which Validate checks.
type Channel struct {
	// One-way latency, drawn uniformly in [LatencyMin, LatencyMax].
	LatencyMin, LatencyMax time.Duration
	// ClientTimeout is when the sender stops waiting for a reply and
	// reports the attempt as timed out (result unknown).
	ClientTimeout time.Duration
	// Outages: sends and probes started inside one are refused (the
	// receiver is unreachable) after one LatencyMin.
	Outages []Window
	// Down: some streams' endpoints are down while the others are up.
	Down StreamsDown
	// Flapping: inside one, each send or probe fails with FlapFailRate
	// before it reaches the receiver.
	Flapping     []Window
	FlapFailRate float64
	// LostAckRate: the receiver handled the request but its reply is
	// lost; the sender times out. The receiver's effect stands.
	LostAckRate float64
	// LateRate: the request is held in the network for LateDelay more,
	// usually past ClientTimeout, so it lands after the sender gave up
	// (and maybe after the event was given up or restarted).
	LateRate  float64
	LateDelay time.Duration
}

// MaxWorldStreams bounds World.Streams: the many-streams scenario's
// 10,000 (a world of them runs in about a second).
const MaxWorldStreams = 10_000

// StreamsDown is Streams of the world's streams, spread evenly over them,
// whose sends and probes are refused inside Window, as Outages refuse
// every stream's: endpoints that are down (or all come back at once)
// while the others deliver.
type StreamsDown struct {
	Streams int
	Window
}

// has reports whether stream i of n is one of the Streams down.
func (d StreamsDown) has(i, n int) bool {
	return (i+1)*d.Streams/n > i*d.Streams/n
}

// Receiver is the downstream system.
type Receiver struct {
	// Poison IDs are answered with a retryable failure, always.
	Poison []string
	// Stubborn IDs fail their first Failures deliveries, then succeed.
	Stubborn []Stubborn
	// RetryAfter, if positive, is the Retry-After hint that comes with
	// every poison or stubborn rejection.
	RetryAfter time.Duration
	// Fence makes the receiver apply only sequences above the highest it
	// applied: in strict order a late attempt can never apply out of
	// order. Meaningful only with strict ordering.
	Fence bool
}

// Driver is the loop around each node's worker, as courier's loop is.
type Driver struct {
	// Gather is how long a busy driver lets replies pile up before it
	// hands them to its worker, in one worker.DeliverAll in the order
	// they came: the first reply into an empty inbox is handed over
	// Gather later, with every reply that came meanwhile, as courier's
	// loop hands over the replies that came in while the worker was busy.
	// Zero is at once, which still gathers the replies of the same
	// instant.
	Gather time.Duration
}

// Stubborn is an event that fails its first Failures deliveries.
type Stubborn struct {
	ID       string
	Failures int
}

// Cluster is a sender made of several workers (worker.Worker, each on its
// own node) sharing one store (memstore). Producers enqueue into the store,
// which acknowledges them and assigns the sequence; the worker that holds
// the stream's lease rebuilds its machine from the store, adopts new
// records as it polls, and writes every batch through the lease's fencing
// check. The single sender (Workers 0) is a cluster of one worker with a
// 2s lease and a 200ms poll. Restarts (World.Restarts) apply only to the
// single sender; a cluster has Crashes, Pauses and Stalls instead.
type Cluster struct {
	// Workers is how many workers there are; 0 means the single sender.
	Workers int
	// MaxStreams is the most streams one worker owns at once; 0 means all
	// of them (the single sender owns all of them).
	MaxStreams int
	// LeaseTTL is the lease a worker asks for; Poll is how often it polls
	// (claims, renews, adopts). Poll must be under LeaseTTL/2, so a live
	// worker renews in time.
	LeaseTTL time.Duration
	Poll     time.Duration
	// RenewTTLMin, if positive, follows each renewal at once with a second
	// one of the same lease asking for a TTL drawn in [RenewTTLMin,
	// LeaseTTL], as a retried renewal might: a shorter renewal must not
	// shorten the lease. It must exceed 2*Poll.
	RenewTTLMin time.Duration
	// Skews offset each worker's clock from the virtual clock (worker i
	// gets Skews[i]; missing entries are 0). Lease expiry is the store's
	// business and ignores them.
	Skews []time.Duration
	// Crashes kill a worker at At: its memory is gone and its lease left
	// to expire; it comes back after For as a new incarnation.
	Crashes []WorkerFault
	// Pauses stall a worker for For, starting right after its first
	// successful write at or after At that has sends to make: it makes
	// them only when it wakes, as a zombie if its lease expired meanwhile.
	Pauses []Pause
	// Stalls stall a worker for For inside its first call at or after At
	// while it holds the stream: it read its clock, then froze, and makes
	// the call (and the store calls in it) on that stale reading when it
	// wakes. Its lease may have run out meanwhile: only the store's
	// fencing stands between it and a stale write.
	Stalls []Pause
	// StoreOutages: the store refuses every write inside these windows.
	StoreOutages []Window
	// ClockSteps set a worker's clock forward (By > 0) or back (By < 0)
	// at At, as an NTP step does: its skew changes by By from then on.
	// A step back does not move the worker's clock back (the worker holds
	// its latest reading): its clock stands still until the virtual clock
	// catches up, so it sees its lease last longer than the store does.
	// A step larger than the worker's ClockMargin (LeaseTTL/10) is outside
	// what the worker promises to absorb; the store's fencing must still
	// hold it.
	ClockSteps []ClockStep
}

// ClockStep moves worker Worker's clock by By at At.
type ClockStep struct {
	Worker int
	At, By time.Duration
}

// StoreFaults fail single store calls while faults last (before
// FaultsEnd), each drawn per call, at most Max of them in all (refusals
// and lost replies together), so that the time they cost is bounded.
type StoreFaults struct {
	// RefuseRate: the call fails with store.ErrUnavailable and changes
	// nothing. It strikes every call a worker makes (ClaimDue, Renew,
	// Pending, Save, Release) and the producer's Enqueue.
	RefuseRate float64
	// LostReplyRate: a write (ClaimDue, Renew, Save, Enqueue) reaches the
	// store and its reply is lost: the caller gets store.ErrUnknown, and
	// the write was made or not, half the time each. Reads never lose
	// their reply (the contract: only a write returns ErrUnknown).
	LostReplyRate float64
	Max           int
	// RenewFailures: every renewal inside one of these windows is refused
	// (store.ErrUnavailable): bursts shorter and longer than a lease.
	RenewFailures []Window
	// Slow makes single worker store calls slow (slow.go).
	Slow SlowCalls
}

// Operator acts on the store at drawn instants before FaultsEnd, as an
// operator's tool does, through the store's own calls: Discards dead
// letters it is shown, Deletes settled records older than Retention,
// Replays dead letters.
type Operator struct {
	// Discards: at Discards instants drawn in [0, FaultsEnd], the operator
	// discards an event drawn from the workload (one that is not a dead
	// letter is refused by the store, as it must be).
	Discards int
	// Deletes: at Deletes instants drawn in [0, FaultsEnd], and once at
	// FaultsEnd, the operator deletes the settled records older than
	// Retention (store.DeleteSettled). Retention must exceed FaultsEnd +
	// Producer.TwiceDelay + Producer.AckTimeout: the longest a producer
	// may still offer an event again (a deleted ID offered again would
	// be a new event, which the contract forbids).
	Deletes   int
	Retention time.Duration
	// Replays: at Replays instants drawn in [0, FaultsEnd], the operator
	// replays an event (store.Replay): half the time a dead letter of a
	// stream drawn, otherwise any event of the workload (one that is not
	// an undiscarded dead letter is refused by the store, as it must be).
	// A replay gives the event a fresh budget and revokes its stream's
	// lease.
	Replays int
	// Pauses: the operator pauses stream Stream (from 0) at From and
	// resumes it at To, as the real operator tool does: the stream's
	// Policy refuses every takeover meanwhile (courier.ErrPaused), and
	// the worker that owns it when the pause comes finishes what it
	// holds. Pauses lie within [0, FaultsEnd]; they may overlap.
	Pauses []StreamPause
}

// StreamPause is an operator's pause of one stream; see Operator.Pauses.
type StreamPause struct {
	Stream   int
	From, To time.Duration
}

func (p StreamPause) String() string {
	return fmt.Sprintf("%d[%v,%v)", p.Stream, p.From, p.To)
}

// WorkerFault strikes worker Worker (from 0, or Owner) at At, for For.
type WorkerFault struct {
	Worker  int
	At, For time.Duration
}

// Owner, as WorkerFault.Worker, strikes whichever worker holds the
// stream's lease when the fault comes (the first worker if none does).
const Owner = -1

// Pause is a stall of a worker; see Cluster.Pauses.
type Pause = WorkerFault

// Restarts drops the sender's memory and rebuilds it from the store.
type Restarts struct {
	// At are fixed instants of restarts.
	At []time.Duration
	// Random more restarts, at instants drawn in [0, FaultsEnd].
	Random int
	// CrashAfterPersistRate: after a batch that acknowledges or sends is
	// persisted, the sender crashes with this probability before it acks
	// or sends anything (at most MaxCrashes times).
	CrashAfterPersistRate float64
	MaxCrashes            int
}

// ErrInvalidWorld is wrapped by every error that World.Validate returns.
var ErrInvalidWorld = errors.New("sim: invalid world")

// Validate reports the first field that is out of range, by name.
func (w World) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	if err := w.Policy.Validate(); err != nil {
		return fmt.Errorf("%w: Policy: %w", ErrInvalidWorld, err)
	}
	rate := func(name string, r float64) error {
		if !(r >= 0 && r <= 1) { // NaN too
			return bad(name, "is %v; must be within 0..1", r)
		}
		return nil
	}
	switch {
	case w.Events < 1 || w.Events > 100_000:
		return bad("Events", "is %d; must be within 1..100000", w.Events)
	case w.Streams < 0 || w.Streams > MaxWorldStreams:
		return bad("Streams", "is %d; must be within 0..%d", w.Streams, MaxWorldStreams)
	case w.Channel.Down.Streams < 0 || w.Channel.Down.Streams > max(w.Streams, 1):
		return bad("Channel.Down.Streams", "is %d; must be within 0..%d (the world's streams)", w.Channel.Down.Streams, max(w.Streams, 1))
	case w.Channel.Down.Streams > 0 && w.HTTP.On:
		return bad("Channel.Down", "is set in an HTTP world; down streams are a fake channel's fault")
	case w.Cluster.MaxStreams < 0:
		return bad("Cluster.MaxStreams", "is %d; must not be negative", w.Cluster.MaxStreams)
	case w.Interarrival < 0:
		return bad("Interarrival", "is %v; must not be negative", w.Interarrival)
	case w.Producer.AckTimeout <= 0:
		return bad("Producer.AckTimeout", "is %v; must be positive", w.Producer.AckTimeout)
	case w.Producer.TwiceDelay < 0:
		return bad("Producer.TwiceDelay", "is %v; must not be negative", w.Producer.TwiceDelay)
	case w.Channel.LatencyMin < 0:
		return bad("Channel.LatencyMin", "is %v; must not be negative", w.Channel.LatencyMin)
	case w.Channel.LatencyMax < w.Channel.LatencyMin:
		return bad("Channel.LatencyMax", "is %v; must be at least LatencyMin (%v)", w.Channel.LatencyMax, w.Channel.LatencyMin)
	case w.Channel.ClientTimeout <= 0:
		return bad("Channel.ClientTimeout", "is %v; must be positive", w.Channel.ClientTimeout)
	case 2*w.Channel.LatencyMax >= min(w.Channel.ClientTimeout, w.Policy.AttemptTimeout, w.Policy.ProbeTimeout):
		// A healthy round trip must beat every timeout, or the channel
		// never heals and the liveness phase has nothing to converge to.
		return bad("Channel.LatencyMax", "is %v; a round trip (%v) must be shorter than ClientTimeout (%v), AttemptTimeout (%v) and ProbeTimeout (%v)",
			w.Channel.LatencyMax, 2*w.Channel.LatencyMax, w.Channel.ClientTimeout, w.Policy.AttemptTimeout, w.Policy.ProbeTimeout)
	case w.Receiver.RetryAfter < 0:
		return bad("Receiver.RetryAfter", "is %v; must not be negative", w.Receiver.RetryAfter)
	case w.Channel.LateDelay < 0:
		return bad("Channel.LateDelay", "is %v; must not be negative", w.Channel.LateDelay)
	case w.FaultsEnd < 0:
		return bad("FaultsEnd", "is %v; must not be negative", w.FaultsEnd)
	case w.MaxDuration < 0:
		return bad("MaxDuration", "is %v; must not be negative", w.MaxDuration)
	case w.Restarts.Random < 0 || w.Restarts.MaxCrashes < 0:
		return bad("Restarts", "counts must not be negative")
	case w.Restarts.Random > 0 && w.FaultsEnd == 0:
		return bad("Restarts.Random", "is %d, but FaultsEnd is 0: random restarts are drawn before FaultsEnd", w.Restarts.Random)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"Channel.FlapFailRate", w.Channel.FlapFailRate},
		{"Channel.LostAckRate", w.Channel.LostAckRate},
		{"Channel.LateRate", w.Channel.LateRate},
		{"Restarts.CrashAfterPersistRate", w.Restarts.CrashAfterPersistRate},
		{"Store.RefuseRate", w.Store.RefuseRate},
		{"Store.LostReplyRate", w.Store.LostReplyRate},
	} {
		if err := rate(r.name, r.v); err != nil {
			return err
		}
	}
	windows := append(append([]Window{}, w.Channel.Outages...), w.Channel.Flapping...)
	if w.Channel.Down.Streams > 0 {
		windows = append(windows, w.Channel.Down.Window)
	}
	for _, win := range windows {
		if win.To < win.From || win.To > w.FaultsEnd {
			return bad("Channel windows", "%v must be a span that ends by FaultsEnd (%v)", win, w.FaultsEnd)
		}
	}
	for _, at := range w.Restarts.At {
		if at < 0 || at > w.FaultsEnd {
			return bad("Restarts.At", "%v must be within [0, FaultsEnd %v]", at, w.FaultsEnd)
		}
	}
	if err := w.Cluster.validate(w.FaultsEnd); err != nil {
		return err
	}
	if err := w.validateStore(); err != nil {
		return err
	}
	if err := w.validateHTTP(); err != nil {
		return err
	}
	if err := w.validatePlatform(); err != nil {
		return err
	}
	if err := w.validateDriver(); err != nil {
		return err
	}
	if w.Cluster.Workers > 0 && (len(w.Restarts.At) > 0 || w.Restarts.Random > 0 || w.Restarts.CrashAfterPersistRate > 0) {
		return bad("Restarts", "apply to the single sender; a cluster has Cluster.Crashes and Cluster.Pauses")
	}
	for _, s := range w.Receiver.Stubborn {
		if s.Failures < 0 {
			return bad("Receiver.Stubborn", "%s has %d failures", s.ID, s.Failures)
		}
	}
	return nil
}

// LeaseTTL is the lease the world's workers ask for: Cluster.LeaseTTL,
// or the single sender's.
func (w World) LeaseTTL() time.Duration { return workers(w).LeaseTTL }

// EventID is the ID of the i-th event (from 0) of a world.
func EventID(i int) string { return fmt.Sprintf("e%03d", i+1) }

// Describe renders the world's policy and faults as one line, so that a
// failing seed's world is understood at a glance.
func (w World) Describe() string {
	p, c := w.Policy, w.Channel
	order := p.Ordering.String()
	if p.Ordering == machine.Independent {
		order += fmt.Sprintf("/window=%d", p.Window)
	}
	s := ""
	if w.Streams > 1 {
		s = fmt.Sprintf("streams=%d ", w.Streams)
	}
	s += fmt.Sprintf("%s events=%d every~%v attempts=%d backoff=%v..%v jitter=%d%% timeout=%v breaker=%d probes=%v..%v max-age=%v",
		order, w.Events, w.Interarrival, p.MaxAttempts, p.BaseBackoff, p.MaxBackoff, p.JitterPercent,
		p.AttemptTimeout, p.BreakerThreshold, p.ProbeBaseInterval, p.ProbeMaxInterval, p.MaxAge)
	s += fmt.Sprintf(" max-retry-after=%v", p.MaxRetryAfter)
	if p.MaxQueued < w.Events {
		s += fmt.Sprintf(" max-queued=%d", p.MaxQueued)
	}
	s += fmt.Sprintf(" | latency=%v..%v client-timeout=%v faults-end=%v", c.LatencyMin, c.LatencyMax, c.ClientTimeout, w.FaultsEnd)
	if len(c.Outages) > 0 {
		s += fmt.Sprintf(" outages=%v", c.Outages)
	}
	if c.Down.Streams > 0 {
		s += fmt.Sprintf(" down=%d@%v", c.Down.Streams, c.Down.Window)
	}
	if len(c.Flapping) > 0 {
		s += fmt.Sprintf(" flapping=%v@%.2f", c.Flapping, c.FlapFailRate)
	}
	if c.LostAckRate > 0 {
		s += fmt.Sprintf(" lost-acks=%.2f", c.LostAckRate)
	}
	if c.LateRate > 0 {
		s += fmt.Sprintf(" late=%.2f+%v", c.LateRate, c.LateDelay)
	}
	if len(w.Receiver.Poison) > 0 {
		s += fmt.Sprintf(" poison=%v", w.Receiver.Poison)
	}
	for _, st := range w.Receiver.Stubborn {
		s += fmt.Sprintf(" stubborn=%s/%d", st.ID, st.Failures)
	}
	if w.Receiver.RetryAfter > 0 {
		s += fmt.Sprintf(" retry-after=%v", w.Receiver.RetryAfter)
	}
	if w.Receiver.Fence {
		s += " fence"
	}
	r := w.Restarts
	if len(r.At)+r.Random > 0 {
		s += fmt.Sprintf(" restarts=%d", len(r.At)+r.Random)
	}
	if r.MaxCrashes > 0 && r.CrashAfterPersistRate > 0 {
		s += fmt.Sprintf(" crashes<=%d@%.2f", r.MaxCrashes, r.CrashAfterPersistRate)
	}
	if w.Producer.SendTwice {
		s += fmt.Sprintf(" twice<=%v", w.Producer.TwiceDelay)
	}
	if w.Producer.SamePayload {
		s += " same-payload"
	}

	if w.Driver.Gather > 0 {
		s += fmt.Sprintf(" gather=%v", w.Driver.Gather)
	}
	s += w.Store.describe() + w.Operator.describe() + w.HTTP.describe() + w.Platform.describe()
	if c := w.Cluster; c.Workers > 0 {
		s += fmt.Sprintf(" | workers=%d lease=%v poll=%v skews=%v crashes=%v pauses=%v store-outages=%v",
			c.Workers, c.LeaseTTL, c.Poll, c.Skews, c.Crashes, c.Pauses, c.StoreOutages)
		if len(c.Stalls) > 0 {
			s += fmt.Sprintf(" stalls=%v", c.Stalls)
		}
		if c.MaxStreams > 0 {
			s += fmt.Sprintf(" max-streams=%d", c.MaxStreams)
		}
		if c.RenewTTLMin > 0 {
			s += fmt.Sprintf(" renew-ttl>=%v", c.RenewTTLMin)
		}
		if len(c.ClockSteps) > 0 {
			s += fmt.Sprintf(" clock-steps=%v", c.ClockSteps)
		}
	}
	return s
}

// validateDriver checks World.Driver. A reply held for the gather window
// must still reach the worker before any timeout would have answered its
// attempt or probe: the client's (ClientTimeout) and the machine's
// (AttemptTimeout, ProbeTimeout). So a healthy round trip plus the window
// must beat every timeout, and the window is at most a tenth of the
// shortest: the window alone never turns a healthy reply into a timeout,
// and the channel, not the driver, decides which attempts time out.
func (w World) validateDriver() error {
	g := w.Driver.Gather
	shortest := min(w.Channel.ClientTimeout, w.Policy.AttemptTimeout, w.Policy.ProbeTimeout)
	switch {
	case g < 0:
		return fmt.Errorf("%w: Driver.Gather is %v; must not be negative", ErrInvalidWorld, g)
	case g > shortest/10 || 2*w.Channel.LatencyMax+g >= shortest:
		return fmt.Errorf("%w: Driver.Gather is %v; must be at most a tenth of the shortest timeout (%v), and a round trip (%v) plus it shorter than that timeout",
			ErrInvalidWorld, g, shortest, 2*w.Channel.LatencyMax)
	}
	return nil
}

// MaxGather is the longest Driver.Gather that w's timeouts and latency
// allow (Validate), or 0 if they allow none.
func (w World) MaxGather() time.Duration {
	shortest := min(w.Channel.ClientTimeout, w.Policy.AttemptTimeout, w.Policy.ProbeTimeout)
	return max(0, min(shortest/10, shortest-2*w.Channel.LatencyMax-1))
}

func (c Cluster) validate(faultsEnd time.Duration) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Cluster.%s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	if c.Workers == 0 {
		if c.MaxStreams > 0 || len(c.Skews)+len(c.Crashes)+len(c.Pauses)+len(c.Stalls)+len(c.StoreOutages)+len(c.ClockSteps) > 0 {
			return bad("Workers", "is 0 (the single sender), but cluster faults are set")
		}
		return nil
	}
	switch {
	case c.Workers < 0 || c.Workers > 16:
		return bad("Workers", "is %d; must be within 0..16", c.Workers)
	case c.LeaseTTL <= 0:
		return bad("LeaseTTL", "is %v; must be positive", c.LeaseTTL)
	case c.Poll <= 0 || 2*c.Poll >= c.LeaseTTL:
		return bad("Poll", "is %v; must be positive and under LeaseTTL/2 (%v)", c.Poll, c.LeaseTTL/2)
	case c.RenewTTLMin != 0 && (c.RenewTTLMin <= 2*c.Poll || c.RenewTTLMin > c.LeaseTTL):
		return bad("RenewTTLMin", "is %v; must be 0 or within (2*Poll %v, LeaseTTL %v]", c.RenewTTLMin, 2*c.Poll, c.LeaseTTL)
	case len(c.Skews) > c.Workers:
		return bad("Skews", "has %d entries for %d workers", len(c.Skews), c.Workers)
	}
	for _, f := range slices.Concat(c.Crashes, c.Pauses, c.Stalls) {
		if f.Worker < Owner || f.Worker >= c.Workers || f.At < 0 || f.At > faultsEnd || f.For <= 0 || f.At+f.For > faultsEnd {
			return bad("Crashes/Pauses/Stalls", "%+v must name a worker and lie within [0, FaultsEnd %v]", f, faultsEnd)
		}
	}
	for _, win := range c.StoreOutages {
		if win.To < win.From || win.To > faultsEnd {
			return bad("StoreOutages", "%v must be a span that ends by FaultsEnd (%v)", win, faultsEnd)
		}
	}
	for _, k := range c.ClockSteps {
		if k.Worker < 0 || k.Worker >= c.Workers || k.At < 0 || k.At > faultsEnd {
			return bad("ClockSteps", "%+v must name a worker and come within [0, FaultsEnd %v]", k, faultsEnd)
		}
	}
	return nil
}

// validateStore checks World.Store and World.Operator.
func (w World) validateStore() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	st, op := w.Store, w.Operator
	horizon := w.FaultsEnd + w.Producer.TwiceDelay + w.Producer.AckTimeout
	switch {
	case st.Max < 0:
		return bad("Store.Max", "is %d; must not be negative", st.Max)
	case op.Discards < 0 || op.Deletes < 0 || op.Replays < 0:
		return bad("Operator", "counts must not be negative")
	case op.Deletes > 0 && op.Retention <= horizon:
		return bad("Operator.Retention", "is %v; must exceed FaultsEnd+TwiceDelay+AckTimeout (%v), the longest a producer may offer an event again", op.Retention, horizon)
	}
	for _, p := range op.Pauses {
		if p.Stream < 0 || p.Stream >= max(w.Streams, 1) || p.From < 0 || p.To < p.From || p.To > w.FaultsEnd {
			return bad("Operator.Pauses", "%v must name a stream and lie within [0, FaultsEnd %v]", p, w.FaultsEnd)
		}
	}
	for _, win := range st.RenewFailures {
		if win.To < win.From || win.To > w.FaultsEnd {
			return bad("Store.RenewFailures", "%v must be a span that ends by FaultsEnd (%v)", win, w.FaultsEnd)
		}
	}
	return st.Slow.validate(w)
}

func (f StoreFaults) describe() string {
	s := ""
	if f.Max > 0 && f.RefuseRate > 0 {
		s += fmt.Sprintf(" store-refusals=%.2f", f.RefuseRate)
	}
	if f.Max > 0 && f.LostReplyRate > 0 {
		s += fmt.Sprintf(" store-lost-replies=%.2f", f.LostReplyRate)
	}
	if f.Max > 0 && f.RefuseRate+f.LostReplyRate > 0 {
		s += fmt.Sprintf(" store-faults<=%d", f.Max)
	}
	if len(f.RenewFailures) > 0 {
		s += fmt.Sprintf(" renew-failures=%v", f.RenewFailures)
	}
	return s + f.Slow.describe()
}

func (o Operator) describe() string {
	s := ""
	if o.Discards > 0 {
		s += fmt.Sprintf(" discards=%d", o.Discards)
	}
	if o.Deletes > 0 {
		s += fmt.Sprintf(" deletes=%d retention=%v", o.Deletes, o.Retention)
	}
	if o.Replays > 0 {
		s += fmt.Sprintf(" replays=%d", o.Replays)
	}
	if len(o.Pauses) > 0 {
		s += fmt.Sprintf(" stream-pauses=%v", o.Pauses)
	}
	return s
}

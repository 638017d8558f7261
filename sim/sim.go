package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/worker"
)

// Epoch is the virtual instant every run starts at. Traces print times as
// offsets from it.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Options choose what a run keeps besides its summary.
type Options struct {
	// Trace keeps every trace line in Result.Trace. The hash is computed
	// either way, from a binary encoding of the same lines (trace.go):
	// text is formatted only when it is kept.
	Trace bool
}

// Result is what one run produced.
type Result struct {
	Seed  uint64
	World World
	// Trace is every input, effect and fault as a stable line (only with
	// Options.Trace); Hash is the 64-bit xxHash of their binary encoding,
	// in 16 hex digits: same seed and world, same hash, on any platform.
	Trace []string
	Hash  string
	// Runs are the observation logs the checker judged, one per stream
	// (World.Streams), in stream order; Run is the first. Violations are
	// every stream's, in stream order.
	Run        invariants.Run
	Runs       []invariants.Run
	Violations []invariants.Violation
	Stats      Stats
}

// Stats summarise a run. Every figure is counted from what happened.
type Stats struct {
	Offers          int // offers the producer made, resends included
	Accepted        int // distinct events acknowledged to the producer
	Applied         int // distinct events the receiver applied
	Duplicates      int // deliveries the receiver discarded as duplicates
	Fenced          int // deliveries the receiver refused as out of order
	Dead            int // events dead in the store at the end
	Lost            int // acknowledged events neither applied nor dead
	AppliedTwice    int // events the receiver applied more than once
	Sends           int // attempts sent, all events, all incarnations
	MaxSends        int // the most attempts of any one event
	Probes          int
	CircuitOpenings int
	Restarts        int
	Crashes         int           // restarts that cut a batch after its persist
	DuplicateAcks   int           // acknowledgements of an offer whose ID was already accepted
	LeaseGrants     int           // leases the shared store granted (cluster)
	FencedWrites    int           // writes (saves, renewals, reads) the store refused from a stale lease (cluster)
	LeasesLost      int           // times a worker gave a stream up as lost: refused by the store, or run out by its own clock
	ZombieSends     int           // sends by a worker whose lease had been superseded (cluster)
	Drain           time.Duration // from the first offer until every event settled
	End             time.Duration // virtual time when the run stopped
	Coverage        Coverage      // which fault met which event state
}

// Run simulates world under seed. It returns an error only for an invalid
// world; violations of the guarantees are in Result.Violations.
func Run(world World, seed uint64, opt Options) (Result, error) {
	if err := world.Validate(); err != nil {
		return Result{}, err
	}
	s := newSim(world, seed, opt)
	if err := s.simulate(); err != nil {
		return Result{}, err
	}
	return s.result(), nil
}

type sim struct {
	w    World
	seed uint64
	opt  Options
	now  time.Time
	// elapsed is now.Sub(Epoch), kept with now: the trace stamps every
	// line with it and the fault windows are judged by it, and Time.Sub
	// is not free.
	elapsed time.Duration
	q       queue

	cfg   Cluster         // the workers: World.Cluster, or the single sender's
	store *memstore.Store // the store the workers share
	recv  *receiver

	nodes  []*node
	pauses []Pause // pauses not yet begun, by At
	stalls []Pause // stalls not yet begun, by At
	// newestToken is the newest lease token the store granted.
	newestToken uint64
	// granted is the newest token granted in each stream so far, and
	// sends counts each event's sends, by index: what result reports is
	// counted as the logs are made (perform, send, nodeStore.ClaimDue).
	granted []uint64
	sends   []int

	// Streams, one per part of the world.
	rProducer, rChannel, rRestart, rLease *rand.Rand

	ids   []string // the workload's event IDs, EventID(i) at i
	acked []bool   // by event index: the store acknowledged it
	// lastFlight is each event's latest flight, by event index (track).
	lastFlight []*flight
	firstOffer time.Time
	lastSettle time.Time
	// writes counts the store's writes; settledAt is the count when
	// settled last looked (-1: never), and wasSettled what it saw.
	writes, settledAt int
	wasSettled        bool
	unsettled         int // the stream settled last found unsettled
	// states are the states of the store's records when the count was
	// statesAt (-1: never), for coverAll.
	statesAt int
	states   [machine.Dead + 1]bool
	// end is when the run stops if it has not settled: with no
	// MaxDuration, one MaxAge, AttemptTimeout and a minute after the
	// latest acceptance (backpressure can delay acceptances), by which
	// every event must be terminal. It is an offset from Epoch, as the
	// queue's keys are, so that the loop compares integers.
	end time.Duration

	// streams are the streams' names; runs their observation logs, by
	// index.
	streams []string
	runs    []invariants.Run
	trace   []string       // the text of every line, with Options.Trace
	hash    *xxhash.Digest // of the encoded lines (trace.go)
	stats   Stats
}

// attemptKey names one attempt of one incarnation of a node: the sender
// takes the first outcome for it, of whichever flight with the key it is
// (track). The node is named by pointer (one per node for the run).
type attemptKey struct {
	node    *node
	inc     int
	id      string
	attempt int
}

// newSim returns the simulator of a run, with its store and its nodes.
func newSim(w World, seed uint64, opt Options) *sim {
	s := &sim{
		w: w, seed: seed, opt: opt, now: Epoch,
		cfg:       workers(w),
		rProducer: stream(seed, "producer"),
		rChannel:  stream(seed, "channel"),
		rRestart:  stream(seed, "restart"),
		rLease:    stream(seed, "lease"),
		settledAt: -1,
		statesAt:  -1,
		hash:      xxhash.New(),
	}
	s.store = memstore.New(func() time.Time { return s.now })
	s.store.SetUnavailable(func() bool { return s.inWindows(s.cfg.StoreOutages) })
	s.initStreams()
	s.initNodes()
	return s
}

// settleWithin is how long after its acceptance an event must be terminal,
// plus a minute of margin for the run to show it.
func (s *sim) settleWithin() time.Duration {
	return s.w.Policy.MaxAge + s.w.Policy.AttemptTimeout + time.Minute
}

func (s *sim) faulty() bool { return s.elapsed < s.w.FaultsEnd }

// initStreams names the streams, spreads the workload over them (event i
// goes to stream i mod Streams) and starts each stream's log.
func (s *sim) initStreams() {
	w := s.w
	n := max(w.Streams, 1)
	s.streams = make([]string, n)
	s.runs = make([]invariants.Run, n)
	s.ids = make([]string, w.Events)
	for i := range s.ids {
		s.ids[i] = EventID(i)
	}
	s.acked = make([]bool, w.Events)
	s.lastFlight = make([]*flight, w.Events)
	s.sends = make([]int, w.Events)
	s.granted = make([]uint64, n)
	s.recv = newReceiver(w.Receiver, s.ids, n)
	poison := len(w.Receiver.Poison) + len(w.Receiver.Stubborn)
	for i := range s.runs {
		s.streams[i] = StreamName(i, n)
		r := &s.runs[i]
		r.Policy = w.Policy
		// About ten entries per event (persist, ack, persist the attempt,
		// send, apply, reply, persist the outcome; faults, parking and
		// lease renewals add some): most logs then never grow.
		r.Entries = make([]invariants.Entry, 0, 10*(w.Events/n+1)+16)
		r.ReceiverFences = w.Receiver.Fence
		if w.FaultsEnd > 0 {
			r.HealedAt = Epoch.Add(w.FaultsEnd)
		}
		// Every stream is held to the bound of the whole workload: with
		// MaxStreams below Streams, a stream may wait while the workers'
		// slots serve the others.
		r.LivenessBound = invariants.LivenessBound(w.Policy, w.Events, poison, w.Channel.LatencyMax)
	}
}

// StreamName is the name of stream i of n: "s" when there is one.
func StreamName(i, n int) string {
	if n <= 1 {
		return "s"
	}
	return fmt.Sprintf("s%02d", i+1)
}

// stream returns the index of the stream named name.
func (s *sim) streamIndex(name string) int {
	if len(s.streams) == 1 {
		return 0
	}
	// "s01" to "s99", as StreamName names all but the largest worlds'
	// streams: every observation of a worker asks.
	if len(name) == 3 && name[0] == 's' {
		if hi, lo := name[1]-'0', name[2]-'0'; hi <= 9 && lo <= 9 {
			return int(hi)*10 + int(lo) - 1
		}
	}
	i, _ := atoi(strings.TrimPrefix(name, "s"))
	return i - 1
}

// atoi is strconv.Atoi, with a fast path for what the simulator parses on
// every observation: the few digits of a stream's or an event's number.
func atoi(s string) (int, error) {
	if len(s) == 0 || len(s) > 9 { // nine digits cannot overflow an int
		return strconv.Atoi(s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return strconv.Atoi(s) // a sign, or not a number: its error
		}
		n = n*10 + int(d)
	}
	return n, nil
}

// observe logs e in the log of its event's stream (see observeIn).
func (s *sim) observe(e invariants.Entry) { s.observeIn(s.streamOf(e.ID), e) }

// streamOf is the index of event id's stream: EventID(i) goes to stream
// i mod Streams.
func (s *sim) streamOf(id string) int {
	if len(s.streams) == 1 {
		return 0
	}
	i, err := atoi(strings.TrimPrefix(id, "e"))
	if err != nil || i < 1 {
		panic(fmt.Sprintf("sim: %q is not an event of the workload", id))
	}
	return (i - 1) % len(s.streams)
}

// observeIn logs e in the log of stream i, at the virtual instant and
// numbered.
func (s *sim) observeIn(i int, e invariants.Entry) {
	r := &s.runs[i]
	e.At, e.Step = s.now, len(r.Entries)
	r.Entries = append(r.Entries, e)
}

func (s *sim) simulate() error {
	w := s.w
	s.note(nil, opWorld, unum(s.seed), num(w.Events), str(w.Policy.Ordering.String()), dur(w.FaultsEnd))
	s.startNodes()

	// The workload: offers at drawn instants.
	at := time.Duration(0)
	var lastOffer time.Duration
	for i := range w.Events {
		at += between(s.rProducer, 0, 2*w.Interarrival)
		lastOffer = at
		s.q.schedule(at, func() { s.offer(i, 1) })
		if w.Producer.SendTwice {
			again := at + between(s.rProducer, 0, w.Producer.TwiceDelay)
			s.q.schedule(again, func() { s.offer(i, 2) })
		}
	}
	// Restarts: fixed, then drawn.
	restarts := slices.Clone(w.Restarts.At)
	for range w.Restarts.Random {
		restarts = append(restarts, between(s.rRestart, 0, w.FaultsEnd))
	}
	for _, at := range restarts {
		s.q.schedule(at, func() {
			s.coverAll(FaultRestart)
			s.crash(s.nodes[0], 0, "scheduled restart")
		})
	}

	if w.MaxDuration > 0 {
		s.end = w.MaxDuration
	} else {
		s.end = max(lastOffer, w.FaultsEnd) + s.settleWithin()
	}
	for s.q.Len() > 0 {
		if s.q.foreground == 0 && s.settled() {
			break // only chores left, and nothing for them to do
		}
		h := s.q.pop()
		if h.at > s.end {
			s.now, s.elapsed = Epoch.Add(s.end), s.end
			s.note(nil, opStop, dur(s.end), num(s.q.Len()+1))
			break
		}
		if h.at < s.elapsed {
			panic(fmt.Sprintf("sim: seed %d: a happening was scheduled at %v, before now %v", s.seed, h.at, s.elapsed))
		}
		s.now, s.elapsed = Epoch.Add(h.at), h.at
		s.happen(h)
	}
	s.readFinals()
	s.note(nil, opEnd)
	return nil
}

// settled reports whether every record in the store is terminal. The
// answer is kept until the store is written again: with only chores left,
// the loop asks at every one of them. Streams are asked one at a time,
// from the one that was unsettled last time (most likely still so), and
// the first unsettled one ends the search: the store copies every record
// it is asked for.
func (s *sim) settled() bool {
	if s.settledAt == s.writes {
		return s.wasSettled
	}
	s.settledAt, s.wasSettled = s.writes, true
	for k := range s.streams {
		i := (s.unsettled + k) % len(s.streams)
		if !allTerminal(s.store.StateCounts(s.streams[i])) {
			s.unsettled, s.wasSettled = i, false
			break
		}
	}
	return s.wasSettled
}

// allTerminal reports whether every record counted is delivered or dead.
func allTerminal(counts [machine.Dead + 1]int) bool {
	for st, n := range counts {
		if n > 0 && !machine.State(st).Terminal() {
			return false
		}
	}
	return true
}

// offer is the producer offering event i of the workload; copy counts
// its offers.
func (s *sim) offer(i, copy int) {
	id := s.ids[i]
	if s.firstOffer.IsZero() {
		s.firstOffer = s.now
	}
	s.stats.Offers++
	s.note(nil, opOffer, str(id), num(copy))
	s.observe(invariants.Entry{Kind: invariants.Offered, ID: id})
	s.coverEvent(FaultDuplicateOffer, i)
	// Each copy differs, so a store or machine that let a second offer
	// replace the first would show in the checker's identity check. The
	// same bytes as fmt's {"event":%q,"copy":%d} (or {"copy":%d} when the
	// producer sends identical payloads for distinct events), without fmt.
	payload := make([]byte, 0, len(id)+24)
	if s.w.Producer.SamePayload {
		payload = append(payload, '{')
	} else {
		payload = append(appendQuote(append(payload, `{"event":`...), id), ',')
	}
	payload = append(strconv.AppendInt(append(payload, `"copy":`...), int64(copy), 10), '}')
	s.enqueue(i, payload)
	// The producer keeps the event until it is acknowledged.
	s.q.schedule(s.elapsed+s.w.Producer.AckTimeout, func() { s.ackTimeout(i, copy) })
}

// appendQuote is strconv.AppendQuote(b, id), the same bytes: an ID of
// printable ASCII but for '"' and '\\' (the workload's are) is quoted as
// itself, without Quote's work per rune, which was most of an offer's
// payload (TestAppendQuoteIsStrconv).
func appendQuote(b []byte, id string) []byte {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, id)
		}
	}
	return append(append(append(b, '"'), id...), '"')
}

// ackTimeout is the producer's wait for offer copy of event i ending: it
// offers the event again if it is still not acknowledged.
func (s *sim) ackTimeout(i, copy int) {
	if !s.acked[i] {
		s.note(nil, opReoffer, str(s.ids[i]))
		s.offer(i, copy+1)
	}
}

func (s *sim) latency() time.Duration {
	return between(s.rChannel, s.w.Channel.LatencyMin, s.w.Channel.LatencyMax)
}

func (s *sim) inWindows(ws []Window) bool {
	d := s.elapsed
	for _, w := range ws {
		if w.contains(d) {
			return true
		}
	}
	return false
}

// send puts one attempt on the channel. Whatever happens, the sender gets
// exactly one outcome for it: the reply, or a timeout at ClientTimeout.
func (s *sim) send(n *node, x worker.Send) {
	c := &s.w.Channel
	// Set field by field, on the zero flight new returns: a composite
	// literal is built whole and then copied.
	f := new(flight)
	f.n, f.x, f.key, f.event = n, x, attemptKey{n, n.inc, x.ID, x.Attempt.Attempt}, s.eventIndex(x.ID)
	s.sends[f.event]++ // the event's Sent entries (result)
	s.track(f)
	attempt := x.Attempt.Attempt
	s.later(n, s.elapsed+c.ClientTimeout, func() { s.answer(f, answerTimeout) })
	switch {
	case s.inWindows(c.Outages):
		s.note(nil, opOutage, str(x.ID), num(attempt))
		s.coverSend(x, FaultOutage)
		f.outcome, f.why = machine.OutcomeFailed, "connection refused"
		s.later(n, s.elapsed+c.LatencyMin, func() { s.answer(f, answerChannel) })
		return
	case s.inWindows(c.Flapping) && chance(s.rChannel, c.FlapFailRate):
		s.note(nil, opFlap, str(x.ID), num(attempt))
		s.coverSend(x, FaultFlap)
		f.outcome, f.why = machine.OutcomeFailed, "502 from the flapping link"
		s.later(n, s.elapsed+s.latency(), func() { s.answer(f, answerChannel) })
		return
	}
	arrive := s.latency()
	f.late = s.faulty() && chance(s.rChannel, c.LateRate)
	if f.late {
		arrive += c.LateDelay
		s.note(nil, opLate, str(x.ID), num(attempt), dur(c.LateDelay))
	}
	f.lose = s.faulty() && chance(s.rChannel, c.LostAckRate)
	f.back = s.latency()
	s.q.schedule(s.elapsed+arrive, func() { s.arrive(f) })
}

// flight is one attempt on the fake channel, from its send until the
// sender has an outcome for it. Its happenings (the arrival at the
// receiver, the client timeout, the channel's answer) point to it rather
// than each holding a closure.
type flight struct {
	n     *node
	x     worker.Send
	key   attemptKey
	event int // x.ID's index in the workload
	// first is the run's first flight with the same key (f itself if it
	// is): its answered says whether the sender has an outcome for the
	// attempt. prev is the event's flight sent before f (track).
	first, prev *flight
	answered    bool
	late, lose  bool
	back        time.Duration // the reply's latency
	// The channel's answer, besides the client timeout: a refusal, a
	// failure, or the receiver's verdict.
	outcome    machine.Outcome
	retryAfter time.Duration
	why        string
}

// Which of a flight's answers a happening is.
const (
	answerTimeout uint8 = iota + 1 // the client gave up: ClientTimeout
	answerChannel                  // the channel's answer (flight.outcome)
)

// track links f to the run's first flight with its key, found among
// the earlier flights of its event (an attempt is of one event), so that
// answer asks a flag, not a map by key: one was some 300 instructions an
// answer, as a key holds a string to hash. An event has few flights.
func (s *sim) track(f *flight) {
	f.first = f
	for g := s.lastFlight[f.event]; g != nil; g = g.prev {
		if g.key == f.key {
			f.first = g.first
			break
		}
	}
	f.prev, s.lastFlight[f.event] = s.lastFlight[f.event], f
}

// claim reports whether the sender has no outcome yet for f's attempt,
// and makes it have one.
func (f *flight) claim() bool {
	first := f.first
	if first.answered {
		return false
	}
	first.answered = true
	return true
}

// arrive is f reaching the receiver.
func (s *sim) arrive(f *flight) {
	x, attempt := &f.x, f.x.Attempt.Attempt // x not copied: a Send is large
	i := f.event
	if f.late {
		s.coverEvent(FaultLate, i)
	}
	v := s.recv.deliver(i%len(s.streams), i, x.Seq)
	switch v {
	case rejectedPoison:
		s.coverEvent(FaultPoison, i)
	case rejectedStubborn:
		s.coverEvent(FaultStubborn, i)
	}
	s.note(nil, opReceiver, str(v.String()), str(x.ID), unum(x.Seq), num(attempt))
	switch v {
	case applied:
		s.observe(invariants.Entry{Kind: invariants.Applied, ID: x.ID, Seq: x.Seq, Attempt: attempt})
	case duplicate, fenced:
		s.observe(invariants.Entry{Kind: invariants.Discarded, ID: x.ID, Seq: x.Seq, Attempt: attempt, Detail: v.String()})
	}
	if f.lose {
		s.note(nil, opLostAck, str(x.ID), num(attempt))
		s.coverEvent(FaultLostAck, i)
		return
	}
	f.outcome = v.outcome()
	if v == rejectedPoison || v == rejectedStubborn {
		f.retryAfter = s.w.Receiver.RetryAfter
	}
	s.later(f.n, s.elapsed+f.back, func() { s.answer(f, answerChannel) })
}

// answer hands f's sender one of its outcomes, unless it has one already.
func (s *sim) answer(f *flight, which uint8) {
	n, x, attempt := f.n, &f.x, f.x.Attempt.Attempt // x not copied: a Send is large
	outcome, retryAfter, why := f.outcome, f.retryAfter, f.why
	if which == answerTimeout {
		outcome, retryAfter, why = machine.OutcomeTimedOut, 0, "client timeout"
	}
	if !f.claim() {
		s.note(n, opReplyGaveUp, str(x.ID), num(attempt), str(outcome.String()))
		return
	}
	if why != "" {
		s.note(n, opChannel, str(x.ID), num(attempt), str(why))
	}
	s.note(n, opIn, input(machine.Result{At: s.clock(n), ID: x.ID, Attempt: attempt, Outcome: outcome, RetryAfter: retryAfter}))
	s.deliver(n, reply(*x, outcome, retryAfter))
}

// coverSend counts a fault that struck a send. A fenced-off owner's late
// send (a zombie's) may meet its event in any state and is counted as
// the pause that made it, not here.
func (s *sim) coverSend(x worker.Send, f Fault) {
	if x.Token >= s.newestToken {
		s.cover(f, x.ID)
	}
}

// probe checks the channel: down in an outage, maybe down while flapping.
func (s *sim) probe(n *node, p worker.Probe) {
	c := s.w.Channel
	healthy := true
	delay := 2 * s.latency()
	switch {
	case s.inWindows(c.Outages):
		healthy, delay = plant.On(plant.ProbeHealthyInOutage), c.LatencyMin
	case s.inWindows(c.Flapping) && chance(s.rChannel, c.FlapFailRate):
		healthy = false
	}
	if healthy && s.inWindows(c.Outages) {
		// The fake's own fault model: nothing reaches the receiver in an
		// outage, so no probe can find it healthy.
		panic(fmt.Sprintf("sim: seed %d: the fake channel broke its fault model [probe-in-outage]: probe %d answered healthy during an outage", s.seed, p.N))
	}
	pr := &probing{n: n, p: p, healthy: healthy}
	s.later(n, s.elapsed+delay, func() { s.probeAnswer(pr) })
}

// probing is one probe on the fake channel, until its answer comes.
type probing struct {
	n       *node
	p       worker.Probe
	healthy bool
}

// probeAnswer hands pr's answer to its node's worker.
func (s *sim) probeAnswer(pr *probing) {
	n, p := pr.n, pr.p
	o := machine.OutcomeDelivered
	if !pr.healthy {
		o = machine.OutcomeFailed
	}
	s.note(n, opIn, input(machine.ProbeResult{At: s.clock(n), N: p.N, Healthy: pr.healthy}))
	s.deliver(n, p.Reply(channel.Outcome{Result: o}))
}

func (s *sim) result() Result {
	st := s.stats
	// By the event's index in the workload: every record and every send
	// is of one of its events.
	sends := s.sends                             // counted as they were logged (send), as ZombieSends and LeaseGrants
	final := make([]*machine.Record, len(s.ids)) // in the store at the end
	for _, run := range s.runs {
		for j := range run.Final {
			r := &run.Final[j]
			i := s.eventIndex(r.ID)
			final[i] = r
			st.MaxSends = max(st.MaxSends, sends[i])
			if r.State == machine.Dead {
				st.Dead++
			}
		}
	}
	// Counted per event of the workload, in a fixed order.
	for i, acked := range s.acked {
		if !acked {
			continue
		}
		st.Accepted++
		r, applied := final[i], s.recv.events[i].applied
		if r == nil || (applied == 0 && r.State != machine.Dead) {
			st.Lost++
		}
		if applied > 1 {
			st.AppliedTwice++
		}
	}
	st.Applied = s.recv.distinct
	st.Duplicates = s.recv.dups
	st.Fenced = s.recv.fenced
	if !s.firstOffer.IsZero() {
		st.Drain = s.lastSettle.Sub(s.firstOffer)
	}
	st.End = s.now.Sub(Epoch)
	res := Result{
		Seed:       s.seed,
		World:      s.w,
		Trace:      s.trace,
		Hash:       s.traceHash(),
		Run:        s.runs[0],
		Runs:       s.runs,
		Violations: s.check(),
		Stats:      st,
	}
	return res
}

// readFinals reads every stream's records from the store, once the run
// ended: each run's Final (nil if it has none).
func (s *sim) readFinals() {
	for i := range s.runs {
		s.runs[i].Finished = true
		if recs := s.store.Records(s.streams[i]); len(recs) > 0 {
			s.runs[i].Final = recs
		}
	}
}

// eventIndex is the index in the workload of event id: EventID(i) is
// event i.
func (s *sim) eventIndex(id string) int {
	// "e001" to "e999", as EventID names the events of all but the largest
	// workloads: every send and every send the result counts asks.
	if len(id) == 4 && id[0] == 'e' {
		if a, b, c := id[1]-'0', id[2]-'0', id[3]-'0'; a <= 9 && b <= 9 && c <= 9 {
			if i := int(a)*100 + int(b)*10 + int(c); i >= 1 && i <= len(s.ids) {
				return i - 1
			}
		}
	}
	i, err := atoi(strings.TrimPrefix(id, "e"))
	if err != nil || i < 1 || i > len(s.ids) {
		panic(fmt.Sprintf("sim: %q is not an event of the workload", id))
	}
	return i - 1
}

// check judges every stream's log, in stream order.
func (s *sim) check() []invariants.Violation {
	var out []invariants.Violation
	for _, run := range s.runs {
		out = append(out, invariants.Check(run)...)
	}
	return out
}

// Add folds o into s, for totals over many runs: counts add up; MaxSends,
// Drain and End keep the largest.
func (s *Stats) Add(o Stats) {
	s.Offers += o.Offers
	s.Accepted += o.Accepted
	s.Applied += o.Applied
	s.Duplicates += o.Duplicates
	s.Fenced += o.Fenced
	s.Dead += o.Dead
	s.Lost += o.Lost
	s.AppliedTwice += o.AppliedTwice
	s.Sends += o.Sends
	s.MaxSends = max(s.MaxSends, o.MaxSends)
	s.Probes += o.Probes
	s.CircuitOpenings += o.CircuitOpenings
	s.Restarts += o.Restarts
	s.Crashes += o.Crashes
	s.DuplicateAcks += o.DuplicateAcks
	s.LeaseGrants += o.LeaseGrants
	s.FencedWrites += o.FencedWrites
	s.LeasesLost += o.LeasesLost
	s.ZombieSends += o.ZombieSends
	s.Drain = max(s.Drain, o.Drain)
	s.End = max(s.End, o.End)
	s.Coverage.Add(o.Coverage)
}

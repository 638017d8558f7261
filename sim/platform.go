package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/platform/platmem"
	"github.com/courierlab/courier/store"
)

// A platform world (World.Platform) publishes messages through the
// production platform.Service, on platmem, to one application with 2 to
// 4 endpoints; each endpoint is a stream of its own, with its own
// event-type filter, outages, flapping and rate limit. The endpoints'
// streams are delivered by the production worker, whose Policy is
// platform.StreamPolicy, as in courier serve. Event i of the world is the
// delivery of message i/E to endpoint i%E (E endpoints): so event i is on
// stream i mod Streams, as in every world, and a poison or stubborn
// EventID(i) is that delivery. A publish may crash in the
// middle of its fan-out; the producer publishes again with the same
// idempotency key, and Service.Redrive finishes what the crash left. An
// operator disables and enables endpoints through the platform store, and
// replays an endpoint's dead letters in bulk through
// platform.ReplayDeadPage, as courier serve's job does. With
// Platform.DisableAfter, each attempt feeds the production endpoint
// health, which disables an endpoint on a 410 or a failing streak; the
// operator enables it again (sim/health.go).

// Platform is a platform world's application; off when it has no
// Endpoints.
type Platform struct {
	Endpoints []PlatformEndpoint
	// EventTypes are the types messages are published with: message m
	// has EventTypes[m mod len].
	EventTypes []string
	// CrashRate: a publish crashes before FaultsEnd with this
	// probability, at a drawn enqueue of its fan-out, before or after that
	// enqueue (before its mark); at most MaxCrashes of them. Redrive is
	// when, after a crash, Service.Redrive runs.
	CrashRate  float64
	MaxCrashes int
	Redrive    time.Duration
	// Replays are the operator's bulk replays of an endpoint's dead
	// letters.
	Replays []BulkReplay
	// Missing are the operator's replays of missed messages.
	Missing []MissingReplay
	// DisableAfter, above 0, feeds each attempt's outcome, as its sender
	// hears it, to the production endpoint health (platform.Recorder.Write
	// with this DisableAfter): a 410 disables its endpoint at once, and
	// failing with no success for DisableAfter disables it. The operator
	// enables it again Reenable later (the API's PATCH enabled=true,
	// which clears the streak). 0: health is not simulated.
	DisableAfter, Reenable time.Duration
}

// PlatformEndpoint is one endpoint of a platform world.
type PlatformEndpoint struct {
	// EventTypes is the endpoint's filter; empty: every type.
	EventTypes []string
	// RateLimit is its attempt starts per second (0: none).
	RateLimit int
	// Outages and Flapping are its own channel faults (as Channel's, with
	// Channel.FlapFailRate).
	Outages, Flapping []Window
	// Disables are when the operator has it disabled, [From, To), in
	// order and apart.
	Disables []Window
	// MaxAttempts, BaseBackoff and MaxBackoff are its retry policy, as
	// the API sets it (platform.Endpoint; 0: the world's Policy's):
	// platform.EndpointPolicy gives its stream the policy the checker
	// judges it by.
	MaxAttempts             int
	BaseBackoff, MaxBackoff time.Duration
	// RejectStatuses is its status policy (platform.StatusPolicy): in an
	// HTTP world, the statuses its channel rejects at once; of those the
	// world's receiver answers, only 422 and HTTP.RejectStatus.
	RejectStatuses []int
	// Created is when the operator creates it (0: before the first
	// publish): the messages published before it are missed, and reach
	// it only from a replay-missing (Platform.Missing).
	Created time.Duration
	// Gone: in an HTTP world with health (Platform.DisableAfter), its
	// receiver answers 410 Gone to a poison or stubborn event instead of
	// HTTP.RejectStatus; its status policy is the default (410 rejects).
	Gone bool
}

// MissingReplay is an operator's replay of the messages endpoint
// Endpoint missed (platform.Service.ReplayMissing) since Since, at At.
type MissingReplay struct {
	Endpoint  int
	At, Since time.Duration
}

func (m MissingReplay) String() string {
	return fmt.Sprintf("ep%d@%v/since=%v", m.Endpoint, m.At, m.Since)
}

// BulkReplay is an operator's bulk replay of endpoint Endpoint's dead
// letters at At: those that died since Since, or all of them.
type BulkReplay struct {
	Endpoint  int
	At, Since time.Duration
	All       bool
	// CrashAfter, if above 0, runs the replay as courier serve runs a
	// job: kept in the platform store, Page dead letters a page, its
	// cursor saved after each. Its serve crashes after page CrashAfter
	// (or its last, if it has fewer), before it saves; another serve claims the job once its lease has
	// ended, Resume later, and goes on from the saved cursor
	// (platform.ResumeDeadPage).
	Page, CrashAfter int
	Resume           time.Duration
}

func (b BulkReplay) String() string {
	s := fmt.Sprintf("ep%d@%v/since=%v", b.Endpoint, b.At, b.Since)
	if b.All {
		s = fmt.Sprintf("ep%d@%v/all", b.Endpoint, b.At)
	}
	if b.CrashAfter > 0 {
		s += fmt.Sprintf("/job:page=%d,crash-after=%d,resume+%v", b.Page, b.CrashAfter, b.Resume)
	}
	return s
}

// On reports whether the world is a platform world.
func (p Platform) On() bool { return len(p.Endpoints) > 0 }

// validatePlatform checks World.Platform.
func (w World) validatePlatform() error {
	p := w.Platform
	if !p.On() {
		return nil
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Platform.%s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	e := len(p.Endpoints)
	switch {
	case e < 1 || e > 8:
		return bad("Endpoints", "has %d; must have 1..8", e)
	case w.Streams != e || w.Events%e != 0:
		return bad("Endpoints", "has %d, so Streams (%d) must be %d and Events (%d) a multiple of it: event i is message i/%d to endpoint i%%%d", e, w.Streams, e, w.Events, e, e)
	case len(p.EventTypes) == 0:
		return bad("EventTypes", "is empty")
	case len(w.Operator.Pauses) > 0:
		return bad("Endpoints", "are set: a platform world has no stream pauses (its endpoints are disabled instead)")
	case !(p.CrashRate >= 0 && p.CrashRate <= 1) || p.MaxCrashes < 0 || p.Redrive < 0:
		return bad("CrashRate", "is %v, MaxCrashes %d, Redrive %v: a rate within 0..1, counts and delays not negative", p.CrashRate, p.MaxCrashes, p.Redrive)
	}
	for i, ep := range p.Endpoints {
		for _, t := range ep.EventTypes {
			if !slices.Contains(p.EventTypes, t) {
				return bad("Endpoints", "[%d] filters on %q, which is not one of EventTypes", i, t)
			}
		}
		if err := w.checkEndpoint(i); err != nil {
			return bad("Endpoints", "[%d]: %v", i, err)
		}
		for _, code := range ep.RejectStatuses {
			if !w.HTTP.On || code != 422 && code != w.HTTP.rejectStatus() {
				return bad("Endpoints", "[%d].RejectStatuses has %d; an HTTP world's endpoint may reject 422 or HTTP.RejectStatus (%d), the statuses only its receiver answers", i, code, w.HTTP.rejectStatus())
			}
		}
		last := ep.Created
		if ep.Created < 0 || ep.Created > w.FaultsEnd {
			return bad("Endpoints", "[%d].Created is %v; must be within 0..FaultsEnd (%v)", i, ep.Created, w.FaultsEnd)
		}
		for _, win := range slices.Concat(ep.Outages, ep.Flapping) {
			if win.To < win.From || win.From < 0 || win.To > w.FaultsEnd {
				return bad("Endpoints", "[%d]: window %v must be a span that ends by FaultsEnd (%v)", i, win, w.FaultsEnd)
			}
		}
		for _, win := range ep.Disables {
			if win.From < last || win.To <= win.From || win.To > w.FaultsEnd {
				return bad("Endpoints", "[%d].Disables: %v must follow its creation and the one before, and end by FaultsEnd (%v)", i, win, w.FaultsEnd)
			}
			last = win.To
		}
	}
	if err := w.validateHealth(); err != nil {
		return err
	}
	for _, b := range p.Replays {
		if b.Endpoint < 0 || b.Endpoint >= e || b.At < 0 || b.At > w.FaultsEnd || b.Since < 0 || b.Since > b.At {
			return bad("Replays", "%v must name an endpoint, come by FaultsEnd (%v), and since no later than it", b, w.FaultsEnd)
		}
		if b.CrashAfter < 0 || b.CrashAfter > 0 && (b.Page < 1 || b.Page > platform.MaxLimit || b.Resume < 0 || b.At < p.Endpoints[b.Endpoint].Created) {
			return bad("Replays", "%v: a job's crash after a page count above 0, its Page within 1..%d, its Resume not negative, after its endpoint's creation", b, platform.MaxLimit)
		}
	}
	for _, m := range p.Missing {
		if m.Endpoint < 0 || m.Endpoint >= e || m.At < p.Endpoints[m.Endpoint].Created || m.At > w.FaultsEnd || m.Since < 0 || m.Since > m.At {
			return bad("Missing", "%v must name an endpoint, come after its creation and by FaultsEnd (%v), and since no later than it", m, w.FaultsEnd)
		}
	}
	return nil
}

func (p Platform) describe() string {
	if !p.On() {
		return ""
	}
	s := fmt.Sprintf(" | platform endpoints=%d types=%v", len(p.Endpoints), p.EventTypes)
	for i, ep := range p.Endpoints {
		s += fmt.Sprintf(" ep%d{filter=%v", i, ep.EventTypes)
		if ep.RateLimit > 0 {
			s += fmt.Sprintf(" rate=%d/s", ep.RateLimit)
		}
		if ep.RejectStatuses != nil {
			s += fmt.Sprintf(" rejects=%v", ep.RejectStatuses)
		}
		if ep.MaxAttempts > 0 || ep.BaseBackoff > 0 || ep.MaxBackoff > 0 {
			s += fmt.Sprintf(" retry=%d@%v..%v", ep.MaxAttempts, ep.BaseBackoff, ep.MaxBackoff)
		}
		if len(ep.Outages) > 0 {
			s += fmt.Sprintf(" outages=%v", ep.Outages)
		}
		if len(ep.Flapping) > 0 {
			s += fmt.Sprintf(" flapping=%v", ep.Flapping)
		}
		if len(ep.Disables) > 0 {
			s += fmt.Sprintf(" disabled=%v", ep.Disables)
		}
		if ep.Created > 0 {
			s += fmt.Sprintf(" created@%v", ep.Created)
		}
		if ep.Gone {
			s += " gone-on-poison"
		}
		s += "}"
	}
	if p.CrashRate > 0 && p.MaxCrashes > 0 {
		s += fmt.Sprintf(" publish-crashes<=%d@%.2f redrive=%v", p.MaxCrashes, p.CrashRate, p.Redrive)
	}
	if len(p.Replays) > 0 {
		s += fmt.Sprintf(" bulk-replays=%v", p.Replays)
	}
	if len(p.Missing) > 0 {
		s += fmt.Sprintf(" replay-missing=%v", p.Missing)
	}
	if p.DisableAfter > 0 {
		s += fmt.Sprintf(" health:disable-after=%v,reenable=%v", p.DisableAfter, p.Reenable)
	}
	return s
}

// platParts is a platform world's running application.
type platParts struct {
	st      *platmem.Store
	svc     *platform.Service
	r       *rand.Rand // the crashes' draws
	app     string
	eps     []string       // endpoint IDs, by index
	index   map[string]int // event index, by delivery ID
	enabled []bool         // by endpoint, as the operator set it
	created []bool         // by endpoint: it is in the platform store
	fanned  []bool         // by message: its fan-out was logged

	publishing int // the message Publish is called for (its ID)
	// crashAt is the enqueue call (from 1) of the current publish at which
	// it crashes (0: none), after that enqueue if crashAfter; calls
	// counts them.
	crashAt, calls int
	crashAfter     bool
	crashes        int
	// jobs are the bulk replay jobs made, by ID: their BulkReplay's
	// index and try.
	jobs map[string][2]int
	// rec is the production endpoint health (Platform.DisableAfter; nil:
	// off), fed each attempt by recordAttempt; attempts counts them.
	rec      *platform.Recorder
	attempts int
}

// crashed is the panic of a publish crashing mid fan-out, which publish
// recovers: a crashed process answers nothing.
type crashed struct{}

func messageID(m int) string { return fmt.Sprintf("%s_%026d", platform.MessageKind, m) }
func endpointID(e int) string {
	return fmt.Sprintf("%s_%026d", platform.EndpointKind, e)
}

// initPlatform builds a platform world's application, endpoints and
// service, and names the world's events and streams after its deliveries
// and endpoints; each stream is judged with its endpoint's policy.
func (s *sim) initPlatform() {
	p := s.w.Platform
	if !p.On() {
		return
	}
	e := len(p.Endpoints)
	pp := &platParts{st: platmem.New(func() time.Time { return s.now }), r: stream(s.seed, "platform"),
		app: platformApp, index: map[string]int{}, jobs: map[string][2]int{},
		enabled: make([]bool, e), created: make([]bool, e), fanned: make([]bool, s.w.Events/e)}
	s.plat = pp
	must := func(err error) {
		if err != nil {
			panic(fmt.Sprintf("sim: seed %d: building the platform: %v", s.seed, err))
		}
	}
	_, err := pp.st.CreateApp(bg, platform.Application{ID: pp.app, Name: "sim"})
	must(err)
	for _, t := range p.EventTypes {
		_, err := pp.st.CreateEventType(bg, platform.EventType{Name: t})
		must(err)
	}
	for i, ep := range p.Endpoints {
		pp.eps = append(pp.eps, endpointID(i))
		if ep.Created == 0 {
			s.createEndpoint(i)
		}
		s.streams[i] = platform.StreamOf(pp.eps[i])
	}
	clear(s.streamIdx)
	for i, name := range s.streams {
		s.streamIdx[name] = i
	}
	// The receiver shares s.ids: it made event i poison or stubborn by
	// its EventID, and now knows it by its delivery's ID.
	for i := range s.ids {
		s.ids[i] = platform.DeliveryID(messageID(i/e), pp.eps[i%e])
		pp.index[s.ids[i]] = i
	}
	pp.svc, err = platform.New(platform.Config{Store: pp.st, Enqueue: s.platformEnqueue, MaxPayloadBytes: s.w.Policy.MaxPayloadBytes,
		Now: func() time.Time { return s.now }, NewID: func(string, time.Time) string { return messageID(pp.publishing) },
		Logger: slog.New(slog.DiscardHandler)})
	must(err)
	s.initHealth()
	for i := range s.runs {
		r := &s.runs[i]
		r.Policy = s.endpointPolicy(i)
		r.LivenessBound = invariants.LivenessBound(r.Policy, s.w.Events, len(s.w.Receiver.Poison)+len(s.w.Receiver.Stubborn), s.w.Channel.LatencyMax)
	}
}

// platformApp is the ID of a platform world's application.
var platformApp = fmt.Sprintf("%s_%026d", platform.AppKind, 1)

// platformEndpoint is endpoint i as the platform store keeps it: the
// world's ordering and window, its own filter, rate limit and retry
// policy.
func (w World) platformEndpoint(i int) platform.Endpoint {
	ep := w.Platform.Endpoints[i]
	e := platform.Endpoint{ID: endpointID(i), AppID: platformApp, URL: fmt.Sprintf("https://ep%d.example.com/hook", i),
		EventTypes: ep.EventTypes, Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, Enabled: true,
		Ordering: platform.Strict, RateLimit: ep.RateLimit,
		MaxAttempts: ep.MaxAttempts, BaseBackoff: ep.BaseBackoff, MaxBackoff: ep.MaxBackoff, RejectStatuses: ep.RejectStatuses}
	if w.Policy.Ordering == machine.Independent {
		e.Ordering, e.MaxInFlight = platform.Independent, w.Policy.Window
	}
	return e
}

// checkEndpoint checks endpoint i as the API would (platform.CheckEndpoint)
// and the policy it gives its stream over the world's (a backoff of the
// endpoint's own against the world's other bound).
func (w World) checkEndpoint(i int) error {
	e := w.platformEndpoint(i)
	if err := platform.CheckEndpoint(e); err != nil {
		return err
	}
	return platform.EndpointPolicy(w.Policy, e).Validate()
}

// endpointPolicy is endpoint i's stream's policy, as StreamPolicy gives
// it while the endpoint is enabled: what the checker judges the stream by.
func (s *sim) endpointPolicy(i int) machine.Config {
	return platform.EndpointPolicy(s.w.Policy, s.w.platformEndpoint(i))
}

// platformBounds adds each endpoint's disables to its stream's slack, as
// a pause's: nobody can deliver or give an event up meanwhile, and a
// poll passes before the stream is claimed again.
func (s *sim) platformBounds() {
	if s.plat == nil {
		return
	}
	var down time.Duration
	for _, ep := range s.w.Platform.Endpoints {
		for _, win := range ep.Disables {
			down += win.To - win.From + s.cfg.Poll
		}
	}
	for i := range s.runs {
		s.runs[i].Slack += down + s.healthDown()
		s.runs[i].LivenessBound += down + s.healthDown()
	}
}

// eventOf is the index of event id: EventID(i), or a platform world's
// delivery.
func (s *sim) eventOf(id string) (int, bool) {
	if s.plat != nil {
		i, ok := s.plat.index[id]
		return i, ok
	}
	return eventOf(s.ids, id)
}

// startPublishes schedules a platform world's publishes, its disables and
// its bulk replays, and returns the instant of the last publish; 0 in
// other worlds.
func (s *sim) startPublishes() time.Duration {
	if s.plat == nil {
		return 0
	}
	p := s.w.Platform
	at := time.Duration(0)
	for m := range s.plat.fanned {
		at += between(s.rProducer, 0, 2*s.w.Interarrival)
		s.q.schedule(at, func() { s.publish(m, 1) })
		if s.w.Producer.SendTwice {
			again := at + between(s.rProducer, 0, s.w.Producer.TwiceDelay)
			s.q.schedule(again, func() { s.publish(m, 2) })
		}
	}
	for i, ep := range p.Endpoints {
		for _, win := range ep.Disables {
			s.q.schedule(win.From, func() { s.setEnabled(i, false) })
			s.q.schedule(win.To, func() { s.setEnabled(i, true) })
		}
	}
	for k, b := range p.Replays {
		if b.CrashAfter > 0 {
			s.q.schedule(b.At, func() { s.startJob(k, b, 1) })
			continue
		}
		s.q.schedule(b.At, func() { s.bulkReplay(k, b) })
	}
	for i, ep := range p.Endpoints {
		if ep.Created > 0 {
			s.q.schedule(ep.Created, func() { s.createEndpoint(i) })
		}
	}
	for _, m := range p.Missing {
		s.q.schedule(m.At, func() { s.replayMissing(m) })
	}
	return at
}

// publish is the producer publishing message m (copy counts its
// publishes) with its idempotency key. The first publish logs which
// endpoints want it, by the world's own reading of their filters and
// states. A publish may crash mid fan-out: the producer then hears
// nothing and publishes again after AckTimeout, and the re-drive runs.
func (s *sim) publish(m, copy int) {
	pp, p := s.plat, s.w.Platform
	typ := p.EventTypes[m%len(p.EventTypes)]
	if s.firstOffer.IsZero() {
		s.firstOffer = s.now
	}
	s.stats.Offers++
	s.note(nil, opPlatform, str("publish"), str(fmt.Sprintf("%s %s copy %d", messageID(m), typ, copy)))
	if !pp.fanned[m] {
		pp.fanned[m] = true
		for e, ep := range p.Endpoints {
			detail := invariants.FanUnsubscribed
			switch takes := len(ep.EventTypes) == 0 || slices.Contains(ep.EventTypes, typ); {
			case takes && pp.created[e] && pp.enabled[e]:
				detail = invariants.FanSubscribed
			case takes:
				detail = invariants.FanMissed
			}
			s.observeIn(e, invariants.Entry{Kind: invariants.Fanned, ID: s.ids[m*len(p.Endpoints)+e], Detail: detail})
		}
	}
	for e := range p.Endpoints {
		s.coverEvent(FaultDuplicateOffer, m*len(p.Endpoints)+e) // a publish again meets its deliveries
	}
	pp.crashAt, pp.calls = 0, 0
	if s.faulty() && pp.crashes < p.MaxCrashes && chance(pp.r, p.CrashRate) {
		pp.crashes++
		pp.crashAt, pp.crashAfter = 1+pp.r.IntN(len(p.Endpoints)), pp.r.IntN(2) == 0
	}
	payload := fmt.Appendf(nil, `{"message":%d}`, m)
	msg, ok := s.publishCall(m, typ, payload)
	if !ok {
		s.note(nil, opPlatform, str("crash"), str(fmt.Sprintf("publish of %s crashed at enqueue %d", messageID(m), pp.crashAt)))
		s.q.schedule(s.elapsed+s.w.Producer.AckTimeout, func() { s.publish(m, copy+1) })
		s.q.schedule(s.elapsed+p.Redrive, s.redrive)
		return
	}
	s.note(nil, opPlatform, str("published"), str(fmt.Sprintf("%s complete=%v", msg.ID, msg.Complete())))
	if !msg.Complete() {
		s.q.schedule(s.elapsed+max(p.Redrive, minRedrive), s.redrive)
	}
}

// publishCall calls Service.Publish for message m; false if it crashed.
func (s *sim) publishCall(m int, typ string, payload []byte) (msg platform.Message, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, crash := r.(crashed); !crash {
				panic(r)
			}
			ok = false
		}
	}()
	s.plat.publishing = m
	msg, _, err := s.plat.svc.Publish(bg, s.plat.app, typ, fmt.Sprintf("key-%d", m), payload)
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: publish %s: %v", s.seed, messageID(m), err))
	}
	return msg, true
}

// platformEnqueue is the Service's Enqueuer: the delivery store's
// Enqueue, where a publish may crash.
func (s *sim) platformEnqueue(_ context.Context, stream, id string, payload []byte) error {
	pp := s.plat
	if pp.crashAt > 0 {
		pp.calls++
		if pp.calls == pp.crashAt {
			if pp.crashAfter {
				_ = s.deliveryEnqueue(stream, id, payload)
			}
			panic(crashed{})
		}
	}
	return s.deliveryEnqueue(stream, id, payload)
}

// deliveryEnqueue enqueues one delivery into the delivery store: it is
// then accepted, as a producer's acknowledged event is, and node 0's
// worker is told, as a Service tells its own. The store's call faults
// (World.Store) strike it as they strike a producer's enqueue: the entry
// then stays pending, for the re-drive.
func (s *sim) deliveryEnqueue(stream, id string, payload []byte) error {
	i := s.eventIndex(id)
	f := s.drawCall(true)
	if f.undone() {
		return s.callErr(nil, f, "Enqueue "+id)
	}
	stored, created, err := s.store.Enqueue(bg, stream, id, payload)
	if err != nil {
		s.note(nil, opEnqueueRefused, str(id))
		return err
	}
	rec := stored.Machine()
	if created {
		s.persisted(nil, &rec)
		s.observe(invariants.Entry{Kind: invariants.Persisted, ID: rec.ID, Worker: "store", Seq: rec.Seq, Record: rec})
		s.note(nil, opStoreAck, str(rec.ID), unum(rec.Seq))
	} else {
		s.note(nil, opStoreAckDuplicate, str(rec.ID), unum(rec.Seq))
	}
	if !s.acked[i] {
		s.acked[i] = true
		s.observe(invariants.Entry{Kind: invariants.Acked, ID: rec.ID, Seq: rec.Seq})
	}
	if n := s.nodes[0]; !n.down && n.w != nil {
		if created {
			n.w.Enqueued(stored)
		} else {
			n.w.Notify(stream)
		}
		s.reschedule(n)
	}
	return s.callErr(nil, f, "Enqueue "+id) // nil, or the reply lost after it was made
}

// redrive runs Service.Redrive, as a restarted courier does, and again
// later while it leaves a fan-out unfinished, as Service.Run does.
func (s *sim) redrive() {
	s.plat.crashAt = 0
	n, err := s.plat.svc.Redrive(bg)
	detail := fmt.Sprintf("%d completed", n)
	if err != nil {
		detail += ": " + err.Error()
		s.q.schedule(s.elapsed+max(s.w.Platform.Redrive, minRedrive), s.redrive)
	}
	s.note(nil, opPlatform, str("redrive"), str(detail))
}

// minRedrive is the least wait before a re-drive is tried again.
const minRedrive = 100 * time.Millisecond

// setEnabled disables or enables endpoint i through the platform store,
// as the API does; its stream's log gets a Paused or Resumed of the
// disable, judged by disabled-gets-nothing.
func (s *sim) setEnabled(i int, on bool) {
	pp := s.plat
	ep, err := pp.st.GetEndpoint(bg, pp.eps[i])
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: endpoint %d: %v", s.seed, i, err))
	}
	ep.Enabled = on
	if _, err := pp.st.UpdateEndpoint(bg, ep); err != nil {
		panic(fmt.Sprintf("sim: seed %d: endpoint %d: %v", s.seed, i, err))
	}
	pp.enabled[i] = on
	kind, what := invariants.Resumed, "enable"
	if !on {
		kind, what = invariants.Paused, "disable"
	}
	s.coverAll(FaultOperator)
	s.note(nil, opPlatform, str(what), str(ep.ID))
	s.observeIn(i, invariants.Entry{Kind: kind, Worker: operatorBy, Detail: invariants.PauseDisabled})
}

// platformPolicy is the Policy of a platform world's workers: the
// production platform.StreamPolicy on the platform store.
func (s *sim) platformPolicy(n *node, stream string) (machine.Config, error) {
	p, err := platform.StreamPolicy(bg, s.plat.st, s.w.Policy, stream)
	if err != nil {
		s.note(n, opPolicyRefused, str(stream))
		err = fmt.Errorf("%w: %w", errPaused, err) // as serve wraps courier.ErrPaused
	}
	return p, err
}

// bulkReplay is the operator's bulk replay k of an endpoint's dead
// letters, through platform.ReplayDeadPage a page at a time, back to back.
// One the store does not let finish (a store outage) ends failed, and the
// operator runs it again a second later, as often as it takes (an outage
// ends by FaultsEnd).
func (s *sim) bulkReplay(k int, b BulkReplay) {
	by := fmt.Sprintf("bulk-replay-%d", k+1)
	var since time.Time
	if !b.All {
		since = Epoch.Add(b.Since)
	}
	stream := s.streams[b.Endpoint]
	s.coverAll(FaultOperator)
	s.observeIn(b.Endpoint, invariants.Entry{Kind: invariants.BulkReplay, Worker: by, Until: since, Detail: invariants.BulkBegin})
	end := invariants.BulkEnd
	var after uint64
	for {
		page, err := platform.ReplayDeadPage(bg, s.store, stream, since, after, 100, by)
		if err == nil && page.Failed > 0 {
			err = page.Errors[0]
		}
		for _, rec := range page.Replayed {
			s.replayed(rec, by)
		}
		if err != nil {
			s.note(nil, opOperatorRefused, str("bulk-replay"), str(stream), str(err.Error()))
			end = invariants.BulkFailed
			s.q.schedule(s.elapsed+time.Second, func() { s.bulkReplay(k, b) })
			break
		}
		if page.Last {
			break
		}
		after = page.Next
	}
	s.observeIn(b.Endpoint, invariants.Entry{Kind: invariants.BulkReplay, Worker: by, Until: since, Detail: end})
}

// replayed logs a replay the store made, by by: its fencing token is its
// stream's newest grant, and the event has a fresh budget.
func (s *sim) replayed(rec store.Record, by string) {
	s.writes++
	var token uint64
	if h := rec.History; len(h) > 0 {
		token = h[len(h)-1].Token
	}
	i := s.streamOf(rec.ID)
	s.newestToken = max(s.newestToken, token)
	s.granted[i] = max(s.granted[i], token)
	m := rec.Machine()
	s.note(nil, opReplay, str(rec.ID), unum(token), record(&m))
	if s.w.MaxDuration == 0 {
		s.end = max(s.end, m.AcceptedAt.Sub(Epoch)+s.settleWithin())
	}
	s.observeIn(i, invariants.Entry{Kind: invariants.Replayed, ID: rec.ID, Seq: m.Seq, Worker: by, Token: token, Record: m})
}

// outage reports whether stream's sends are refused now: the world's
// outages, the streams down (Channel.Down), or its endpoint's.
func (s *sim) outage(stream string) bool {
	if s.inWindows(s.w.Channel.Outages) {
		return true
	}
	if d := s.w.Channel.Down; d.Streams > 0 && d.contains(s.elapsed) && d.has(s.streamIndex(stream), len(s.streams)) {
		return true
	}
	return s.plat != nil && s.inWindows(s.w.Platform.Endpoints[s.streamIndex(stream)].Outages)
}

// flapping reports whether stream's link flaps now.
func (s *sim) flapping(stream string) bool {
	if s.inWindows(s.w.Channel.Flapping) {
		return true
	}
	return s.plat != nil && s.inWindows(s.w.Platform.Endpoints[s.streamIndex(stream)].Flapping)
}

// offers is how many events the producer offers one by one: none in a
// platform world, which publishes messages instead (startPublishes).
func (s *sim) offers() int {
	if s.plat != nil {
		return 0
	}
	return s.w.Events
}

// createEndpoint creates endpoint i in the platform store, as the API
// does: from now on the publishes fan out to it.
func (s *sim) createEndpoint(i int) {
	pp := s.plat
	if _, err := pp.st.CreateEndpoint(bg, s.w.platformEndpoint(i)); err != nil {
		panic(fmt.Sprintf("sim: seed %d: creating endpoint %d: %v", s.seed, i, err))
	}
	pp.created[i], pp.enabled[i] = true, true
	if s.w.Platform.Endpoints[i].Created > 0 {
		s.coverAll(FaultOperator)
		s.note(nil, opPlatform, str("create"), str(pp.eps[i]))
	}
}

// replayMissing is the operator's replay of the messages an endpoint
// missed since m.Since, through the production Service.ReplayMissing; a
// delivery whose enqueue the store refused is left to the re-drive, as
// ReplayMissing says. The log's MissingReplay comes first, so that the
// checker knows what is wanted before it is enqueued.
func (s *sim) replayMissing(m MissingReplay) {
	pp := s.plat
	since := Epoch.Add(m.Since)
	s.coverAll(FaultOperator)
	s.observeIn(m.Endpoint, invariants.Entry{Kind: invariants.MissingReplay, Worker: operatorBy, Until: since})
	pp.crashAt = 0 // the operator's call does not crash
	added, pending, err := pp.svc.ReplayMissing(bg, pp.app, pp.eps[m.Endpoint], since)
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: replay-missing %v: %v", s.seed, m, err))
	}
	s.note(nil, opPlatform, str("replay-missing"), str(fmt.Sprintf("%s since %v: %d added, %d pending", pp.eps[m.Endpoint], m.Since, added, pending)))
	if pending > 0 {
		s.q.schedule(s.elapsed+max(s.w.Platform.Redrive, minRedrive), s.redrive)
	}
}

// Bulk replay jobs (BulkReplay.CrashAfter), as courier serve runs them
// (cmd/courier's replays): a job in the platform store, its pages replayed
// by platform.ResumeDeadPage under the job's name, its cursor saved after
// each page. Here its first serve crashes after a page and before its
// save; a second serve claims the job when its lease has ended and goes on
// from the cursor, so that page is listed again: what it replayed and is
// dead again must not be replayed twice (replay-since).
const (
	jobServe1, jobServe2 = "serve-1", "serve-2"
)

// startJob creates bulk replay k's job (try counts the jobs created for
// it) and runs it. The endpoint running a job already (another replay's,
// interrupted), the operator asks again a second later.
func (s *sim) startJob(k int, b BulkReplay, try int) {
	pp := s.plat
	var since time.Time
	if !b.All {
		since = Epoch.Add(b.Since)
	}
	id := fmt.Sprintf("%s_%026d", platform.ReplayJobKind, (k+1)*1000+try)
	j, err := pp.st.CreateReplayJob(bg, platform.ReplayJob{ID: id, AppID: pp.app, EndpointID: pp.eps[b.Endpoint], Since: since, Owner: jobServe1}, s.w.LeaseTTL())
	if errors.Is(err, platform.ErrConflict) {
		s.note(nil, opOperatorRefused, str("bulk-replay-job"), str(s.streams[b.Endpoint]), str(err.Error()))
		s.q.schedule(s.elapsed+time.Second, func() { s.startJob(k, b, try+1) })
		return
	}
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: bulk replay job %v: %v", s.seed, b, err))
	}
	pp.jobs[j.ID] = [2]int{k, try}
	s.coverAll(FaultOperator)
	s.observeIn(b.Endpoint, invariants.Entry{Kind: invariants.BulkReplay, Worker: jobBy(j), Until: since, Detail: invariants.BulkBegin})
	s.runJob(k, b, j, try, b.CrashAfter)
}

func jobBy(j platform.ReplayJob) string { return "replay " + j.ID }

// runJob runs job j of bulk replay k a page at a time, back to back; its
// serve crashes after page crashAfter (0: never) before it saves. A page
// the store does not let finish ends the job failed, and the operator
// starts a new one a second later, as for a bulk replay (bulkReplay).
func (s *sim) runJob(k int, b BulkReplay, j platform.ReplayJob, try, crashAfter int) {
	by := jobBy(j)
	for pages := 1; ; pages++ {
		page, err := platform.ResumeDeadPage(bg, s.store, s.streams[b.Endpoint], j.Since, j.Cursor, b.Page, by)
		if err == nil && page.Failed > 0 {
			err = page.Errors[0]
		}
		for _, rec := range page.Replayed {
			s.replayed(rec, by)
		}
		switch {
		case err != nil:
			s.note(nil, opOperatorRefused, str("bulk-replay-job"), str(j.ID), str(err.Error()))
			j.State, j.Error = platform.JobFailed, err.Error()
			s.endJob(b, s.saveJob(j), invariants.BulkFailed)
			s.q.schedule(s.elapsed+time.Second, func() { s.startJob(k, b, try+1) })
			return
		case pages == crashAfter || page.Last && pages < crashAfter: // its last page may be the one: it dies before it saves the job done
			s.note(nil, opPlatform, str("job-crash"), str(fmt.Sprintf("%s: its serve crashed after page %d, its cursor saved at %d", j.ID, pages, j.Cursor)))
			s.q.schedule(s.elapsed+s.w.LeaseTTL()+b.Resume+time.Millisecond, s.resumeJobs)
			return
		}
		j.Cursor = page.Next
		j.Listed, j.Replayed = j.Listed+page.Listed, j.Replayed+len(page.Replayed)+page.Again
		if page.Last {
			j.State = platform.JobDone
			s.endJob(b, s.saveJob(j), invariants.BulkEnd)
			return
		}
		j = s.saveJob(j)
	}
}

// saveJob saves job j's progress under its owner's lease, as the job's
// serve does after each page; the owner holds it (nothing else runs
// between its pages).
func (s *sim) saveJob(j platform.ReplayJob) platform.ReplayJob {
	saved, err := s.plat.st.SaveReplayJob(bg, j, s.w.LeaseTTL())
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: saving bulk replay job %s: %v", s.seed, j.ID, err))
	}
	return saved
}

// endJob logs the end of job j: done, or failed.
func (s *sim) endJob(b BulkReplay, j platform.ReplayJob, end string) {
	s.note(nil, opPlatform, str("job-"+string(j.State)), str(fmt.Sprintf("%s: listed %d, replayed %d", j.ID, j.Listed, j.Replayed)))
	s.observeIn(b.Endpoint, invariants.Entry{Kind: invariants.BulkReplay, Worker: jobBy(j), Until: j.Since, Detail: end})
}

// resumeJobs is the second serve claiming each job whose serve crashed
// and whose lease has ended, as courier serve's claim loop does, and
// running it from its saved cursor.
func (s *sim) resumeJobs() {
	for {
		j, ok, err := s.plat.st.ClaimReplayJob(bg, jobServe2, s.w.LeaseTTL())
		if err != nil {
			panic(fmt.Sprintf("sim: seed %d: claiming a bulk replay job: %v", s.seed, err))
		}
		if !ok {
			return
		}
		ref := s.plat.jobs[j.ID]
		s.note(nil, opPlatform, str("job-resumed"), str(fmt.Sprintf("%s by %s from cursor %d", j.ID, jobServe2, j.Cursor)))
		s.runJob(ref[0], s.w.Platform.Replays[ref[0]], j, ref[1], 0)
	}
}

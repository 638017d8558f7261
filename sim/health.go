package sim

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/courierlab/courier/channel"
	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/webhook/httpchannel"
)

// Endpoint health in a platform world (Platform.DisableAfter): every
// attempt's outcome, as its sender hears it, goes to the production
// platform.Recorder's Write, synchronously, as courier serve's recorder
// writes it off the delivery path. What health disables is logged as an
// operator's disable is (a Paused of PauseDisabled), so that
// disabled-gets-nothing judges it; the operator enables it again
// Reenable later, through the store's update as the API does.

// healthBy names endpoint health in the trace.
const healthBy = "health"

// validateHealth checks Platform.DisableAfter, Reenable and the
// endpoints' Gone.
func (w World) validateHealth() error {
	p := w.Platform
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: Platform.%s %s", ErrInvalidWorld, field, fmt.Sprintf(format, args...))
	}
	switch {
	case p.DisableAfter < 0 || p.Reenable < 0:
		return bad("DisableAfter", "is %v and Reenable %v; neither may be negative", p.DisableAfter, p.Reenable)
	case p.DisableAfter > 0 && (p.Reenable <= 0 || p.DisableAfter < 2*(p.Reenable+w.LeaseTTL())):
		return bad("DisableAfter", "is %v; with health on, Reenable (%v) must be above 0 and DisableAfter at least twice Reenable and a lease (%v): a health disable then costs less than half its cycle", p.DisableAfter, p.Reenable, w.LeaseTTL())
	}
	for i, ep := range p.Endpoints {
		if ep.Gone && (!w.HTTP.On || p.DisableAfter == 0 || ep.RejectStatuses != nil) {
			return bad("Endpoints", "[%d].Gone needs an HTTP world with health on (DisableAfter) and the default status policy (no RejectStatuses)", i)
		}
	}
	return nil
}

// initHealth builds the production health of a world that has it.
func (s *sim) initHealth() {
	if s.w.Platform.DisableAfter == 0 {
		return
	}
	rec, err := platform.NewRecorder(platform.RecorderConfig{Store: s.plat.st, DisableAfter: s.w.Platform.DisableAfter,
		Now: func() time.Time { return s.now }, Logger: slog.New(slog.DiscardHandler), OnDisabled: s.healthDisabled})
	if err != nil {
		panic(fmt.Sprintf("sim: seed %d: building endpoint health: %v", s.seed, err))
	}
	s.plat.rec = rec
}

// healthDown bounds the time health keeps the endpoints disabled, a
// Reenable and a lease (the next claim) per disable: a failing streak
// disables an endpoint at most once per DisableAfter of the run, counted
// from its enabling (so twice per DisableAfter of the run without them,
// as DisableAfter is at least twice their cost); a 410 at most once per
// answer of a poison or stubborn event, which dies of it (rejected) and
// comes back only from a replay (counted twice: a zombie's copy).
func (s *sim) healthDown() time.Duration {
	p := s.w.Platform
	if p.DisableAfter == 0 {
		return 0
	}
	run := s.w.FaultsEnd + time.Duration(s.w.Events)*2*s.w.Interarrival + s.w.Policy.MaxAge + s.w.Policy.AttemptTimeout + time.Minute
	per := 2*(run/p.DisableAfter) + 2
	gone := 2 * time.Duration((len(s.w.Receiver.Poison)+len(s.w.Receiver.Stubborn))*(2+len(p.Replays)))
	return (time.Duration(len(p.Endpoints))*per + gone) * (p.Reenable + s.w.LeaseTTL())
}

// recordAttempt feeds flight f's outcome o, as its sender takes it, to
// endpoint health, as courier serve's sender hands it to its recorder.
func (s *sim) recordAttempt(f *flight, o channel.Outcome) {
	pp := s.plat
	if pp == nil || pp.rec == nil {
		return
	}
	e := len(pp.eps)
	msg, ep := messageID(f.event/e), pp.eps[f.event%e]
	pp.attempts++
	a := platform.Attempt{ID: fmt.Sprintf("%s_%026d", platform.AttemptKind, pp.attempts), AppID: pp.app, MessageID: msg, EndpointID: ep,
		DeliveryID: f.x.ID, Attempt: f.x.Attempt.Attempt, At: f.sentAt, Duration: max(s.clock(f.n).Sub(f.sentAt), 0),
		Status: o.Status, Outcome: o.Result.String(), Detail: o.Detail}
	pp.rec.Write(bg, a)
	if i := f.event % e; a.Status == http.StatusGone && pp.enabled[i] {
		// A 410 disables its endpoint at once: if health did not, the
		// checker is told what it should have done, and judges the sends
		// that follow by it.
		s.note(nil, opPlatform, str("health-kept-gone"), str(ep))
		s.healthDisabled(bg, platform.Endpoint{ID: ep}, platform.DisabledGone)
	}
}

// healthDisabled is health having disabled endpoint e (OnDisabled): its
// stream's log gets the disable, and the operator enables it again
// Reenable later.
func (s *sim) healthDisabled(_ context.Context, e platform.Endpoint, reason string) {
	i := slices.Index(s.plat.eps, e.ID)
	s.plat.enabled[i] = false
	s.coverAll(FaultOperator)
	s.note(nil, opPlatform, str("health-disable"), str(e.ID+" "+reason))
	s.observeIn(i, invariants.Entry{Kind: invariants.Paused, Worker: healthBy, Detail: invariants.PauseDisabled})
	s.q.schedule(s.elapsed+s.w.Platform.Reenable, func() {
		if !s.plat.enabled[i] {
			s.setEnabled(i, true)
		}
	})
}

// goneStatus is what endpoint i's receiver answers a poison or stubborn
// event: 410 if it is Gone, else the world's reject status.
func (h *httpParts) goneStatus(i int) int {
	if h.s.plat != nil && h.s.w.Platform.Endpoints[i].Gone {
		return http.StatusGone
	}
	return h.reject
}

// policyRejects reports whether endpoint i's status policy rejects code
// at once: its RejectStatuses, or the channel's default (410).
func (h *httpParts) policyRejects(i, code int) bool {
	if h.s.plat == nil {
		return false
	}
	list := h.s.w.Platform.Endpoints[i].RejectStatuses
	if list == nil {
		list = httpchannel.DefaultStatusPolicy().RejectOn
	}
	return slices.Contains(list, code)
}

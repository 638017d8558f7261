// Package observe turns what the worker reports (worker.Event) into the
// observations the checker judges (invariants.Entry). The simulator, the
// production shell's tests, the end-to-end tests and the service's
// -record log all record a worker's run; this is the one mapping they
// share, so that the checker sees the same observations of the same
// worker wherever it runs.
package observe

import (
	"strconv"
	"time"

	"github.com/courierlab/courier/invariants"
	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/worker"
)

// Worker appends to dst the observations ev makes of worker owner, each
// at ev.At (the worker's clock, by which it acted), and returns the
// extended slice:
//
//   - Persisted: one Persisted per record, under the lease's token;
//   - Sent, Probed, Replied, ProbeReplied, CircuitChanged, Adopted: one
//     entry each;
//   - Rebuilt: Restarted (a fresh machine took over the stream), then
//     CircuitChanged with the circuit it recovered.
//
// Every other kind (leases, store failures, drops) makes none: a recorder
// logs grants and renewals from the store's replies, which carry the
// expiry the checker needs.
//
// ev is only read; it is passed by pointer because an Event is some 200
// bytes and the simulator maps one for nearly every worker call.
func Worker(dst []invariants.Entry, owner string, ev *worker.Event) []invariants.Entry {
	switch ev.Kind {
	case worker.Persisted:
		for i := range ev.Records {
			r := &ev.Records[i]
			e := grow(&dst, ev.At, owner)
			e.Kind, e.Token, e.ID, e.Seq, e.Record = invariants.Persisted, ev.Token, r.ID, r.Seq, *r
		}
	case worker.Sent:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.Token, e.ID, e.Seq, e.Attempt = invariants.Sent, ev.Token, ev.ID, ev.Seq, ev.Attempt
	case worker.Probed:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.Detail = invariants.Probed, ev.Detail
	case worker.Replied:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.ID, e.Attempt = invariants.Replied, ev.ID, ev.Attempt
		e.Detail, e.RetryAfter = ev.Outcome.Result.String(), ev.Outcome.RetryAfter
	case worker.ProbeReplied:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.Detail = invariants.ProbeReplied, "unhealthy"
		if ev.Outcome.Result == machine.OutcomeDelivered {
			e.Detail = "healthy"
		}
		e.Attempt, _ = strconv.Atoi(ev.Detail) // the probe's number
	case worker.CircuitChanged:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.Circuit = invariants.CircuitChanged, ev.Circuit
	case worker.Adopted:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.ID, e.Seq = invariants.Adopted, ev.ID, ev.Seq
	case worker.Rebuilt:
		e := grow(&dst, ev.At, owner)
		e.Kind, e.Detail = invariants.Restarted, "took over the stream"
		e = grow(&dst, ev.At, owner)
		e.Kind, e.Circuit = invariants.CircuitChanged, ev.Circuit
	}
	return dst
}

// grow appends to *dst an entry at at by owner and returns it to be
// filled in place: an Entry is large, and building one apart and then
// appending it would copy it twice on the simulator's hottest path.
func grow(dst *[]invariants.Entry, at time.Time, owner string) *invariants.Entry {
	*dst = append(*dst, invariants.Entry{})
	e := &(*dst)[len(*dst)-1]
	e.At, e.Worker = at, owner
	return e
}

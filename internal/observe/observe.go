// Package observe turns what the worker reports (worker.Event) into the
// observations the checker judges (invariants.Entry). The simulator, the
// production shell's tests, the end-to-end tests and the service's
// -record log all record a worker's run; this is the one mapping they
// share, so that the checker sees the same observations of the same
// worker wherever it runs.
package observe

import (
	"strconv"

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
func Worker(dst []invariants.Entry, owner string, ev worker.Event) []invariants.Entry {
	e := invariants.Entry{At: ev.At, Worker: owner}
	switch ev.Kind {
	case worker.Persisted:
		for _, r := range ev.Records {
			dst = append(dst, invariants.Entry{At: ev.At, Kind: invariants.Persisted, Worker: owner, Token: ev.Token, ID: r.ID, Seq: r.Seq, Record: r})
		}
		return dst
	case worker.Sent:
		e.Kind, e.Token, e.ID, e.Seq, e.Attempt = invariants.Sent, ev.Token, ev.ID, ev.Seq, ev.Attempt
	case worker.Probed:
		e.Kind, e.Detail = invariants.Probed, ev.Detail
	case worker.Replied:
		e.Kind, e.ID, e.Attempt = invariants.Replied, ev.ID, ev.Attempt
		e.Detail, e.RetryAfter = ev.Outcome.Result.String(), ev.Outcome.RetryAfter
	case worker.ProbeReplied:
		e.Kind, e.Detail = invariants.ProbeReplied, "unhealthy"
		if ev.Outcome.Result == machine.OutcomeDelivered {
			e.Detail = "healthy"
		}
		e.Attempt, _ = strconv.Atoi(ev.Detail) // the probe's number
	case worker.CircuitChanged:
		e.Kind, e.Circuit = invariants.CircuitChanged, ev.Circuit
	case worker.Adopted:
		e.Kind, e.ID, e.Seq = invariants.Adopted, ev.ID, ev.Seq
	case worker.Rebuilt:
		dst = append(dst, invariants.Entry{At: ev.At, Kind: invariants.Restarted, Worker: owner, Detail: "took over the stream"})
		e.Kind, e.Circuit = invariants.CircuitChanged, ev.Circuit
	default:
		return dst
	}
	return append(dst, e)
}

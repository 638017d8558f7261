// Package observe turns what the worker reports (worker.Event) into the
// observations the checker judges (invariants.Entry). The simulator, the
// production shell's tests, the end-to-end tests and the service's
// -record log all record a worker's run; this is the one mapping they
// share, so that the checker sees the same observations of the same
// worker wherever it runs. It sits beside the worker, above both the
// worker and the checker, which know nothing of each other.
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
//     CircuitChanged with the circuit it recovered;
//   - LeaseLost by the worker's own clock (no store error): LeaseDropped,
//     which the lease-kept rule holds to the expiry the store told it.
//
// Every other kind (grants, renewals, losses the store refused, store
// failures, dropped replies) makes none: a recorder logs grants and
// renewals from the store's replies, which carry the expiry the checker
// needs.
func Worker(dst []invariants.Entry, owner string, ev worker.Event) []invariants.Entry {
	at := ev.At
	switch ev.Kind {
	case worker.Persisted:
		for _, r := range ev.Records {
			dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.Persisted, Token: ev.Token, ID: r.ID, Seq: r.Seq, Record: r})
		}
	case worker.Sent:
		dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.Sent, Token: ev.Token, ID: ev.ID, Seq: ev.Seq, Attempt: ev.Attempt})
	case worker.Probed:
		dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.Probed, Detail: ev.Detail})
	case worker.Replied:
		dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.Replied, ID: ev.ID, Attempt: ev.Attempt,
			Detail: ev.Outcome.Result.String(), RetryAfter: ev.Outcome.RetryAfter})
	case worker.ProbeReplied:
		health := "unhealthy"
		if ev.Outcome.Result == machine.OutcomeDelivered {
			health = "healthy"
		}
		n, _ := strconv.Atoi(ev.Detail) // the probe's number
		dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.ProbeReplied, Detail: health, Attempt: n})
	case worker.CircuitChanged:
		dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.CircuitChanged, Circuit: ev.Circuit})
	case worker.Adopted:
		dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.Adopted, ID: ev.ID, Seq: ev.Seq})
	case worker.LeaseLost:
		if ev.Err == nil {
			dst = append(dst, invariants.Entry{At: at, Worker: owner, Kind: invariants.LeaseDropped, Token: ev.Token, Detail: ev.Detail})
		}
	case worker.Rebuilt:
		dst = append(dst,
			invariants.Entry{At: at, Worker: owner, Kind: invariants.Restarted, Detail: "took over the stream"},
			invariants.Entry{At: at, Worker: owner, Kind: invariants.CircuitChanged, Circuit: ev.Circuit})
	}
	return dst
}

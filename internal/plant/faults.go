package plant

// The store-fault catalogue (issue 28): one bug for each fault the
// simulator's richer fault model brings (store calls that fail or lose
// their reply, operator actions, renewal failures under clock steps),
// each in the code that meets the fault.
const (
	// UnknownSaveActedOn: the worker takes a save whose reply was lost
	// (store.ErrUnknown) for a save that was made, and hands out its
	// sends (worker).
	UnknownSaveActedOn Bug = "unknown-save-acted-on"
	// RefusedSaveKeepsMachine: after a refused save (store.ErrUnavailable)
	// the worker keeps its machine, which has moved past what the store
	// holds, instead of rebuilding it (worker).
	RefusedSaveKeepsMachine Bug = "refused-save-keeps-machine"
	// UnknownEnqueueAcked: the producer takes an enqueue whose reply was
	// lost for an acknowledgement (fake producer).
	UnknownEnqueueAcked Bug = "unknown-enqueue-acked"
	// RetentionDeletesUnsettled: DeleteSettled forgets to check that a
	// record is settled, so a zero SettledAt counts as long past
	// (memstore).
	RetentionDeletesUnsettled Bug = "retention-deletes-unsettled"
	// DiscardAnyRecord: Discard settles any record, not only a dead letter
	// (memstore).
	DiscardAnyRecord Bug = "discard-any-record"
	// RenewRevivesExpired: Renew extends an expired lease that no newer
	// lease has replaced (memstore).
	RenewRevivesExpired Bug = "renew-revives-expired"
	// ReplayAnyRecord: Replay re-drives any record, not only an
	// undiscarded dead letter: a pending, delivered or discarded one gets
	// a fresh budget (memstore).
	ReplayAnyRecord Bug = "replay-any-record"
	// PolicyCached: the worker asks Policy once per stream and keeps the
	// answer for every later takeover, so a pause set after its first
	// takeover never stops it (worker).
	PolicyCached Bug = "policy-cached"
	// RenewGivesUpAtOnce: the worker gives its lease up after one refused
	// renewal (store.ErrUnavailable), though the lease has most of its
	// time left and a prompt retry would keep it (worker).
	RenewGivesUpAtOnce Bug = "renew-gives-up-at-once"
	// PauseSticky: the worker keeps its Policy's refusal of a stream for
	// two minutes, so a resume takes up to two minutes to be seen, past the
	// pause and the bound the checker allows it (worker).
	PauseSticky Bug = "pause-sticky"
	// BatchActsOnRefused: when the worker saves several replies' batches
	// in one store call (DeliverAll), a batch the store refused as written
	// under a stale lease (store.ErrStaleLease) still hands its sends out:
	// the fenced-off owner sends attempts the store never counted
	// (worker).
	BatchActsOnRefused Bug = "batch-acts-on-refused"
)

func init() {
	for bug, rule := range map[Bug]string{
		UnknownSaveActedOn:        "bounded-sends",
		RefusedSaveKeepsMachine:   "bounded-sends",
		UnknownEnqueueAcked:       "nothing-lost",
		RetentionDeletesUnsettled: "dead-kept",
		DiscardAnyRecord:          "nothing-lost",
		RenewRevivesExpired:       "leases",
		ReplayAnyRecord:           "monotonic",
		PolicyCached:              "pause",
		RenewGivesUpAtOnce:        "lease-kept",
		PauseSticky:               "liveness",
		BatchActsOnRefused:        "bounded-sends",
	} {
		Expected[bug] = rule
	}
}

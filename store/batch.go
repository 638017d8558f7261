package store

import "context"

// NewEvent is one event of a batch to enqueue (BatchEnqueuer).
type NewEvent struct {
	Stream  string
	ID      string
	Payload []byte
}

// Enqueued is what EnqueueBatch did with one event: what Enqueue would
// have returned for it, and who held its stream.
type Enqueued struct {
	Record  Record
	Created bool
	Err     error
	// HeldBy is the owner of the lease that was valid on the event's
	// stream when the event was stored, at the store's now (as Renew
	// judges a lease), and "" when none was. The holder adopts the event
	// (at once if it is local, at its next poll if not), and no claim can
	// grant the stream before that lease ends: a producer beside a
	// worker need not make it claim. EnqueueEach over a store without
	// EnqueueBatch leaves it "" (Enqueue does not say).
	HeldBy string
}

// BatchEnqueuer is a Store that can enqueue several events in one
// transaction: one commit, and one wait for the disk, for all of them
// (group commit). It is optional: a Service hands the publishes that
// wait together to EnqueueBatch when its store has it, and to Enqueue
// one at a time otherwise (EnqueueEach). memstore has none: in memory,
// there is no commit to share.
type BatchEnqueuer interface {
	// EnqueueBatch enqueues each event as Enqueue would, in one
	// transaction: those it creates are durable together, and each may
	// be acknowledged once it returns nil. Each event's outcome is its
	// own, in order: one that Enqueue would refuse (a bad name, an ID of
	// another stream) gets that error and changes nothing, and the
	// others are enqueued all the same. An event whose ID an earlier
	// event of the batch took is that event's duplicate. The events of a
	// stream get their Seqs in batch order. The call's own error (the
	// store unavailable, ctx ended) means that no event was enqueued, or,
	// with ErrUnknown, that it is not known whether they all were.
	EnqueueBatch(ctx context.Context, events []NewEvent) ([]Enqueued, error)
}

// EnqueueEach enqueues the events with s's EnqueueBatch if it has one,
// and otherwise with one Enqueue each, and returns each event's outcome
// with its error: its own, or the call's (with EnqueueBatch, an error of
// the call is every event's).
func EnqueueEach(ctx context.Context, s Store, events []NewEvent) []Enqueued {
	if b, ok := s.(BatchEnqueuer); ok {
		out, err := b.EnqueueBatch(ctx, events)
		if err != nil {
			out = make([]Enqueued, len(events))
			for i := range out {
				out[i].Err = err
			}
		}
		return out
	}
	out := make([]Enqueued, len(events))
	for i, e := range events {
		rec, created, err := s.Enqueue(ctx, e.Stream, e.ID, e.Payload)
		out[i] = Enqueued{Record: rec, Created: created, Err: err}
	}
	return out
}

// LeaseSave is one Save of a batch (BatchSaver): updates through a lease.
type LeaseSave struct {
	Lease   Lease
	Updates []Update
}

// BatchSaver is a Store that can make several Saves, of one stream or of
// many, in one transaction: one commit, and one wait for the disk, for
// all of them (group commit). It is optional: a worker hands the Saves
// that are ready together to SaveBatch when its store has it, and to Save
// one at a time otherwise (SaveEach). memstore has none, as it has no
// EnqueueBatch: in memory, there is no commit to share (and a test's
// store that embeds one to fault its Save keeps every save its own).
type BatchSaver interface {
	// SaveBatch makes each save as Save would, in one transaction. Each
	// save's outcome is its own, in order: one that Save would refuse
	// (ErrStaleLease, ErrInvalidWrite, ErrBadArgument) gets that error
	// and changes nothing, and the others are made all the same. So
	// fencing stays exact per stream: a stale lease fails its own
	// stream's updates only, never its neighbours' in the batch. Saves
	// through one lease are made in batch order, each checked against
	// what the one before it left. The call's own error (the store
	// unavailable, ctx ended) means that no save was made, or, with
	// ErrUnknown, that it is not known whether they all were (all or
	// none). SaveBatch must not keep saves, or anything they point to,
	// after it returns.
	SaveBatch(ctx context.Context, saves []LeaseSave) ([]error, error)
}

// SaveEach makes the saves with s's SaveBatch if it has one, and
// otherwise with one Save each, in order, and returns each save's error:
// its own, or the call's (with SaveBatch, an error of the call is every
// save's).
func SaveEach(ctx context.Context, s Store, saves []LeaseSave) []error {
	if b, ok := s.(BatchSaver); ok {
		out, err := b.SaveBatch(ctx, saves)
		if err != nil {
			out = make([]error, len(saves))
			for i := range out {
				out[i] = err
			}
		}
		return out
	}
	out := make([]error, len(saves))
	for i, sv := range saves {
		out[i] = s.Save(ctx, sv.Lease, sv.Updates)
	}
	return out
}

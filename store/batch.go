package store

import "context"

// NewEvent is one event of a batch to enqueue (BatchEnqueuer).
type NewEvent struct {
	Stream  string
	ID      string
	Payload []byte
}

// Enqueued is what EnqueueBatch did with one event: what Enqueue would
// have returned for it.
type Enqueued struct {
	Record  Record
	Created bool
	Err     error
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

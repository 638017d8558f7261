package sqlcore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
)

// Enqueues, one or a batch, take the same few statements however many
// events and streams they hold: one locks the streams' rows (creating
// those that have none, and reading the store's clock) and one finds the
// IDs already taken, sent together; one inserts the events, one their deliveries, and
// one moves each stream's last Seq and due instant. A duplicate costs a
// read of its record.

// Enqueue implements store.Store: EnqueueBatch of one event.
func (c *Core) Enqueue(ctx context.Context, stream, id string, payload []byte) (store.Record, bool, error) {
	out, err := c.EnqueueBatch(ctx, []store.NewEvent{{Stream: stream, ID: id, Payload: payload}})
	if err != nil {
		return store.Record{}, false, err
	}
	return out[0].Record, out[0].Created, out[0].Err
}

// EnqueueBatch implements store.BatchEnqueuer: the events in one
// transaction. Their streams are locked in name order (as SaveBatch
// locks them, so that two batches never wait for each other in a cycle),
// and each stream's events get their Seqs in batch order.
func (c *Core) EnqueueBatch(ctx context.Context, events []store.NewEvent) ([]store.Enqueued, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]store.Enqueued, len(events))
	var valid []int // the events to write
	var streams, ids []string
	for i, e := range events {
		if err := store.CheckEnqueue(e.Stream, e.ID); err != nil {
			out[i].Err = err
			continue
		}
		valid = append(valid, i)
		streams, ids = append(streams, e.Stream), append(ids, e.ID)
	}
	if len(valid) == 0 {
		return out, nil
	}
	streams, ids = sortedSet(streams), sortedSet(ids)
	err := c.writeUnclocked(ctx, "enqueue", func(tx Tx) error {
		locked, taken, now, err := c.lockStreams(ctx, tx, streams, ids)
		if err != nil {
			return err
		}
		e := enqueueWork{events: events, out: out, lastSeq: locked.lastSeq, taken: taken, now: now}
		for _, i := range valid { // a try again starts afresh
			if err := e.place(ctx, c, tx, i); err != nil {
				return err
			}
			if h := locked.held[events[i].Stream]; e.out[i].Err == nil && h.ValidAt(instant(now)) {
				e.out[i].HeldBy = h.Owner
			}
		}
		return e.write(ctx, c, tx, streams)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// enqueueWork is a batch of enqueues as its events are placed.
type enqueueWork struct {
	events  []store.NewEvent
	out     []store.Enqueued
	lastSeq map[string]int64  // each stream's last Seq, as the batch moves it
	taken   map[string]string // each ID already stored, with its stream
	now     int64
	created []int          // the events to insert, in batch order
	first   map[string]int // the event of the batch that created each ID
}

// place decides what becomes of event i: a duplicate of a stored record
// or of an earlier event of the batch, a refusal (its ID is another
// stream's), or a new record with the stream's next Seq.
func (e *enqueueWork) place(ctx context.Context, c *Core, tx Tx, i int) error {
	ev := e.events[i]
	if owner, ok := e.taken[ev.ID]; ok {
		if owner != ev.Stream {
			e.out[i] = store.Enqueued{Err: fmt.Errorf("%w: enqueue %q on stream %q: the ID belongs to stream %q", store.ErrBadArgument, ev.ID, ev.Stream, owner)}
			return nil
		}
		if j, ok := e.first[ev.ID]; ok {
			e.out[i] = store.Enqueued{Record: e.out[j].Record}
			return nil
		}
		rec, _, err := c.load(ctx, tx, ev.ID, false)
		e.out[i] = store.Enqueued{Record: rec}
		return err
	}
	payload := ev.Payload
	if payload == nil {
		payload = []byte{}
	}
	e.lastSeq[ev.Stream]++
	e.taken[ev.ID] = ev.Stream
	if e.first == nil {
		e.first = map[string]int{}
	}
	e.first[ev.ID] = i
	e.created = append(e.created, i)
	e.out[i] = store.Enqueued{Created: true, Record: store.Record{
		Event:    store.Event{Stream: ev.Stream, ID: ev.ID, Seq: uint64(e.lastSeq[ev.Stream]), Payload: payload, AcceptedAt: instant(e.now)},
		Delivery: store.Delivery{State: machine.Pending, NextAt: instant(e.now)},
	}}
	return nil
}

// write inserts the new events and their deliveries, and moves the last
// Seq and the due instant of each stream that has one.
func (e *enqueueWork) write(ctx context.Context, c *Core, tx Tx, streams []string) error {
	for part := range slices.Chunk(e.created, chunk) {
		var evRows, dlRows []string
		var evArgs, dlArgs []any
		for k, i := range part {
			r := e.out[i].Record
			evRows = append(evRows, fmt.Sprintf("($%d, $%d, $%d, $%d, $%d)", 5*k+1, 5*k+2, 5*k+3, 5*k+4, 5*k+5))
			evArgs = append(evArgs, r.ID, r.Stream, int64(r.Seq), r.Payload, e.now)
			dlRows = append(dlRows, fmt.Sprintf("($%d, $%d, $%d, %d, $%d, $%d)", 4*k+1, 4*k+2, 4*k+3, machine.Pending, 4*k+4, 4*k+4))
			dlArgs = append(dlArgs, r.ID, r.Stream, int64(r.Seq), e.now)
		}
		if err := tx.Exec(ctx, `INSERT INTO events (id, stream, seq, payload, accepted_at) VALUES `+strings.Join(evRows, ", "), evArgs...); err != nil {
			return err
		}
		if err := tx.Exec(ctx, `INSERT INTO deliveries (id, stream, seq, state, next_at, budget_from) VALUES `+strings.Join(dlRows, ", "), dlArgs...); err != nil {
			return err
		}
	}
	var moved []string
	for _, s := range streams {
		if slices.ContainsFunc(e.created, func(i int) bool { return e.events[i].Stream == s }) {
			moved = append(moved, s)
		}
	}
	for part := range slices.Chunk(moved, chunk) {
		var rows []string
		args := []any{e.now}
		for k, s := range part {
			rows = append(rows, fmt.Sprintf("($%d, $%d%s)", 2*k+2, 2*k+3, c.d.Int))
			args = append(args, s, e.lastSeq[s])
		}
		if err := tx.Exec(ctx, `UPDATE streams SET last_seq = v.column2, `+enqueuedDue+`
			FROM (VALUES `+strings.Join(rows, ", ")+`) AS v WHERE streams.name = v.column1`, args...); err != nil {
			return err
		}
	}
	return nil
}

// lockedStreams is what an enqueue reads of its streams' rows as it
// locks them: each one's last Seq, and its lease.
type lockedStreams struct {
	lastSeq map[string]int64
	held    map[string]store.Held
}

// lockStreams locks the rows of streams (sorted), in name order,
// creating those that have none, and returns each one's last Seq and
// lease, the stream of each of ids (sorted) already stored, and the
// store's now, read in the first statement that locks. The streams' lock
// and the IDs' read go out together (queryAll).
func (c *Core) lockStreams(ctx context.Context, tx Tx, streams, ids []string) (locked lockedStreams, taken map[string]string, now int64, err error) {
	now, clocked := c.hostClock()
	locked = lockedStreams{lastSeq: make(map[string]int64, len(streams)), held: make(map[string]store.Held, len(streams))}
	lock := func(names []string) Query {
		clock := "0"
		if !clocked {
			clock = c.d.Now
		}
		return Query{
			SQL: `SELECT name, last_seq, lease_owner, lease_token, lease_expires, lease_released, ` + clock + ` FROM streams
				WHERE name IN (` + placeholders(1, len(names)) + `) ORDER BY name` + c.d.Lock,
			Args: anys(names),
			Each: func(row Row) error {
				var name string
				var seq, token, expires, us int64
				var held store.Held
				if err := row.Scan(&name, &seq, &held.Owner, &token, &expires, &held.Released, &us); err != nil {
					return err
				}
				held.Token, held.Expires = uint64(token), instant(expires)
				locked.lastSeq[name], locked.held[name] = seq, held
				if !clocked {
					now, clocked = us, true
				}
				return nil
			},
		}
	}
	var qs []Query
	for part := range slices.Chunk(streams, chunk) {
		qs = append(qs, lock(part))
	}
	taken = make(map[string]string)
	for part := range slices.Chunk(ids, chunk) {
		qs = append(qs, Query{
			SQL:  `SELECT id, stream FROM events WHERE id IN (` + placeholders(1, len(part)) + `)`,
			Args: anys(part),
			Each: func(row Row) error {
				var id, stream string
				err := row.Scan(&id, &stream)
				taken[id] = stream
				return err
			},
		})
	}
	if err := queryAll(ctx, tx, qs); err != nil {
		return lockedStreams{}, nil, 0, err
	}
	missing := slices.DeleteFunc(slices.Clone(streams), func(s string) bool { _, ok := locked.lastSeq[s]; return ok })
	for part := range slices.Chunk(missing, chunk) {
		if err := tx.Exec(ctx, `INSERT INTO streams (name) VALUES (`+strings.Join(strings.Split(placeholders(1, len(part)), ", "), "), (")+`)
			ON CONFLICT (name) DO NOTHING`, anys(part)...); err != nil {
			return lockedStreams{}, nil, 0, err
		}
		if err := queryAll(ctx, tx, []Query{lock(part)}); err != nil {
			return lockedStreams{}, nil, 0, err
		}
	}
	if !clocked { // no stream at all: cannot happen, but read the clock
		if now, err = c.clock(ctx, tx); err != nil {
			return lockedStreams{}, nil, 0, err
		}
	}
	return locked, taken, now, nil
}

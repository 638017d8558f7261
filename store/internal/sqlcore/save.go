package sqlcore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/store"
)

// Saves, one or a batch, take the same few statements however many
// streams and records they touch: one locks the streams' rows (and reads
// the store's clock) and one locks and reads the records, sent together;
// one writes the records that change, one refreshes the streams' due
// instants. Every
// check is made in Go between the reads and the writes, so a refused
// save writes nothing and the others go on. Lists longer than chunk are
// split, to stay within the databases' limits on parameters.
const chunk = 500

// Save implements store.Store: SaveBatch of one save.
func (c *Core) Save(ctx context.Context, l store.Lease, ups []store.Update) error {
	errs, err := c.SaveBatch(ctx, []store.LeaseSave{{Lease: l, Updates: ups}})
	if err != nil {
		return err
	}
	return errs[0]
}

// SaveBatch implements store.BatchSaver: the saves in one transaction,
// at one instant of the store's clock. The streams' rows are locked
// first, in name order (as EnqueueBatch locks them, so that two batches
// never wait for each other in a cycle), then the records' rows, and
// then the saves are checked and applied in batch order, each against
// what the saves before it left.
func (c *Core) SaveBatch(ctx context.Context, saves []store.LeaseSave) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(saves) == 0 {
		return []error{}, nil
	}
	refused := make([]error, len(saves)) // before the transaction, for good
	var streams, ids []string
	for i, sv := range saves {
		if refused[i] = checkSave(sv); refused[i] == nil {
			streams = append(streams, sv.Lease.Stream)
			for _, u := range sv.Updates {
				ids = append(ids, u.ID)
			}
		}
	}
	streams, ids = sortedSet(streams), sortedSet(ids)
	out := make([]error, len(saves))
	err := c.writeUnclocked(ctx, "save", func(tx Tx) error {
		copy(out, refused) // a try again starts afresh
		qs, held, recs, now := c.lockQueries(streams, ids)
		if err := queryAll(ctx, tx, qs); err != nil {
			return err
		}
		w := saveWork{recs: recs, now: now()}
		for i, sv := range saves {
			if refused[i] == nil {
				out[i] = w.apply(held, sv)
			}
		}
		if err := c.writeDeliveries(ctx, tx, w.changed, recs); err != nil {
			return err
		}
		return refreshDueOf(ctx, tx, sortedSet(w.streams))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkSave refuses what no transaction needs to see: a lease or an
// update ID that is not text (before a query a database may refuse).
func checkSave(sv store.LeaseSave) error {
	if err := store.CheckLease("save", sv.Lease); err != nil {
		return err
	}
	for _, u := range sv.Updates {
		if err := store.CheckName("save", "update id", u.ID); err != nil {
			return err
		}
	}
	return nil
}

// sortedSet sorts s and drops its repeats.
func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// saveWork is the records of a batch as its saves leave them.
type saveWork struct {
	recs    map[string]*store.Record // the locked records, by ID
	now     int64
	changed []string // IDs to write, in the order they first changed
	streams []string // streams with a save made, whose due instant to refresh
}

// apply checks sv against its lease and its records as the saves before
// it left them, and, if every update passes, applies them all. It
// returns the save's refusal; nothing of a refused save is applied.
func (w *saveWork) apply(held map[string]store.Held, sv store.LeaseSave) error {
	l := sv.Lease
	h, ok := held[l.Stream]
	if !ok {
		return store.CheckHeld("save", store.Held{}, l, time.Time{})
	}
	if err := store.CheckHeld("save", h, l, instant(w.now)); err != nil {
		return err
	}
	next := make([]store.Record, len(sv.Updates))
	seen := make(map[string]bool, len(sv.Updates))
	for i, u := range sv.Updates {
		if seen[u.ID] {
			return fmt.Errorf("%w: record %q: appears twice in the batch", store.ErrInvalidWrite, u.ID)
		}
		seen[u.ID] = true
		r, ok := w.recs[u.ID]
		switch {
		case !ok:
			return fmt.Errorf("%w: record %q: no such record", store.ErrInvalidWrite, u.ID)
		case r.Stream != l.Stream:
			return fmt.Errorf("%w: record %q: belongs to stream %q, not the lease's stream %q", store.ErrInvalidWrite, u.ID, r.Stream, l.Stream)
		}
		next[i] = *r
		u.NextAt = Normalize(u.NextAt)
		if err := store.CheckUpdate(&next[i], &u); err != nil {
			return err
		}
	}
	for i, u := range sv.Updates {
		if next[i].State.Terminal() {
			continue // checked equal: a terminal record never changes at all
		}
		u.NextAt = Normalize(u.NextAt)
		store.Apply(&next[i], u, instant(w.now))
		if !slices.Contains(w.changed, u.ID) {
			w.changed = append(w.changed, u.ID)
		}
		*w.recs[u.ID] = next[i]
	}
	if len(sv.Updates) > 0 {
		w.streams = append(w.streams, l.Stream)
	}
	return nil
}

// placeholders returns "$from, $from+1, ..." for n parameters.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", from+i)
	}
	return b.String()
}

// anys returns s as query arguments.
func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// lockQueries lock the rows of streams (sorted) and then those of the
// records ids (sorted), in name order, and fill in the leases (none for
// a stream with no row), the records, and the store's now, read in the
// first statement. They go out together (queryAll): neither depends on
// the other's answer.
func (c *Core) lockQueries(streams, ids []string) (qs []Query, held map[string]store.Held, recs map[string]*store.Record, now func() int64) {
	us, clocked := c.hostClock()
	clock := "0"
	if !clocked {
		clock = c.d.Now
	}
	held = make(map[string]store.Held, len(streams))
	for part := range slices.Chunk(streams, chunk) {
		qs = append(qs, Query{
			SQL: `SELECT name, lease_owner, lease_token, lease_expires, lease_released, ` + clock + `
				FROM streams WHERE name IN (` + placeholders(1, len(part)) + `) ORDER BY name` + c.d.Lock,
			Args: anys(part),
			Each: func(row Row) error {
				var name string
				var h store.Held
				var token, expires, read int64
				if err := row.Scan(&name, &h.Owner, &token, &expires, &h.Released, &read); err != nil {
					return err
				}
				h.Token, h.Expires = uint64(token), instant(expires)
				held[name] = h
				if !clocked {
					us, clocked = read, true // the first row's reading, for every save
				}
				return nil
			},
		})
	}
	recs = make(map[string]*store.Record, len(ids))
	for part := range slices.Chunk(ids, chunk) {
		qs = append(qs, Query{
			SQL: `SELECT ` + deliveryCols + `, d.id FROM deliveries d
				WHERE d.id IN (` + placeholders(1, len(part)) + `) ORDER BY d.id` + c.d.Lock,
			Args: anys(part),
			Each: func(row Row) error {
				var id string
				r := new(store.Record)
				if err := scanDelivery(row, r, &id); err != nil {
					return err
				}
				r.ID = id
				recs[id] = r
				return nil
			},
		})
	}
	return qs, held, recs, func() int64 { return us }
}

// deliveryValues is the columns a write of a delivery sets, in the
// order writeDeliveries passes them.
const deliveryValues = 10

// writeDeliveries writes the delivery state, last outcome and settling
// of the records ids name, in one statement per chunk: an UPDATE from a
// list of VALUES, whose columns both databases name column1, column2 ...
func (c *Core) writeDeliveries(ctx context.Context, tx Tx, ids []string, recs map[string]*store.Record) error {
	for part := range slices.Chunk(ids, chunk) {
		var rows []string
		args := make([]any, 0, len(part)*deliveryValues)
		for i, id := range part {
			r := recs[id]
			n := i*deliveryValues + 1
			rows = append(rows, fmt.Sprintf("($%d, $%d%s, $%d%s, $%d%s, $%d%s, $%d%s, $%d%s, $%d, $%d%s, $%d%s)",
				n, n+1, c.d.Int, n+2, c.d.Int, n+3, c.d.Int, n+4, c.d.Int, n+5, c.d.Int, n+6, c.d.Int, n+7, n+8, c.d.Int, n+9, c.d.Int))
			args = append(args, id, int64(r.State), int64(r.Attempts), micros(r.NextAt), int64(r.Reason),
				int64(r.Last.Attempt), int64(r.Last.Status), r.Last.Detail, micros(r.LastAt), micros(r.SettledAt))
		}
		err := tx.Exec(ctx, `UPDATE deliveries SET state = v.column2, attempts = v.column3, next_at = v.column4,
			reason = v.column5, last_attempt = v.column6, last_status = v.column7, last_detail = v.column8,
			last_at = v.column9, settled_at = v.column10
			FROM (VALUES `+strings.Join(rows, ", ")+`) AS v WHERE deliveries.id = v.column1`, args...)
		if err != nil {
			return err
		}
	}
	return nil
}

// refreshDueOf is refreshDue for each of streams, in one statement per
// chunk.
func refreshDueOf(ctx context.Context, tx Tx, streams []string) error {
	for part := range slices.Chunk(streams, chunk) {
		err := tx.Exec(ctx, `UPDATE streams SET due = CASE
			WHEN EXISTS (SELECT 1 FROM deliveries d WHERE d.stream = streams.name AND d.state = 3) THEN streams.release_until
			ELSE (SELECT CASE WHEN MIN(d.next_at) < streams.release_until THEN streams.release_until ELSE MIN(d.next_at) END
				FROM deliveries d WHERE d.stream = streams.name AND d.state IN (1, 2))
			END WHERE name IN (`+placeholders(1, len(part))+`)`, anys(part)...)
		if err != nil {
			return err
		}
	}
	return nil
}

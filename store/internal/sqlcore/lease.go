package sqlcore

import (
	"context"
	"fmt"
	"time"

	"github.com/courierlab/courier/store"
)

// ensureStream creates stream's row if it has none.
func (c *Core) ensureStream(ctx context.Context, tx Tx, stream string) error {
	return tx.Exec(ctx, `INSERT INTO streams (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, stream)
}

// lockOrCreateStream locks stream's row, creating it first if it has
// none: the common case, an existing stream, costs one statement.
func (c *Core) lockOrCreateStream(ctx context.Context, tx Tx, stream string) error {
	if _, _, ok, err := c.lockStream(ctx, tx, stream); ok || err != nil {
		return err
	}
	if err := c.ensureStream(ctx, tx, stream); err != nil {
		return err
	}
	_, _, _, err := c.lockStream(ctx, tx, stream)
	return err
}

// lockStream reads stream's row and, where the dialect locks, holds it
// until commit. ok is false if the stream has no row.
func (c *Core) lockStream(ctx context.Context, tx Tx, stream string) (h store.Held, lastSeq uint64, ok bool, err error) {
	return c.readStream(ctx, tx, stream, c.d.Lock)
}

// readStream reads stream's row, with lock appended to the query.
func (c *Core) readStream(ctx context.Context, tx Tx, stream, lock string) (h store.Held, lastSeq uint64, ok bool, err error) {
	var token, expires, seq int64
	var released bool
	err = tx.QueryRow(ctx, `SELECT last_seq, lease_owner, lease_token, lease_expires, lease_released
		FROM streams WHERE name = $1`+lock, stream).Scan(&seq, &h.Owner, &token, &expires, &released)
	if c.d.NoRows(err) {
		return store.Held{}, 0, false, nil
	}
	if err != nil {
		return store.Held{}, 0, false, err
	}
	h.Token, h.Expires, h.Released = uint64(token), instant(expires), released
	return h, uint64(seq), true, nil
}

// held locks l's stream and checks that l is its valid lease at now.
func (c *Core) held(ctx context.Context, tx Tx, op string, l store.Lease, now int64) (store.Held, error) {
	h, _, _, err := c.lockStream(ctx, tx, l.Stream)
	if err != nil {
		return store.Held{}, err
	}
	return h, store.CheckHeld(op, h, l, instant(now))
}

// grant gives owner a lease of ttl on stream under the next token.
func (c *Core) grant(ctx context.Context, tx Tx, stream, owner string, now int64, ttl time.Duration) (store.Lease, error) {
	token, err := c.nextToken(ctx, tx)
	if err != nil {
		return store.Lease{}, err
	}
	expires := now + ceilMicros(ttl)
	if err := tx.Exec(ctx, `UPDATE streams SET lease_owner = $2, lease_token = $3, lease_expires = $4, lease_released = FALSE
		WHERE name = $1`, stream, owner, int64(token), expires); err != nil {
		return store.Lease{}, err
	}
	return store.Lease{Stream: stream, Owner: owner, Token: token, Expires: instant(expires)}, nil
}

func (c *Core) nextToken(ctx context.Context, tx Tx) (uint64, error) {
	var token int64
	if err := tx.QueryRow(ctx, c.d.NextToken).Scan(&token); err != nil {
		return 0, fmt.Errorf("drawing a token: %w", err)
	}
	return uint64(token), nil
}

// ClaimDue implements store.Store.
func (c *Core) ClaimDue(ctx context.Context, owner string, ttl time.Duration, max int) ([]store.Lease, error) {
	if err := store.CheckName("claim due", "owner", owner); err != nil {
		return nil, err
	}
	switch {
	case ttl <= 0:
		return nil, fmt.Errorf("%w: claim due for %q: ttl %v is not positive", store.ErrBadArgument, owner, ttl)
	case max < 1:
		return nil, fmt.Errorf("%w: claim due for %q: max %d is below 1", store.ErrBadArgument, owner, max)
	}
	var out []store.Lease
	err := c.write(ctx, "claim due", func(tx Tx, now int64) error {
		out = out[:0]
		// streams_due in its order: earliest due first, ties by name.
		rows, err := tx.Query(ctx, `SELECT name FROM streams
			WHERE due IS NOT NULL AND due <= $1
			AND NOT (lease_token <> 0 AND NOT lease_released AND lease_expires > $1)
			ORDER BY due, name LIMIT $2`+c.d.SkipLocked, now, max)
		if err != nil {
			return err
		}
		var names []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			names = append(names, name)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, name := range names {
			l, err := c.grant(ctx, tx, name, owner, now, ttl)
			if err != nil {
				return err
			}
			out = append(out, l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Acquire implements store.Store.
func (c *Core) Acquire(ctx context.Context, stream, owner string, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckName("acquire", "stream", stream); err != nil {
		return store.Lease{}, err
	}
	if err := store.CheckName("acquire", "owner", owner); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, fmt.Errorf("%w: acquire stream %q: ttl %v is not positive", store.ErrBadArgument, stream, ttl)
	}
	var l store.Lease
	err := c.write(ctx, "acquire", func(tx Tx, now int64) error {
		if err := c.lockOrCreateStream(ctx, tx, stream); err != nil {
			return err
		}
		h, _, _, err := c.lockStream(ctx, tx, stream)
		if err != nil {
			return err
		}
		if h.ValidAt(instant(now)) {
			// The same owner is refused too: it must Renew, so that a
			// lease is only ever extended under the token it was granted.
			return fmt.Errorf("%w: acquire stream %q for %q: held by %q with token %d until %s",
				store.ErrLeaseHeld, stream, owner, h.Owner, h.Token, h.Expires.Format(time.RFC3339Nano))
		}
		l, err = c.grant(ctx, tx, stream, owner, now, ttl)
		return err
	})
	return l, err
}

// Renew implements store.Store.
func (c *Core) Renew(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLease("renew", l); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, fmt.Errorf("%w: renew stream %q: ttl %v is not positive", store.ErrBadArgument, l.Stream, ttl)
	}
	var out store.Lease
	err := c.write(ctx, "renew", func(tx Tx, now int64) error {
		h, err := c.held(ctx, tx, "renew", l, now)
		if err != nil {
			return err
		}
		if until := now + ceilMicros(ttl); until > micros(h.Expires) {
			if err := tx.Exec(ctx, `UPDATE streams SET lease_expires = $2 WHERE name = $1`, l.Stream, until); err != nil {
				return err
			}
			h.Expires = instant(until)
		}
		out = h.Lease(l.Stream)
		return nil
	})
	return out, err
}

// ceilMicros is d in whole microseconds, rounded up: a positive ttl
// always gives a lease at least one microsecond long.
func ceilMicros(d time.Duration) int64 { return int64((d + time.Microsecond - 1) / time.Microsecond) }

package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// pauses records which streams an operator paused, in a table of the
// same database the store uses, so every courier serve process sharing
// that database sees the same pauses.
//
// How a pause acts: the worker asks the delivery policy of a stream each
// time it takes the stream over, and the policy of a paused stream is an
// error, so the worker gives the lease straight back and starts nothing.
// A pause therefore stops every takeover at once, on every process. The
// worker asks again at each lease renewal, so one that owns the stream at
// the moment of the pause sees it within RenewEvery: it starts nothing
// more, persists the replies of the attempts it has out, and gives the
// stream back once they are in. Publishing to a paused stream still
// works: events wait, durably, for the resume.
type pauses struct {
	db      *sql.DB
	dollars bool   // placeholders are $1 (PostgreSQL), not ? (SQLite)
	table   string // courier_paused_streams, prefixed with the store's schema on PostgreSQL
}

const pauseSchema = `CREATE TABLE IF NOT EXISTS courier_paused_streams (
	stream    TEXT PRIMARY KEY,
	paused_by TEXT NOT NULL,
	paused_at TEXT NOT NULL
)`

func openPauses(ctx context.Context, driver, dsn, schema string) (*pauses, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("pauses: %w", err)
	}
	p := &pauses{db: db, dollars: driver == "pgx", table: schema + "courier_paused_streams"}
	if _, err := db.ExecContext(ctx, strings.Replace(pauseSchema, "courier_paused_streams", p.table, 1)); err != nil {
		db.Close()
		return nil, fmt.Errorf("pauses: creating the table: %w", err)
	}
	return p, nil
}

func (p *pauses) q(s string) string {
	s = strings.ReplaceAll(s, "courier_paused", p.table)
	if p.dollars {
		return s
	}
	return strings.NewReplacer("$1", "?", "$2", "?", "$3", "?").Replace(s)
}

// Pause marks stream paused; pausing a paused stream changes nothing.
func (p *pauses) Pause(ctx context.Context, stream, by string) error {
	_, err := p.db.ExecContext(ctx, p.q(`INSERT INTO courier_paused (stream, paused_by, paused_at) VALUES ($1, $2, $3)
		ON CONFLICT (stream) DO NOTHING`), stream, by, time.Now().UTC().Format(time.RFC3339Nano))
	return err
}

// Resume unmarks stream; resuming a running stream changes nothing.
func (p *pauses) Resume(ctx context.Context, stream string) error {
	_, err := p.db.ExecContext(ctx, p.q(`DELETE FROM courier_paused WHERE stream = $1`), stream)
	return err
}

// Paused reports whether stream is paused.
func (p *pauses) Paused(ctx context.Context, stream string) (bool, error) {
	var n int
	err := p.db.QueryRowContext(ctx, p.q(`SELECT count(*) FROM courier_paused WHERE stream = $1`), stream).Scan(&n)
	return n > 0, err
}

func (p *pauses) Close() error { return p.db.Close() }

package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite"
)

// loopBatch is how many items the hand-written loop takes per
// transaction: issue 26's yardstick.
const loopBatch = 100

// loopDrainSQLite is the yardstick for courier's SQLite drain: a
// hand-written loop over one table, in a file with sqlitestore's pragmas
// (WAL, synchronous FULL), that takes the 100 oldest waiting items,
// delivers them to nothing and marks them done in one transaction, until
// none waits. It has no streams, leases, attempts or retries.
func loopDrainSQLite(ctx context.Context, o options) (result, error) {
	dir, err := os.MkdirTemp("", "riverbench")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "loop.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := loopFill(ctx, db, o.events); err != nil {
		return result{}, err
	}
	start := time.Now()
	var done int64
	for {
		n, err := loopPass(ctx, db)
		if err != nil {
			return result{}, err
		}
		if n == 0 {
			break
		}
		done += int64(n)
	}
	if done != int64(o.events) {
		return result{}, fmt.Errorf("the loop delivered %d of %d", done, o.events)
	}
	return result{rate: float64(done) / time.Since(start).Seconds(), delivered: done, xacts: math.NaN()}, nil
}

// loopFill creates the table and stores n waiting items in one
// transaction, untimed.
func loopFill(ctx context.Context, db *sql.DB, n int) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (id INTEGER PRIMARY KEY, stream TEXT NOT NULL, payload BLOB NOT NULL, done INTEGER NOT NULL DEFAULT 0);
CREATE INDEX items_waiting ON items (id) WHERE done = 0`); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i := range n {
		if _, err := tx.ExecContext(ctx, "INSERT INTO items (stream, payload) VALUES (?, ?)", fmt.Sprintf("s%02d", i%8), []byte(`{}`)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// loopPass delivers up to loopBatch waiting items in one transaction and
// returns how many.
func loopPass(ctx context.Context, db *sql.DB) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, "SELECT id, payload FROM items WHERE done = 0 ORDER BY id LIMIT ?", loopBatch)
	if err != nil {
		return 0, err
	}
	var ids []any
	for rows.Next() {
		var id int64
		var payload []byte
		if err := rows.Scan(&id, &payload); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id) // delivered: the no-op consumer
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	marks := strings.Repeat(",?", len(ids))[1:]
	if _, err := tx.ExecContext(ctx, "UPDATE items SET done = 1 WHERE id IN ("+marks+")", ids...); err != nil {
		return 0, err
	}
	return len(ids), tx.Commit()
}

// This file proves what SaveBatch does that no backend test can see: it
// locks the streams of a batch in one statement, in name order, each
// stream once, before any save, reading the database's clock in that
// statement; and a batch run again after a retryable conflict reports
// the outcomes of the attempt that committed. A scripted transaction
// records the statements and serves the stream rows.
package sqlcore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
)

// streamsDB serves stream rows from tokens, one map per transaction (the
// last one again once they run out), fails commits where told, and
// records the statements that lock streams.
type streamsDB struct {
	tokens    []map[string]int64 // the current token of each stream that has a row
	commitErr []error
	begins    int
	locks     []string // each stream-locking statement: its streams, its clock column
}

func (d *streamsDB) Begin(context.Context, bool) (Tx, error) {
	d.begins++
	return &streamsTx{d: d, tokens: d.tokens[min(d.begins, len(d.tokens))-1]}, nil
}

type streamsTx struct {
	d      *streamsDB
	tokens map[string]int64
}

func (t *streamsTx) Exec(context.Context, string, ...any) error { return nil }
func (t *streamsTx) QueryRow(_ context.Context, q string, _ ...any) Row {
	return errRow{errors.New("not used: " + q)}
}
func (t *streamsTx) Commit(context.Context) error   { return pop(&t.d.commitErr) }
func (t *streamsTx) Rollback(context.Context) error { return nil }

// batchNow is the database's clock in the fake, in microseconds.
var batchNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Query serves the streams' rows, in the order asked (the statement must
// sort them by name and lock them), and no delivery row.
func (t *streamsTx) Query(_ context.Context, q string, args ...any) (Rows, error) {
	if !strings.Contains(q, "FROM streams") {
		return &listRows{}, nil
	}
	if !strings.Contains(q, "ORDER BY name FOR UPDATE") {
		return nil, errors.New("streams read unlocked or unordered: " + q)
	}
	col := strings.TrimSpace(q[strings.Index(q, "lease_released,")+len("lease_released,") : strings.Index(q, "FROM")])
	var names []string
	rows := &listRows{}
	for _, a := range args {
		name := a.(string)
		names = append(names, name)
		if token, ok := t.tokens[name]; ok {
			rows.rows = append(rows.rows, fakeRow{name, "w", token, batchNow.Add(time.Minute).UnixMicro(), false, batchNow.UnixMicro()})
		}
	}
	t.d.locks = append(t.d.locks, strings.Join(names, " ")+" "+col)
	return rows, nil
}

// listRows is a result set of fake rows.
type listRows struct {
	rows []fakeRow
	at   int
}

func (r *listRows) Next() bool             { r.at++; return r.at <= len(r.rows) }
func (r *listRows) Scan(dest ...any) error { return r.rows[r.at-1].Scan(dest...) }
func (r *listRows) Err() error             { return nil }
func (r *listRows) Close()                 {}

// batchDialect reads the database's clock as CLOCK.
var batchDialect = Dialect{
	Now: "CLOCK", Lock: " FOR UPDATE",
	NoRows:  func(err error) bool { return errors.Is(err, errNoRow) },
	Retry:   func(err error) bool { return errors.Is(err, errConflict) },
	Certain: func(err error) bool { return errors.Is(err, errRefused) || errors.Is(err, errConflict) },
}

func lease(stream string, token uint64) store.Lease {
	return store.Lease{Stream: stream, Owner: "w", Token: token, Expires: batchNow.Add(time.Minute)}
}

func TestSaveBatchLocksStreamsInNameOrder(t *testing.T) {
	db := &streamsDB{tokens: []map[string]int64{{"a": 1, "b": 1, "c": 1}}}
	saves := []store.LeaseSave{
		{Lease: lease("c", 1)}, {Lease: lease("a", 1)}, {Lease: lease("b\xff", 1)},
		{Lease: lease("b", 1)}, {Lease: lease("a", 1)}, {Lease: lease("0-gone", 1)},
	}
	errs, err := New(db, batchDialect, nil).SaveBatch(t.Context(), saves)
	if err != nil {
		t.Fatal(err)
	}
	// One statement locks every stream of a valid lease, each once, in
	// name order, and reads the clock.
	want := []string{"0-gone a b c CLOCK"}
	if strings.Join(db.locks, ", ") != strings.Join(want, ", ") {
		t.Errorf("stream locks %q, want %q", db.locks, want)
	}
	for i, target := range []error{nil, nil, store.ErrBadArgument, nil, nil, store.ErrStaleLease} {
		if target == nil && errs[i] != nil || target != nil && !errors.Is(errs[i], target) {
			t.Errorf("save %d: %v, want %v", i, errs[i], target)
		}
	}
}

func TestSaveBatchRetriedReportsTheLastTry(t *testing.T) {
	// The first try finds b's token at 2 (the lease of token 1 is stale)
	// and meets a conflict at its commit; the second finds it at 1.
	db := &streamsDB{
		tokens:    []map[string]int64{{"a": 1, "b": 2}, {"a": 1, "b": 1}},
		commitErr: []error{errConflict},
	}
	errs, err := New(db, batchDialect, nil).SaveBatch(t.Context(), []store.LeaseSave{{Lease: lease("a", 1)}, {Lease: lease("b", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if db.begins != 2 {
		t.Errorf("transactions begun = %d, want 2", db.begins)
	}
	for i, e := range errs {
		if e != nil {
			t.Errorf("save %d: %v, want it made by the second try", i, e)
		}
	}
}

func TestSaveBatchFailureIsTheCalls(t *testing.T) {
	db := &streamsDB{tokens: []map[string]int64{{"a": 1}}, commitErr: []error{errRefused}}
	errs, err := New(db, batchDialect, nil).SaveBatch(t.Context(), []store.LeaseSave{{Lease: lease("a", 1)}, {Lease: lease("b", 1)}})
	if !errors.Is(err, store.ErrUnavailable) || errs != nil {
		t.Errorf("SaveBatch with its commit refused: %v, %v; want no outcomes and ErrUnavailable", errs, err)
	}
	db = &streamsDB{tokens: []map[string]int64{{"a": 1}}}
	if errs, err := New(db, batchDialect, nil).SaveBatch(t.Context(), nil); err != nil || errs == nil || len(errs) != 0 || db.begins != 0 {
		t.Errorf("an empty batch: %v, %v, %d transactions; want an empty slice, nil, none", errs, err, db.begins)
	}
}

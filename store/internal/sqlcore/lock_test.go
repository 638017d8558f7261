// This file proves the locking protocol of a stream that has no row yet:
// the Core inserts the row and then reads it again under the dialect's
// lock. The second read is what holds the row when a concurrent call won
// the insert (ours then inserts nothing, and so holds nothing); no test on
// a real database can time that race, so a recording transaction checks
// the statements instead.
package sqlcore

import (
	"context"
	"strings"
	"testing"
)

// recordingTx answers the first stream read with "no row" and records
// every statement.
type recordingTx struct {
	fakeTx
	reads int
	log   []string
}

func (t *recordingTx) Exec(_ context.Context, q string, _ ...any) error {
	t.log = append(t.log, "exec: "+q)
	return nil
}

func (t *recordingTx) QueryRow(_ context.Context, q string, _ ...any) Row {
	t.log = append(t.log, "read: "+q)
	t.reads++
	if t.reads == 1 {
		return errRow{errNoRow}
	}
	return fakeRow{int64(0), "", int64(0), int64(0), false}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func TestNewStreamRowIsLockedAfterItsInsert(t *testing.T) {
	d := Dialect{Lock: " FOR UPDATE", NoRows: func(err error) bool { return err == errNoRow }}
	c := New(&fakeDB{}, d, nil)
	tx := &recordingTx{}
	if err := c.lockOrCreateStream(t.Context(), tx, "s"); err != nil {
		t.Fatal(err)
	}
	if len(tx.log) != 3 {
		t.Fatalf("statements %q, want a locked read, the insert, a locked read", tx.log)
	}
	for i, want := range []string{"read: ", "exec: INSERT INTO streams", "read: "} {
		if !strings.HasPrefix(tx.log[i], want) {
			t.Errorf("statement %d is %q, want it to start %q", i, tx.log[i], want)
		}
	}
	for _, i := range []int{0, 2} {
		if !strings.HasSuffix(tx.log[i], " FOR UPDATE") {
			t.Errorf("read %d is %q, want it under the dialect's lock", i, tx.log[i])
		}
	}
}

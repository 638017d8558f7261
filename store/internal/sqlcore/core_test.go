// This file proves how a Core classifies failures, the part of the
// contract no in-process backend test can provoke: a failure before the
// commit is ErrUnavailable (nothing changed), a commit whose reply was
// lost is ErrUnknown (and still ctx.Err() when the context ended), a
// commit the database refused is ErrUnavailable, and a retryable conflict
// is run again.
package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/courierlab/courier/store"
)

var (
	errRefused  = errors.New("the server refused the commit")
	errConflict = errors.New("serialization failure")
	errNoRow    = errors.New("no row")
)

// fakeDB serves a stream row holding lease, and fails where told.
type fakeDB struct {
	lease              store.Lease
	execErr, commitErr []error // consumed one per transaction
	begins             int
}

func (d *fakeDB) Begin(context.Context, bool) (Tx, error) {
	d.begins++
	return &fakeTx{d: d}, nil
}

type fakeTx struct{ d *fakeDB }

func pop(errs *[]error) error {
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

func (t *fakeTx) Exec(context.Context, string, ...any) error { return pop(&t.d.execErr) }
func (t *fakeTx) Query(context.Context, string, ...any) (Rows, error) {
	return nil, errors.New("not used")
}
func (t *fakeTx) Commit(context.Context) error   { return pop(&t.d.commitErr) }
func (t *fakeTx) Rollback(context.Context) error { return nil }
func (t *fakeTx) QueryRow(context.Context, string, ...any) Row {
	l := t.d.lease
	return fakeRow{int64(0), l.Owner, int64(l.Token), l.Expires.UnixMicro(), false}
}

type fakeRow []any

func (r fakeRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("scan of %d columns into %d", len(r), len(dest))
	}
	for i, d := range dest {
		switch d := d.(type) {
		case *int64:
			*d = r[i].(int64)
		case *string:
			*d = r[i].(string)
		case *bool:
			*d = r[i].(bool)
		}
	}
	return nil
}

func TestFailureClasses(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	lease := store.Lease{Stream: "s", Owner: "w", Token: 7, Expires: now.Add(time.Minute)}
	d := Dialect{
		NoRows:  func(err error) bool { return errors.Is(err, errNoRow) },
		Retry:   func(err error) bool { return errors.Is(err, errConflict) },
		Certain: func(err error) bool { return errors.Is(err, errRefused) },
	}
	cancelled := fmt.Errorf("write: %w", context.Canceled)
	for _, c := range []struct {
		name            string
		execErr, commit []error
		want, notWant   []error
		wantBegins      int
	}{
		{"ok", nil, nil, nil, []error{store.ErrUnknown, store.ErrUnavailable}, 1},
		{"lost-before-commit", []error{io.ErrUnexpectedEOF}, nil, []error{store.ErrUnavailable}, []error{store.ErrUnknown}, 1},
		{"lost-commit-reply", nil, []error{io.ErrUnexpectedEOF}, []error{store.ErrUnknown}, []error{store.ErrUnavailable}, 1},
		{"cancelled-in-commit", nil, []error{cancelled}, []error{store.ErrUnknown, context.Canceled}, []error{store.ErrUnavailable}, 1},
		{"commit-refused", nil, []error{errRefused}, []error{store.ErrUnavailable}, []error{store.ErrUnknown}, 1},
		{"conflict-retried", []error{errConflict, errConflict}, nil, nil, []error{store.ErrUnknown, store.ErrUnavailable}, 3},
		{"conflicts-give-up", []error{errConflict, errConflict, errConflict, errConflict, errConflict, errConflict, errConflict, errConflict},
			nil, []error{store.ErrUnavailable}, []error{store.ErrUnknown}, maxTries},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := &fakeDB{lease: lease, execErr: c.execErr, commitErr: c.commit}
			err := New(db, d, func() time.Time { return now }).Release(t.Context(), lease)
			if c.want == nil && err != nil {
				t.Errorf("Release: %v, want nil", err)
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("Release: %v, want it to be %v", err, w)
				}
			}
			for _, w := range c.notWant {
				if errors.Is(err, w) {
					t.Errorf("Release: %v, must not be %v", err, w)
				}
			}
			if db.begins != c.wantBegins {
				t.Errorf("transactions begun = %d, want %d", db.begins, c.wantBegins)
			}
		})
	}
}

// This file proves that memstore passes the storetest conformance suite
// and that its extras (injected unavailability, the planted SkipFencing
// bug, Save's stricter checks) behave; nothing runs in parallel because
// the planted bug is process-wide.
package memstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
	"github.com/courierlab/courier/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) store.Store {
		return memstore.New(now)
	})
}

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

const ttl = 10 * time.Second

func newStore(t *testing.T) (*memstore.Store, *storetest.Clock) {
	t.Helper()
	c := storetest.NewClock(epoch)
	return memstore.New(c.Now), c
}

func acquire(t *testing.T, s *memstore.Store, stream, owner string) store.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), stream, owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func pending(t *testing.T, s *memstore.Store, l store.Lease) []machine.Record {
	t.Helper()
	recs, err := s.Pending(t.Context(), l, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func get(t *testing.T, s *memstore.Store, id string) machine.Record {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestUnavailableRefusesWritesOnly(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	enqueue(t, s, "a", "e1")
	enqueue(t, s, "b", "f1")
	l := acquire(t, s, "a", "w1")
	rec := pending(t, s, l)[0]
	rec.Attempts = 1

	down := true
	s.SetUnavailable(func() bool { return down })
	beforeA, beforeB := s.Records("a"), s.Records("b")
	writes := []struct {
		name string
		call func() error
	}{
		{"Enqueue new", func() error { _, _, err := s.Enqueue(ctx, "a", "new", nil); return err }},
		{"Enqueue known", func() error { _, _, err := s.Enqueue(ctx, "a", "e1", nil); return err }},
		{"ClaimDue", func() error { _, err := s.ClaimDue(ctx, "w2", ttl, 10); return err }},
		{"Acquire", func() error { _, err := s.Acquire(ctx, "b", "w2", ttl); return err }},
		{"Renew", func() error { _, err := s.Renew(ctx, l, time.Hour); return err }},
		{"Release", func() error { return s.Release(ctx, l) }},
		{"Save", func() error { return s.Save(ctx, l, []machine.Record{rec}) }},
	}
	for _, w := range writes {
		if err := w.call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s while unavailable: error = %v, want %v", w.name, err, store.ErrUnavailable)
		}
	}
	if diff := cmp.Diff(beforeA, s.Records("a")); diff != "" {
		t.Errorf("stream a changed while unavailable (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(beforeB, s.Records("b")); diff != "" {
		t.Errorf("stream b changed while unavailable (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, s.Streams()); diff != "" {
		t.Errorf("Streams while unavailable (-want +got):\n%s", diff)
	}

	// Reads keep working.
	if _, err := s.Get(ctx, "e1"); err != nil {
		t.Errorf("Get while unavailable: %v", err)
	}
	if _, err := s.Pending(ctx, l, 0); err != nil {
		t.Errorf("Pending while unavailable: %v", err)
	}
	if _, err := s.DeadLetters(ctx, "a"); err != nil {
		t.Errorf("DeadLetters while unavailable: %v", err)
	}

	// Back up: the refused calls left the lease as it was and granted none.
	down = false
	if got, err := s.Renew(ctx, l, time.Nanosecond); err != nil || !got.Expires.Equal(l.Expires) {
		t.Errorf("Renew after the refused Renew and Release = %+v, %v; want expiry %v", got, err, l.Expires)
	}
	if _, err := s.Acquire(ctx, "b", "w3", ttl); err != nil {
		t.Errorf("Acquire b after the refused ClaimDue and Acquire: %v", err)
	}
	if err := s.Save(ctx, l, []machine.Record{rec}); err != nil {
		t.Errorf("Save once available again: %v", err)
	}
}

func enqueue(t *testing.T, s *memstore.Store, stream, id string) {
	t.Helper()
	if _, _, err := s.Enqueue(t.Context(), stream, id, []byte("p-"+id)); err != nil {
		t.Fatal(err)
	}
}

// TestSaveStrictness covers the checks memstore makes beyond the suite:
// states and reasons must be well formed, a record appears once per
// batch, a terminal record may be saved again unchanged, and the error
// names the record.
func TestSaveStrictness(t *testing.T) {
	cases := []struct {
		name, reason string
		batch        func(r machine.Record) []machine.Record
		wantErr      error
	}{
		{"state-zero", "State 0 is no state", func(r machine.Record) []machine.Record {
			r.State = 0
			return []machine.Record{r}
		}, store.ErrInvalidWrite},
		{"state-unknown", "State 9 is no state", func(r machine.Record) []machine.Record {
			r.State = 9
			return []machine.Record{r}
		}, store.ErrInvalidWrite},
		{"dead-without-reason", "a dead letter keeps why it died", func(r machine.Record) []machine.Record {
			r.State, r.Reason = machine.Dead, machine.NotDead
			return []machine.Record{r}
		}, store.ErrInvalidWrite},
		{"dead-unknown-reason", "DeadReason 9 is no reason", func(r machine.Record) []machine.Record {
			r.State, r.Reason = machine.Dead, 9
			return []machine.Record{r}
		}, store.ErrInvalidWrite},
		{"reason-not-dead", "a reason is set only when dead", func(r machine.Record) []machine.Record {
			r.State, r.Reason = machine.Retry, machine.Expired
			return []machine.Record{r}
		}, store.ErrInvalidWrite},
		{"twice-in-batch", "two versions of one record in a batch are ambiguous", func(r machine.Record) []machine.Record {
			r2 := r
			r2.Attempts = 1
			return []machine.Record{r, r2}
		}, store.ErrInvalidWrite},
		{"terminal-unchanged", "re-saving a terminal record as it is changes nothing", func(r machine.Record) []machine.Record {
			r.State, r.Attempts = machine.Delivered, 1
			return []machine.Record{r}
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			s, _ := newStore(t)
			enqueue(t, s, "s", "e1")
			l := acquire(t, s, "s", "w")
			rec := pending(t, s, l)[0]
			if c.wantErr == nil {
				// Make e1 terminal first, so the case re-saves it.
				if err := s.Save(ctx, l, c.batch(rec)); err != nil {
					t.Fatal(err)
				}
			}
			before := s.Records("s")
			err := s.Save(ctx, l, c.batch(rec))
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Save %s (%s): error = %v, want %v", c.name, c.reason, err, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), `"e1"`) {
				t.Errorf("error %q does not name the record e1", err)
			}
			if diff := cmp.Diff(before, s.Records("s")); diff != "" {
				t.Errorf("Save %s changed records (-before +after):\n%s", c.name, diff)
			}
		})
	}
}

// TestRecordsAndStreams: the simulator's view lists every record of a
// stream in Seq order, terminal ones included, and every stream with a
// record in name order; a stream only leased is not listed.
func TestRecordsAndStreams(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	for _, x := range [][2]string{{"z", "e1"}, {"a", "e2"}, {"z", "e3"}} {
		enqueue(t, s, x[0], x[1])
	}
	acquire(t, s, "leased-only", "w")
	l := acquire(t, s, "z", "w")
	e1 := get(t, s, "e1")
	e1.State, e1.Attempts = machine.Delivered, 1
	if err := s.Save(ctx, l, []machine.Record{e1}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "z"}, s.Streams()); diff != "" {
		t.Errorf("Streams (-want +got):\n%s", diff)
	}
	want := []machine.Record{e1, get(t, s, "e3")}
	if diff := cmp.Diff(want, s.Records("z")); diff != "" {
		t.Errorf("Records(z) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]machine.Record(nil), s.Records("nope"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Records of an unknown stream (-want +got):\n%s", diff)
	}
}

// TestForgedOwner: the right token under another owner's name is a
// forgery; memstore refuses it (the suite only forges tokens).
func TestForgedOwner(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	enqueue(t, s, "s", "e1")
	l := acquire(t, s, "s", "w1")
	forged := l
	forged.Owner = "w2"
	if _, err := s.Pending(ctx, forged, 0); !errors.Is(err, store.ErrStaleLease) {
		t.Errorf("Pending with another owner's token: error = %v, want %v", err, store.ErrStaleLease)
	}
	if err := s.Release(ctx, forged); !errors.Is(err, store.ErrStaleLease) {
		t.Errorf("Release with another owner's token: error = %v, want %v", err, store.ErrStaleLease)
	}
	if _, err := s.Pending(ctx, l, 0); err != nil {
		t.Errorf("the real lease after the forged calls: %v", err)
	}
}

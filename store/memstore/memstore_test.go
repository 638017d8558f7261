// This file proves that memstore passes the storetest conformance suite
// and that its extras (injected unavailability, the simulator's view of
// every record) behave.
package memstore_test

import (
	"errors"
	"fmt"
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

func get(t *testing.T, s *memstore.Store, id string) store.Record {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func enqueue(t *testing.T, s *memstore.Store, stream, id string) {
	t.Helper()
	if _, _, err := s.Enqueue(t.Context(), stream, id, []byte("p-"+id)); err != nil {
		t.Fatal(err)
	}
}

func save(t *testing.T, s *memstore.Store, l store.Lease, r machine.Record) {
	t.Helper()
	if err := s.Save(t.Context(), l, []store.Update{store.UpdateOf(r)}); err != nil {
		t.Fatal(err)
	}
}

func TestUnavailableRefusesWritesOnly(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	enqueue(t, s, "a", "e1")
	enqueue(t, s, "b", "f1")
	enqueue(t, s, "a", "x1")
	enqueue(t, s, "a", "d1")
	l := acquire(t, s, "a", "w1")
	x1 := get(t, s, "x1").Machine()
	x1.State, x1.Reason = machine.Dead, machine.Expired
	save(t, s, l, x1)
	d1 := get(t, s, "d1").Machine()
	d1.Attempts = 1
	save(t, s, l, d1)
	d1.State = machine.Delivered
	save(t, s, l, d1)
	clock.Advance(time.Second)
	next := store.UpdateOf(get(t, s, "e1").Machine())
	next.Attempts = 1

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
		{"Save", func() error { return s.Save(ctx, l, []store.Update{next}) }},
		{"Replay", func() error { _, err := s.Replay(ctx, "x1", "op"); return err }},
		{"Discard", func() error { _, err := s.Discard(ctx, "x1", "op"); return err }},
		{"DeleteSettled", func() error { _, err := s.DeleteSettled(ctx, time.Nanosecond, 10); return err }},
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
	if _, err := s.Pending(ctx, l, 0, 10); err != nil {
		t.Errorf("Pending while unavailable: %v", err)
	}
	if _, err := s.DeadLetters(ctx, "a", 0, 10); err != nil {
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
	if err := s.Save(ctx, l, []store.Update{next}); err != nil {
		t.Errorf("Save once available again: %v", err)
	}
	if n, err := s.DeleteSettled(ctx, time.Nanosecond, 10); n != 1 || err != nil {
		t.Errorf("DeleteSettled once available again = %d, %v; want 1 (d1)", n, err)
	}
}

// TestRecordsAndStreams: the simulator's view lists every record of a
// stream in Seq order and in the machine's form, terminal ones included,
// and every stream with a record in name order; a stream only leased is
// not listed.
func TestRecordsAndStreams(t *testing.T) {
	s, _ := newStore(t)
	for _, x := range [][2]string{{"z", "e1"}, {"a", "e2"}, {"z", "e3"}} {
		enqueue(t, s, x[0], x[1])
	}
	acquire(t, s, "leased-only", "w")
	l := acquire(t, s, "z", "w")
	e1 := get(t, s, "e1").Machine()
	e1.Attempts = 1
	save(t, s, l, e1)
	e1.State = machine.Delivered
	save(t, s, l, e1)
	if diff := cmp.Diff([]string{"a", "z"}, s.Streams()); diff != "" {
		t.Errorf("Streams (-want +got):\n%s", diff)
	}
	want := []machine.Record{e1, get(t, s, "e3").Machine()}
	if diff := cmp.Diff(want, s.Records("z")); diff != "" {
		t.Errorf("Records(z) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]machine.Record(nil), s.Records("nope"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Records of an unknown stream (-want +got):\n%s", diff)
	}
}

// TestStates: StateCounts and State agree with Records and Get, for
// every state, an unknown stream and an unknown ID.
func TestStates(t *testing.T) {
	s, _ := newStore(t)
	for _, id := range []string{"p", "r", "k", "d", "x"} {
		enqueue(t, s, "s", id)
	}
	l := acquire(t, s, "s", "w")
	for id, st := range map[string]machine.State{"r": machine.Retry, "k": machine.Parked, "d": machine.Delivered, "x": machine.Dead} {
		r := get(t, s, id).Machine()
		r.Attempts = 1
		save(t, s, l, r)
		r.State = st
		if st == machine.Dead {
			r.Reason = machine.Rejected
		}
		save(t, s, l, r)
	}
	var want [machine.Dead + 1]int
	for _, r := range s.Records("s") {
		want[r.State]++
		if got, ok := s.State(r.ID); !ok || got != r.State {
			t.Errorf("State(%q) = %v, %v; want %v, true", r.ID, got, ok, r.State)
		}
	}
	if want != [machine.Dead + 1]int{machine.Pending: 1, machine.Retry: 1, machine.Parked: 1, machine.Delivered: 1, machine.Dead: 1} {
		t.Fatalf("the records' states are %v; the test meant one of each", want)
	}
	if got := s.StateCounts("s"); got != want {
		t.Errorf("StateCounts(s) = %v, want %v", got, want)
	}
	if got := s.StateCounts("nope"); got != [machine.Dead + 1]int{} {
		t.Errorf("StateCounts of an unknown stream = %v, want none", got)
	}
	if got, ok := s.State("nope"); ok {
		t.Errorf("State of an unknown ID = %v, true; want false", got)
	}
}

// TestCopiesAreTheCallers: Records and Pending copy each payload; each
// copy is the caller's alone, so writing into one, or appending to it,
// changes neither its neighbours nor the store.
// A nil payload stays nil and an empty one empty, as bytes.Clone leaves
// them.
func TestCopiesAreTheCallers(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	enqueue(t, s, "s", "e1")
	enqueue(t, s, "s", "e2")
	if _, _, err := s.Enqueue(ctx, "s", "nil", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Enqueue(ctx, "s", "empty", []byte{}); err != nil {
		t.Fatal(err)
	}
	l := acquire(t, s, "s", "w")
	pending, err := s.Pending(ctx, l, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for name, recs := range map[string][]machine.Record{"Records": s.Records("s"), "Pending": pending} {
		if len(recs) != 4 {
			t.Fatalf("%s returned %d records, want 4", name, len(recs))
		}
		if recs[2].Payload != nil || recs[3].Payload == nil || len(recs[3].Payload) != 0 {
			t.Errorf("%s: payloads of nil and empty = %#v, %#v; want nil, empty", name, recs[2].Payload, recs[3].Payload)
		}
		recs[0].Payload[0] = 'X'
		_ = append(recs[0].Payload, '!')
		if got := string(recs[1].Payload); got != "p-e2" {
			t.Errorf("%s: e2's payload after writing into e1's = %q, want %q", name, got, "p-e2")
		}
	}
	for _, id := range []string{"e1", "e2"} {
		if got := string(get(t, s, id).Payload); got != "p-"+id {
			t.Errorf("stored payload of %s = %q, want %q", id, got, "p-"+id)
		}
	}
}

// TestPendingPages: Pending's page ends at limit non-terminal records,
// skipping terminal ones, and an empty page is nil.
func TestPendingPages(t *testing.T) {
	ctx := t.Context()
	s, _ := newStore(t)
	for _, id := range []string{"e1", "e2", "e3", "e4"} {
		enqueue(t, s, "s", id)
	}
	l := acquire(t, s, "s", "w")
	e2 := get(t, s, "e2").Machine()
	e2.State, e2.Reason = machine.Dead, machine.Expired
	save(t, s, l, e2)
	for _, c := range []struct {
		after uint64
		limit int
		want  []string
	}{
		{0, 2, []string{"e1", "e3"}},
		{1, 1, []string{"e3"}},
		{3, 10, []string{"e4"}},
		{4, 10, nil},
	} {
		recs, err := s.Pending(ctx, l, c.after, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.ID)
		}
		if diff := cmp.Diff(c.want, got); diff != "" || (c.want == nil && recs != nil) {
			t.Errorf("Pending after %d limit %d = %#v (-want +got):\n%s", c.after, c.limit, recs, diff)
		}
	}
}

// TestClaimSkipsStreamsWithoutRecords: a stream that exists only because
// it was leased, whose lease has run out, sits in name order among the
// due streams and is never claimed.
func TestClaimSkipsStreamsWithoutRecords(t *testing.T) {
	ctx := t.Context()
	s, clock := newStore(t)
	acquire(t, s, "b", "w0")
	enqueue(t, s, "c", "e-c")
	enqueue(t, s, "a", "e-a")
	clock.Advance(2 * ttl)
	got, err := s.ClaimDue(ctx, "w", ttl, 10)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range got {
		names = append(names, l.Stream)
	}
	if diff := cmp.Diff([]string{"a", "c"}, names); diff != "" {
		t.Errorf("ClaimDue (-want +got):\n%s", diff)
	}
}

// TestGetNotFound: an unknown ID's error wraps store.ErrNotFound and reads
// as fmt.Errorf("%w: get %q") would write it, odd characters included (an
// ID that is not text is a bad argument, not unknown).
func TestGetNotFound(t *testing.T) {
	s, _ := newStore(t)
	for _, id := range []string{"e1", `quo"te`, "tab\tnew\nline", "\x7f\u2028\uFFFD", "é"} {
		_, err := s.Get(t.Context(), id)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%q) error = %v, want %v", id, err, store.ErrNotFound)
		}
		if want := fmt.Errorf("%w: get %q", store.ErrNotFound, id).Error(); err == nil || err.Error() != want {
			t.Errorf("Get(%q) error reads %v, want %q", id, err, want)
		}
	}
}

// BenchmarkStore measures enqueues and full delivery cycles per second
// with 1, 4 and 16 streams (see storetest.Bench).
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(*testing.B) store.Store { return memstore.New(time.Now) })
}

// TestPingUnavailable: Ping answers nil until a failure is injected, then
// ErrUnavailable, as a write would.
func TestPingUnavailable(t *testing.T) {
	s, _ := newStore(t)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	s.SetUnavailable(func() bool { return true })
	if err := s.Ping(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Ping while unavailable: %v, want %v", err, store.ErrUnavailable)
	}
}

// BenchmarkClaim measures ClaimDue among 1,000 and 10,000 due streams
// (see storetest.BenchClaim).
func BenchmarkClaim(b *testing.B) {
	storetest.BenchClaim(b, func(*testing.B) store.Store { return memstore.New(time.Now) })
}

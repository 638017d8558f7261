// This file proves the bulk replay's choice and its page: which dead
// letters a replay since an instant takes, and that a page replays
// exactly those, in Seq order, skipping what is no longer a dead letter.
package platform_test

import (
	"context"
	"testing"
	"time"

	"github.com/courierlab/courier/machine"
	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store"
	"github.com/courierlab/courier/store/memstore"
)

// The since filter compares the last attempt's time, or the budget's
// start when there was none, and leaves discarded dead letters out.
func TestReplayChosen(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	attempted := store.Record{Event: store.Event{AcceptedAt: t0}, Last: store.Outcome{Attempt: 1}, LastAt: t0.Add(time.Hour)}
	never := store.Record{Event: store.Event{AcceptedAt: t0.Add(2 * time.Hour)}}
	discarded := attempted
	discarded.SettledAt = t0.Add(3 * time.Hour)
	for _, c := range []struct {
		name  string
		rec   store.Record
		since time.Time
		want  bool
	}{
		{"no since", attempted, time.Time{}, true},
		{"died at since", attempted, t0.Add(time.Hour), true},
		{"died before since", attempted, t0.Add(time.Hour + time.Microsecond), false},
		{"no attempt: its acceptance", never, t0.Add(2 * time.Hour), true},
		{"no attempt, accepted before since", never, t0.Add(3 * time.Hour), false},
		{"discarded", discarded, time.Time{}, false},
	} {
		if got := platform.Chosen(c.rec, c.since); got != c.want {
			t.Errorf("%s: Chosen = %v; want %v", c.name, got, c.want)
		}
	}
}

// A page replays the chosen dead letters only, in Seq order, and counts
// one discarded meanwhile as skipped; Next and Last page on.
func TestReplayDeadPage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := memstore.New(func() time.Time { return now })
	kill := func(id string) {
		t.Helper()
		if _, _, err := st.Enqueue(ctx, "ep", id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		die(t, st, id)
	}
	kill("a")
	now = now.Add(time.Hour)
	since := now
	kill("b")
	kill("c")
	page, err := platform.ReplayDeadPage(ctx, st, "ep", since, 0, 10, "test")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range page.Replayed {
		got = append(got, r.ID)
	}
	if len(got) != 2 || got[0] != "b" || got[1] != "c" || page.Listed != 2 || !page.Last || page.Next != 3 {
		t.Fatalf("page = %+v (replayed %v); want b and c replayed, listed 2, last, next 3", page, got)
	}
}

// die claims the one due delivery of st, id, and saves it dead.
func die(t *testing.T, st store.Store, id string) {
	t.Helper()
	lease, err := st.ClaimDue(t.Context(), "w", time.Minute, 1)
	if err != nil || len(lease) != 1 {
		t.Fatalf("claim: %v %v", lease, err)
	}
	up := store.Update{ID: id, Delivery: store.Delivery{State: machine.Dead, Reason: machine.Expired}}
	if err := st.Save(t.Context(), lease[0], []store.Update{up}); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(t.Context(), lease[0]); err != nil {
		t.Fatal(err)
	}
}

// A job resumed from a cursor older than its last replays (its process
// was killed before it saved) does not replay again what it replayed
// and what died again since: ResumeDeadPage counts those in Again. The
// store would replay them: they are dead letters again.
func TestResumeDeadPageReplaysOnce(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(time.Now)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := st.Enqueue(ctx, "ep", id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		die(t, st, id)
	}
	first, err := platform.ResumeDeadPage(ctx, st, "ep", time.Time{}, 0, 2, "rpl_1")
	if err != nil || len(first.Replayed) != 2 || first.Again != 0 {
		t.Fatalf("first page = %+v, %v; want a and b replayed", first, err)
	}
	die(t, st, "a")
	die(t, st, "b")
	again, err := platform.ResumeDeadPage(ctx, st, "ep", time.Time{}, 0, 2, "rpl_1") // the cursor was not saved
	if err != nil || len(again.Replayed) != 0 || again.Again != 2 || again.Listed != 2 || again.Next != first.Next {
		t.Fatalf("the first page again = %+v, %v; want a and b counted again, not replayed, next %d", again, err, first.Next)
	}
	last, err := platform.ResumeDeadPage(ctx, st, "ep", time.Time{}, again.Next, 2, "rpl_1")
	if err != nil || len(last.Replayed) != 1 || last.Replayed[0].ID != "c" || !last.Last {
		t.Fatalf("the last page = %+v, %v; want c replayed", last, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if rec, err := st.Get(ctx, id); err != nil || rec.Replays() != 1 {
			t.Errorf("%s: %d replays, %v; want 1", id, rec.Replays(), err)
		}
	}
	other, err := platform.ReplayDeadPage(ctx, st, "ep", time.Time{}, 0, 2, "rpl_1")
	if err != nil || len(other.Replayed) != 2 {
		t.Errorf("ReplayDeadPage of a and b dead again = %+v, %v; want both replayed (it does not look at the history)", other, err)
	}
}

// stoppingStore ends the replay's context during the replay of stop,
// which then fails as a store call cut short does.
type stoppingStore struct {
	store.Store
	stop   string
	cancel context.CancelFunc
}

func (s stoppingStore) Replay(ctx context.Context, id, by string) (store.Record, error) {
	if id == s.stop {
		s.cancel()
		return store.Record{}, ctx.Err()
	}
	return s.Store.Replay(ctx, id, by)
}

// A page stopped during a replay counts that dead letter nowhere and
// leaves Next before it, so that the job's next page lists it again;
// the page is not Last.
func TestReplayDeadPageStoppedDuringAReplay(t *testing.T) {
	st := memstore.New(time.Now)
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := st.Enqueue(t.Context(), "ep", id, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := st.ClaimDue(t.Context(), "w", time.Minute, 1)
	if err != nil || len(lease) != 1 {
		t.Fatalf("claim: %v %v", lease, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		up := store.Update{ID: id, Delivery: store.Delivery{State: machine.Dead, Reason: machine.Expired}}
		if err := st.Save(t.Context(), lease[0], []store.Update{up}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	page, err := platform.ResumeDeadPage(ctx, stoppingStore{Store: st, stop: "b", cancel: cancel}, "ep", time.Time{}, 0, 10, "job")
	if err != nil || page.Listed != 1 || len(page.Replayed) != 1 || page.Failed != 0 || page.Next != 1 || page.Last {
		t.Errorf("page stopped during b's replay = %+v, %v; want a replayed, b not counted, next 1, not last", page, err)
	}
	next, err := platform.ResumeDeadPage(t.Context(), st, "ep", time.Time{}, page.Next, 10, "job")
	if err != nil || len(next.Replayed) != 2 || next.Replayed[0].ID != "b" || !next.Last {
		t.Errorf("the next page = %+v, %v; want b and c replayed", next, err)
	}
}

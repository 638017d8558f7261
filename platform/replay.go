package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/courierlab/courier/internal/plant"
	"github.com/courierlab/courier/store"
)

// Bulk replay of an endpoint's dead letters (Svix's "recover"): its
// deliveries are events of the delivery store, so the replay pages
// through the endpoint's stream's dead letters (store.DeadLetters) and
// replays the chosen ones (store.Replay). courier serve runs it as a job
// (POST /v1/apps/{app}/endpoints/{endpoint}/replay), the simulator as an
// operator's action; both call ReplayDeadPage, a page at a time.

// ReplayedPage is what ReplayDeadPage did with one page.
type ReplayedPage struct {
	// Listed counts the dead letters chosen on the page (Chosen); of
	// them, Replayed holds those replayed, as the store holds them after
	// the replay, Skipped counts those no longer dead letters when the
	// replay came to them (replayed, discarded or deleted since they were
	// listed), and Failed those the store did not answer for, with
	// Errors saying why (running the replay again retries them).
	Listed   int
	Replayed []store.Record
	Skipped  int
	Failed   int
	Errors   []error
	// Again counts those ResumeDeadPage left alone because the same
	// replayer had replayed them already (ReplayDeadPage: 0).
	Again int
	// Next is the Seq to list after for the next page; Last reports that
	// this page was the last.
	Next uint64
	Last bool
}

// ReplayDeadPage lists up to limit dead letters of stream after Seq after
// and replays, back to back and in Seq order, those Chosen for since
// (zero: all), recording by in each one's history. A replayed event that
// dies again keeps its Seq, behind the replay, so paging from Next ends.
// It returns an error only when the listing fails (nothing replayed);
// a replay that fails is counted in the page. When ctx ends it stops
// before the next dead letter, or during one's replay (that one not
// counted, Next before it), and returns the page so far, not Last.
func ReplayDeadPage(ctx context.Context, st store.Store, stream string, since time.Time, after uint64, limit int, by string) (ReplayedPage, error) {
	return replayDeadPage(ctx, st, stream, since, after, limit, by, false)
}

// ResumeDeadPage is ReplayDeadPage for a job that may have gone through
// part of this page before it stopped (its process killed before it
// saved its cursor): a dead letter whose history holds a replay by by
// already (it was replayed, then died again) is not replayed again, but
// counted in Again. So a job, by its own name, replays each dead letter
// at most once, however often it is resumed. (The store alone would not
// stop the second replay: the letter is dead again.)
func ResumeDeadPage(ctx context.Context, st store.Store, stream string, since time.Time, after uint64, limit int, by string) (ReplayedPage, error) {
	return replayDeadPage(ctx, st, stream, since, after, limit, by, true)
}

func replayDeadPage(ctx context.Context, st store.Store, stream string, since time.Time, after uint64, limit int, by string, resume bool) (ReplayedPage, error) {
	recs, err := st.DeadLetters(ctx, stream, after, limit)
	if err != nil {
		return ReplayedPage{}, fmt.Errorf("listing dead letters: %w", err)
	}
	page := ReplayedPage{Next: after, Last: len(recs) < limit}
	for _, rec := range recs {
		if ctx.Err() != nil {
			page.Last = false
			return page, nil // stopped: the rest is not counted
		}
		if Chosen(rec, since) && !replayOne(ctx, st, rec, by, resume, &page) {
			page.Last = false
			return page, nil // stopped during its replay: rec is listed again from Next
		}
		page.Next = rec.Seq
	}
	return page, nil
}

// replayOne replays the chosen dead letter rec and counts it in page;
// false if ctx ended during its replay (not counted: its outcome is
// unknown).
func replayOne(ctx context.Context, st store.Store, rec store.Record, by string, resume bool, page *ReplayedPage) bool {
	if resume && replayedBy(rec, by) && !plant.On(plant.ResumeReplaysAgain) {
		page.Listed++
		page.Again++
		return true
	}
	got, err := st.Replay(ctx, rec.ID, by)
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err == nil:
		page.Replayed = append(page.Replayed, got)
	case errors.Is(err, store.ErrInvalidWrite), errors.Is(err, store.ErrNotFound):
		page.Skipped++
	default:
		page.Failed++
		page.Errors = append(page.Errors, fmt.Errorf("%s: %w", rec.ID, err))
	}
	page.Listed++
	return true
}

// replayedBy reports whether rec's history holds a replay by by.
func replayedBy(rec store.Record, by string) bool {
	return slices.ContainsFunc(rec.History, func(a store.Action) bool { return a.Kind == store.Replayed && a.By == by })
}

// Chosen reports whether a bulk replay since since replays rec: an
// undiscarded dead letter that died at or after since (zero: any). The
// store keeps no death time: a dead letter died at its last attempt
// (Last, LastAt), or, with none in its budget, after its budget began
// (BudgetFrom), which is what is compared.
func Chosen(rec store.Record, since time.Time) bool {
	if !rec.SettledAt.IsZero() {
		return false // discarded by an operator
	}
	if since.IsZero() || plant.On(plant.ReplaySinceIgnored) {
		return true
	}
	died := rec.BudgetFrom()
	if rec.Last.Attempt > 0 {
		died = rec.LastAt
	}
	return !died.Before(since)
}

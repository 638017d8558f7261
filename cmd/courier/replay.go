package main

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/courierlab/courier/platform"
)

// Bulk replay of an endpoint's dead letters (Svix's "recover", Convoy's
// "batch retry"): POST .../endpoints/{endpoint}/replay starts a job in
// serve and answers 202 with its ID; GET .../replay/{job} shows its
// progress, GET .../replays lists the endpoint's jobs, POST
// .../replay/{job}/cancel stops one. A job pages through the endpoint's
// stream's dead letters (store.DeadLetters) and replays the chosen ones
// (store.Replay). Jobs are kept in the platform store and survive a
// restart (replay_jobs.go).
//
// Pacing. Each replay revokes the stream's lease: its owner drops its
// machine, and an attempt it had in flight is retried by the next owner
// only after the attempt timeout, since its outcome is unknown. So a job
// replays a page back to back (an owner seldom takes the stream between
// two replays), then waits until the page's last replayed event is
// delivered or dead again, for at most replaySettleMax, before the next
// page: it never runs ahead of delivery, and in practice revokes a busy
// owner about once a page. (Replaying them one by one, 20 ms apart, made
// TestBulkReplayOfAnEndpoint wait the 30 s attempt timeout in 2 runs of
// 8; back to back, in none of 20.)

const (
	// replayPage is how many dead letters a job lists, and replays back
	// to back, at a time ([platform] replay_page).
	replayPage = 100
	// replaySettlePoll is how often a job reads whether its page's last
	// replayed event has settled; replaySettleMax bounds the wait.
	replaySettlePoll = 100 * time.Millisecond
	replaySettleMax  = 10 * time.Second
)

type replayView struct {
	ID         string     `json:"id"`
	AppID      string     `json:"app_id"`
	EndpointID string     `json:"endpoint_id"`
	Since      *time.Time `json:"since,omitempty"`
	State      string     `json:"state"`
	Done       bool       `json:"done"`
	Cursor     uint64     `json:"cursor"`
	Listed     int        `json:"listed"`
	Replayed   int        `json:"replayed"`
	Skipped    int        `json:"skipped"`
	Failed     int        `json:"failed"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

func viewReplay(j platform.ReplayJob) replayView {
	return replayView{ID: j.ID, AppID: j.AppID, EndpointID: j.EndpointID, Since: orNil(j.Since), State: string(j.State),
		Done: j.Finished(), Cursor: j.Cursor, Listed: j.Listed, Replayed: j.Replayed, Skipped: j.Skipped, Failed: j.Failed,
		Error: j.Error, StartedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, FinishedAt: orNil(j.FinishedAt)}
}

// startReplay answers 202 with the new job, 409 with the running one.
func (a *api) startReplay(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Since *string `json:"since"`
	}
	if r.ContentLength != 0 && !a.decode(w, r, &in) {
		return
	}
	var since time.Time
	if in.Since != nil {
		t, ok := parseSince(w, *in.Since)
		if !ok {
			return
		}
		since = t
	}
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	j, err := a.replays.start(r.Context(), e.AppID, e.ID, since)
	switch {
	case errors.Is(err, errReplayRunning):
		writeJSON(w, http.StatusConflict, struct {
			apiError
			Job replayView `json:"job"`
		}{apiError{Error: err.Error()}, viewReplay(j)})
		return
	case err != nil:
		writePlatErr(w, "starting the replay", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "bulk replay started", slog.String("job", j.ID), slog.String("endpoint", e.ID))
	w.Header().Set("Location", r.URL.Path+"/"+j.ID)
	writeJSON(w, http.StatusAccepted, viewReplay(j))
}

// getReplay answers a job's progress, as last saved.
func (a *api) getReplay(w http.ResponseWriter, r *http.Request) {
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	j, err := a.plat.Store().GetReplayJob(r.Context(), e.AppID, e.ID, r.PathValue("job"))
	if err != nil {
		writePlatErr(w, "reading the replay job", err)
		return
	}
	writeJSON(w, http.StatusOK, viewReplay(j))
}

// listReplays answers the endpoint's jobs, newest first, a page at a time.
func (a *api) listReplays(w http.ResponseWriter, r *http.Request) {
	after, limit, ok := page(w, r)
	if !ok {
		return
	}
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	jobs, err := a.plat.Store().ListReplayJobs(r.Context(), e.AppID, e.ID, after, limit)
	if err != nil {
		writePlatErr(w, "listing replay jobs", err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(jobs, limit, viewReplay, func(j platform.ReplayJob) string { return j.ID }))
}

// cancelReplay cancels a running job: 200 with it, cancelled; 409 with
// it if it had finished. The process running it stops at once if it is
// this one, else at its next save (within a third of lease_ttl).
func (a *api) cancelReplay(w http.ResponseWriter, r *http.Request) {
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	j, err := a.plat.Store().CancelReplayJob(r.Context(), e.AppID, e.ID, r.PathValue("job"))
	switch {
	case errors.Is(err, platform.ErrConflict) && j.ID != "":
		writeJSON(w, http.StatusConflict, struct {
			apiError
			Job replayView `json:"job"`
		}{apiError{Error: "replay job " + j.ID + " is " + string(j.State) + " already"}, viewReplay(j)})
		return
	case err != nil:
		writePlatErr(w, "cancelling the replay job", err)
		return
	}
	a.replays.interrupt(j.ID)
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "bulk replay cancelled", slog.String("job", j.ID), slog.String("endpoint", e.ID))
	writeJSON(w, http.StatusOK, viewReplay(j))
}

// clipText shortens s for an error message.
func clipText(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

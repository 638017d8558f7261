package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store"
)

// Bulk replay of an endpoint's dead letters (Svix's "recover", Convoy's
// "batch retry"): POST .../endpoints/{endpoint}/replay starts a job in
// serve and answers 202 with its ID; GET .../replay/{job} shows its
// progress. A job pages through the endpoint's stream's dead letters
// (store.DeadLetters) and replays the chosen ones (store.Replay). Jobs
// live in memory: a restart forgets them, and a job run again is safe,
// because the store refuses to replay a record that is no longer dead
// (counted as skipped).
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
	// to back, at a time.
	replayPage = 100
	// replaySettlePoll is how often a job reads whether its page's last
	// replayed event has settled; replaySettleMax bounds the wait.
	replaySettlePoll = 100 * time.Millisecond
	replaySettleMax  = 10 * time.Second
	// maxReplayJobs bounds the jobs kept in memory; the oldest finished
	// job is forgotten first.
	maxReplayJobs = 100
)

// replayJob is one bulk replay and its progress.
type replayJob struct {
	ID         string
	AppID      string
	EndpointID string
	Since      time.Time // zero: every dead letter
	StartedAt  time.Time

	mu       sync.Mutex
	progress replayProgress
}

// replayProgress counts what a job did: Listed dead letters chosen
// (undiscarded, dead since Since), of which Replayed, Skipped (no
// longer a dead letter when the job came to it) and Failed (the store
// did not answer; running the job again retries them).
type replayProgress struct {
	State      string // running, done, cancelled (serve stopped) or failed (listing failed)
	Listed     int
	Replayed   int
	Skipped    int
	Failed     int
	Error      string
	FinishedAt time.Time
}

type replayView struct {
	ID         string     `json:"id"`
	AppID      string     `json:"app_id"`
	EndpointID string     `json:"endpoint_id"`
	Since      *time.Time `json:"since,omitempty"`
	State      string     `json:"state"`
	Done       bool       `json:"done"`
	Listed     int        `json:"listed"`
	Replayed   int        `json:"replayed"`
	Skipped    int        `json:"skipped"`
	Failed     int        `json:"failed"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

func (j *replayJob) view() replayView {
	j.mu.Lock()
	p := j.progress
	j.mu.Unlock()
	return replayView{ID: j.ID, AppID: j.AppID, EndpointID: j.EndpointID, Since: orNil(j.Since), State: p.State,
		Done: p.State != "running", Listed: p.Listed, Replayed: p.Replayed, Skipped: p.Skipped, Failed: p.Failed,
		Error: p.Error, StartedAt: j.StartedAt, FinishedAt: orNil(p.FinishedAt)}
}

func (j *replayJob) update(f func(*replayProgress)) {
	j.mu.Lock()
	f(&j.progress)
	j.mu.Unlock()
}

func (j *replayJob) running() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.progress.State == "running"
}

// replays runs the bulk replay jobs of one serve, until stop.
type replays struct {
	st  store.Store
	log *slog.Logger
	// page, settlePoll and settleMax are replayPage, replaySettlePoll and
	// replaySettleMax but in tests.
	page                  int
	settlePoll, settleMax time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	jobs    map[string]*replayJob
	order   []string // job IDs, oldest first
}

func newReplays(st store.Store, log *slog.Logger) *replays {
	ctx, cancel := context.WithCancel(context.Background())
	return &replays{st: st, log: log, page: replayPage, settlePoll: replaySettlePoll, settleMax: replaySettleMax,
		ctx: ctx, cancel: cancel, jobs: map[string]*replayJob{}}
}

// errReplayRunning: the endpoint has a job running already.
var errReplayRunning = errors.New("a replay of this endpoint is running")

// start begins a job replaying endpoint ep's dead letters since since
// (zero: all). One job per endpoint runs at a time: another fails with
// errReplayRunning, naming the running one.
func (rp *replays) start(app, ep string, since time.Time) (*replayJob, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.stopped {
		return nil, errors.New("serve is stopping")
	}
	for _, id := range rp.order {
		if j := rp.jobs[id]; j.EndpointID == ep && j.running() {
			return j, fmt.Errorf("%w: job %s", errReplayRunning, j.ID)
		}
	}
	rp.forgetOldest()
	now := time.Now().UTC()
	j := &replayJob{ID: platform.NewID("rpl", now), AppID: app, EndpointID: ep, Since: since, StartedAt: now,
		progress: replayProgress{State: "running"}}
	rp.jobs[j.ID] = j
	rp.order = append(rp.order, j.ID)
	rp.wg.Add(1)
	go func() {
		defer rp.wg.Done()
		rp.run(j)
	}()
	return j, nil
}

// forgetOldest drops the oldest finished job while maxReplayJobs are
// kept; rp.mu is held. Running jobs are never dropped.
func (rp *replays) forgetOldest() {
	for i := 0; i < len(rp.order) && len(rp.order) >= maxReplayJobs; {
		if rp.jobs[rp.order[i]].running() {
			i++
			continue
		}
		delete(rp.jobs, rp.order[i])
		rp.order = append(rp.order[:i], rp.order[i+1:]...)
	}
}

// job returns the job id of endpoint ep, if it is kept.
func (rp *replays) job(ep, id string) (*replayJob, bool) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	j, ok := rp.jobs[id]
	return j, ok && j.EndpointID == ep
}

// stop cancels every running job (each ends cancelled) and waits for
// them; a later start fails.
func (rp *replays) stop() {
	rp.mu.Lock()
	rp.stopped = true
	rp.mu.Unlock()
	rp.cancel()
	rp.wg.Wait()
}

// run pages through the stream's dead letters in Seq order and replays
// the chosen ones a page at a time (platform.ReplayDeadPage, which the
// simulator's operator runs too), waiting between pages for the page's
// last replayed event to settle.
func (rp *replays) run(j *replayJob) {
	stream := platform.StreamOf(j.EndpointID)
	by := "replay " + j.ID
	var after uint64
	state, errText := "done", ""
	for {
		page, err := platform.ReplayDeadPage(rp.ctx, rp.st, stream, j.Since, after, rp.page, by)
		if err != nil {
			state, errText = "failed", err.Error()
			break
		}
		after = page.Next
		rp.count(j, page)
		if rp.ctx.Err() != nil || page.Last {
			break
		}
		last := ""
		if n := len(page.Replayed); n > 0 {
			last = page.Replayed[n-1].ID
		}
		rp.settle(last)
	}
	if rp.ctx.Err() != nil {
		state, errText = "cancelled", "serve stopped; run the job again to finish it"
	}
	j.update(func(p *replayProgress) { p.State, p.Error, p.FinishedAt = state, errText, time.Now().UTC() })
	v := j.view()
	rp.log.LogAttrs(context.Background(), slog.LevelInfo, "bulk replay ended", slog.String("job", j.ID), slog.String("endpoint", j.EndpointID),
		slog.String("state", state), slog.Int("listed", v.Listed), slog.Int("replayed", v.Replayed),
		slog.Int("skipped", v.Skipped), slog.Int("failed", v.Failed))
}

// count adds a page's outcome to the job's progress and logs each
// replay that failed.
func (rp *replays) count(j *replayJob, page platform.ReplayedPage) {
	j.update(func(p *replayProgress) {
		p.Listed += page.Listed
		p.Replayed += len(page.Replayed)
		p.Skipped += page.Skipped
		p.Failed += page.Failed
	})
	for _, err := range page.Errors {
		rp.log.LogAttrs(context.Background(), slog.LevelWarn, "bulk replay: an event was not replayed", slog.String("job", j.ID),
			slog.Any("err", err))
	}
}

// settle waits until event id (none if "") is delivered or dead, or
// deleted, for at most settleMax or until serve stops.
func (rp *replays) settle(id string) {
	deadline := time.Now().Add(rp.settleMax)
	for id != "" && time.Now().Before(deadline) {
		rec, err := rp.st.Get(rp.ctx, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && rec.State.Terminal() {
			return
		}
		t := time.NewTimer(rp.settlePoll)
		select {
		case <-rp.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
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
		t, err := time.Parse(time.RFC3339Nano, *in.Since)
		switch {
		case err != nil:
			writeField(w, "since", "%q is not an RFC 3339 time (2006-01-02T15:04:05Z)", clipText(*in.Since))
			return
		case t.After(time.Now()):
			writeField(w, "since", "%s is in the future", t.Format(time.RFC3339Nano))
			return
		}
		since = t
	}
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	j, err := a.replays.start(e.AppID, e.ID, since)
	switch {
	case errors.Is(err, errReplayRunning):
		writeJSON(w, http.StatusConflict, struct {
			apiError
			Job replayView `json:"job"`
		}{apiError{Error: err.Error()}, j.view()})
		return
	case err != nil:
		writeErr(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "bulk replay started", slog.String("job", j.ID), slog.String("endpoint", e.ID))
	w.Header().Set("Location", r.URL.Path+"/"+j.ID)
	writeJSON(w, http.StatusAccepted, j.view())
}

// getReplay answers a job's progress.
func (a *api) getReplay(w http.ResponseWriter, r *http.Request) {
	e, ok := a.endpointOf(w, r)
	if !ok {
		return
	}
	j, ok := a.replays.job(e.ID, r.PathValue("job"))
	if !ok {
		writeErr(w, http.StatusNotFound, "no replay job %q of endpoint %s (jobs are kept in memory: a restart forgets them)",
			clipText(r.PathValue("job")), e.ID)
		return
	}
	writeJSON(w, http.StatusOK, j.view())
}

// clipText shortens s for an error message.
func clipText(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "..."
}

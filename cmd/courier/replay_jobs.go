package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/courierlab/courier/platform"
	"github.com/courierlab/courier/store"
)

// Bulk replay jobs that survive a restart. A job is a row of the platform
// store (platform.ReplayJob): its endpoint, since, state, cursor and
// counts. The serve process that runs it holds it by a lease in that row
// (Owner, LeaseUntil, of lease_ttl, the workers' lease), renewed at each
// save: after each page and every third of a lease while it waits for a
// page to settle. A killed process stops renewing; once its lease has
// ended, any serve on the same database (the same one restarted, or
// another on the same PostgreSQL) claims the job (ClaimReplayJob, tried
// at start and every half lease) and goes on from the cursor. A save
// is made only while its owner holds the job, so of two processes the
// one that lost it stops at its next save.
//
// Once, not twice. A job replays a page, then saves its cursor. Killed
// between the two, it lists that page again when resumed: the dead
// letters it replayed and that were delivered, or are on their way, are
// no longer dead (the store refuses to replay what is not dead, counted
// as skipped), and those that died again since carry the job's name in
// their history, so platform.ResumeDeadPage leaves them alone. So each
// dead letter is replayed at most once per job, whatever the kills.

// jobLease is how long a job's claim lasts without a save, when the
// config gives no lease_ttl (tests).
const jobLease = 10 * time.Second

// replays runs the bulk replay jobs of one serve, until stop.
type replays struct {
	st    store.Store
	ps    platform.Store
	owner string
	log   *slog.Logger
	// page, settlePoll and settleMax are replayPage, replaySettlePoll and
	// replaySettleMax but in tests; lease is the claim's length.
	page                  int
	settlePoll, settleMax time.Duration
	lease                 time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	stopped bool
	running map[string]context.CancelFunc // the jobs this process runs, by ID
}

func newReplays(st store.Store, ps platform.Store, owner string, lease time.Duration, log *slog.Logger) *replays {
	if lease <= 0 {
		lease = jobLease
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &replays{st: st, ps: ps, owner: owner, log: log, page: replayPage, settlePoll: replaySettlePoll,
		settleMax: replaySettleMax, lease: lease, ctx: ctx, cancel: cancel, running: map[string]context.CancelFunc{}}
}

// errReplayRunning: the endpoint has a job running already.
var errReplayRunning = errors.New("a replay of this endpoint is running")

// start stores a job replaying endpoint ep's dead letters since since
// (zero: all), claimed by this process, and runs it. One job per
// endpoint runs at a time: another fails with errReplayRunning, with the
// running one.
func (rp *replays) start(ctx context.Context, app, ep string, since time.Time) (platform.ReplayJob, error) {
	if rp.isStopped() {
		return platform.ReplayJob{}, errors.New("serve is stopping")
	}
	j, err := rp.ps.CreateReplayJob(ctx, platform.ReplayJob{ID: platform.NewID(platform.ReplayJobKind, time.Now()),
		AppID: app, EndpointID: ep, Since: since, Owner: rp.owner}, rp.lease)
	if errors.Is(err, platform.ErrConflict) && j.ID != "" {
		return j, fmt.Errorf("%w: job %s", errReplayRunning, j.ID)
	}
	if err != nil {
		return j, err
	}
	rp.launch(j)
	return j, nil
}

func (rp *replays) isStopped() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.stopped
}

// launch runs j in its own goroutine, unless serve is stopping (the
// job's lease then ends and a later serve claims it).
func (rp *replays) launch(j platform.ReplayJob) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if _, ok := rp.running[j.ID]; ok || rp.stopped {
		return // runs here already (its lease ran out, and this process claimed it back), or too late
	}
	ctx, cancel := context.WithCancel(rp.ctx)
	rp.running[j.ID] = cancel
	rp.wg.Add(1)
	go func() {
		defer rp.wg.Done()
		defer func() {
			rp.mu.Lock()
			delete(rp.running, j.ID)
			rp.mu.Unlock()
			cancel()
		}()
		(&jobRun{rp: rp, ctx: ctx, j: j, saved: time.Now()}).run()
	}()
}

// interrupt stops job id if this process runs it (it was cancelled).
func (rp *replays) interrupt(id string) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if cancel, ok := rp.running[id]; ok {
		cancel()
	}
}

// claimLoop claims, at once and then every half lease, each job whose
// lease has ended (its process died or stopped), and runs it.
func (rp *replays) claimLoop() {
	defer rp.wg.Done()
	t := time.NewTicker(rp.lease / 2)
	defer t.Stop()
	for {
		for !rp.isStopped() {
			j, ok, err := rp.ps.ClaimReplayJob(rp.ctx, rp.owner, rp.lease)
			if err != nil && rp.ctx.Err() == nil {
				rp.log.LogAttrs(rp.ctx, slog.LevelWarn, "bulk replay: claiming a job", slog.Any("err", err))
			}
			if err != nil || !ok {
				break
			}
			rp.log.LogAttrs(rp.ctx, slog.LevelInfo, "bulk replay resumed", slog.String("job", j.ID),
				slog.String("endpoint", j.EndpointID), slog.Uint64("cursor", j.Cursor), slog.Int("replayed", j.Replayed))
			rp.launch(j)
		}
		select {
		case <-rp.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// run starts the claim loop: unfinished jobs of a previous serve resume.
func (rp *replays) run() {
	rp.wg.Add(1)
	go rp.claimLoop()
}

// stop stops every job this process runs, each saved as it stands with
// its lease ended (the next serve resumes it at once), and waits for
// them; a later start fails.
func (rp *replays) stop() {
	rp.mu.Lock()
	rp.stopped = true
	rp.mu.Unlock()
	rp.cancel()
	rp.wg.Wait()
}

// jobRun is one job run by this process.
type jobRun struct {
	rp    *replays
	ctx   context.Context // ends when serve stops or the job is cancelled here
	j     platform.ReplayJob
	saved time.Time // the last save, by this host's clock
}

// run pages through the endpoint's stream's dead letters from the job's
// cursor and replays the chosen ones a page at a time
// (platform.ResumeDeadPage), saving after each page and waiting for the
// page's last replayed event to settle before the next.
func (r *jobRun) run() {
	rp := r.rp
	stream, by := platform.StreamOf(r.j.EndpointID), "replay "+r.j.ID
	for {
		page, err := platform.ResumeDeadPage(r.ctx, rp.st, stream, r.j.Since, r.j.Cursor, rp.page, by)
		if err != nil {
			if r.ctx.Err() == nil {
				r.j.State, r.j.Error = platform.JobFailed, err.Error()
			}
			r.end() // failed, or stopped: saved as it stands
			return
		}
		r.count(page)
		switch {
		case r.ctx.Err() != nil:
			r.end()
			return
		case page.Last:
			r.j.State = platform.JobDone
			r.end()
			return
		case !r.save():
			return
		}
		last := ""
		if n := len(page.Replayed); n > 0 {
			last = page.Replayed[n-1].ID
		}
		if !r.settle(last) {
			return
		}
	}
}

// count adds a page's outcome to the job and logs each replay that
// failed.
func (r *jobRun) count(page platform.ReplayedPage) {
	r.j.Cursor = page.Next
	r.j.Listed += page.Listed
	r.j.Replayed += len(page.Replayed) + page.Again
	r.j.Skipped += page.Skipped
	r.j.Failed += page.Failed
	for _, err := range page.Errors {
		r.rp.log.LogAttrs(context.Background(), slog.LevelWarn, "bulk replay: an event was not replayed", slog.String("job", r.j.ID),
			slog.Any("err", err))
	}
}

// save saves the job's progress and renews its lease; false if the job
// is no longer this process's (cancelled, or claimed by another), which
// ends this run. A save the store did not take is tried again at the
// next page: the lease may end meanwhile, and then the next save finds
// the job taken.
func (r *jobRun) save() bool {
	return r.saveFor(r.rp.lease)
}

func (r *jobRun) saveFor(lease time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.rp.lease/2)
	defer cancel()
	j, err := r.rp.ps.SaveReplayJob(ctx, r.j, lease)
	switch {
	case errors.Is(err, platform.ErrConflict) || errors.Is(err, platform.ErrNotFound):
		r.rp.log.LogAttrs(ctx, slog.LevelInfo, "bulk replay stopped here: the job is no longer this process's",
			slog.String("job", r.j.ID), slog.Any("err", err))
		return false
	case err != nil:
		r.rp.log.LogAttrs(ctx, slog.LevelWarn, "bulk replay: saving progress", slog.String("job", r.j.ID), slog.Any("err", err))
		return true
	}
	r.j, r.saved = j, time.Now()
	return true
}

// end saves the job's last state: done or failed, finished; or, when
// serve is stopping or the job was cancelled, its progress with a lease
// of a microsecond, so that the next serve claims it at once.
func (r *jobRun) end() {
	lease := r.rp.lease
	if !r.j.Finished() {
		lease = time.Microsecond
	}
	for try := 0; try < 3; try++ {
		before := r.saved
		if !r.saveFor(lease) || r.saved != before {
			break
		}
		time.Sleep(r.rp.settlePoll)
	}
	rp, j := r.rp, r.j
	rp.log.LogAttrs(context.Background(), slog.LevelInfo, "bulk replay ended here", slog.String("job", j.ID),
		slog.String("endpoint", j.EndpointID), slog.String("state", string(j.State)), slog.Int("listed", j.Listed),
		slog.Int("replayed", j.Replayed), slog.Int("skipped", j.Skipped), slog.Int("failed", j.Failed))
}

// settle waits until event id (none if "") is delivered or dead, or
// deleted, for at most settleMax, renewing the job's lease every third
// of it; false if the run must end (serve stopping, the job lost).
func (r *jobRun) settle(id string) bool {
	rp := r.rp
	deadline := time.Now().Add(rp.settleMax)
	for id != "" && time.Now().Before(deadline) {
		rec, err := rp.st.Get(r.ctx, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && rec.State.Terminal() {
			break
		}
		if time.Since(r.saved) > rp.lease/3 && !r.save() {
			return false
		}
		t := time.NewTimer(rp.settlePoll)
		select {
		case <-r.ctx.Done():
			t.Stop()
			r.end()
			return false
		case <-t.C:
		}
	}
	if r.ctx.Err() != nil {
		r.end()
		return false
	}
	return true
}

// isRunning reports whether this process runs job id.
func (rp *replays) isRunning(id string) bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	_, ok := rp.running[id]
	return ok
}

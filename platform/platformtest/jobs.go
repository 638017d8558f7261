package platformtest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/courierlab/courier/platform"
)

// job builds (does not store) a job of endpoint ep, by owner.
func (e *env) job(ep platform.Endpoint, owner string) platform.ReplayJob {
	return platform.ReplayJob{ID: e.id(platform.ReplayJobKind), AppID: ep.AppID, EndpointID: ep.ID, Owner: owner}
}

func (e *env) startJob(j platform.ReplayJob, lease time.Duration) platform.ReplayJob {
	e.t.Helper()
	out, err := e.s.CreateReplayJob(e.ctx, j, lease)
	if err != nil {
		e.t.Fatalf("CreateReplayJob: %v", err)
	}
	return out
}

// jobsLifecycle: a job is created running and claimed by its creator;
// a second job of the endpoint is refused, naming the running one; its
// owner saves progress and renews its lease; nobody claims it while the
// lease holds; once it ends another owner claims it, and the first
// owner's next save is refused, changing nothing; a finished job frees
// the endpoint for the next. Lists go newest first, a page at a time.
func jobsLifecycle(e *env) {
	a := e.app("a")
	ep, other := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID))
	since := e.now().Add(-time.Hour)
	in := e.job(ep, "serve-1")
	in.Since, in.Cursor, in.Replayed = since.Add(123*time.Nanosecond), 9, 9 // kept to the µs; progress starts at 0
	j := e.startJob(in, 10*time.Second)
	want := platform.ReplayJob{ID: in.ID, AppID: a.ID, EndpointID: ep.ID, Since: since, State: platform.JobRunning,
		Owner: "serve-1", LeaseUntil: e.now().Add(10 * time.Second), CreatedAt: e.now(), UpdatedAt: e.now()}
	diff(e.t, "CreateReplayJob", want, j)
	got, err := e.s.GetReplayJob(e.ctx, a.ID, ep.ID, j.ID)
	e.wantErr("GetReplayJob", err, nil)
	diff(e.t, "GetReplayJob", want, got)

	running, err := e.s.CreateReplayJob(e.ctx, e.job(ep, "serve-2"), time.Second)
	e.wantErr("a second job of the endpoint", err, platform.ErrConflict)
	diff(e.t, "the running job a second create names", want, running)
	otherJob := e.startJob(e.job(other, "serve-2"), time.Second)

	e.tick(time.Second)
	j.Cursor, j.Listed, j.Replayed, j.Skipped, j.Failed = 42, 5, 3, 1, 1
	j, err = e.s.SaveReplayJob(e.ctx, j, 10*time.Second)
	e.wantErr("SaveReplayJob", err, nil)
	want.Cursor, want.Listed, want.Replayed, want.Skipped, want.Failed = 42, 5, 3, 1, 1
	want.UpdatedAt, want.LeaseUntil = e.now(), e.now().Add(10*time.Second)
	diff(e.t, "SaveReplayJob (running)", want, j)

	e.tick(2 * time.Second) // other's lease ended, j's holds
	claimed, ok, err := e.s.ClaimReplayJob(e.ctx, "serve-3", 5*time.Second)
	if err != nil || !ok || claimed.ID != otherJob.ID || claimed.Owner != "serve-3" || !claimed.LeaseUntil.Equal(e.now().Add(5*time.Second)) {
		e.t.Errorf("ClaimReplayJob = %+v, %v, %v; want %s, serve-3's for 5s", claimed, ok, err, otherJob.ID)
	}
	if x, ok, err := e.s.ClaimReplayJob(e.ctx, "serve-3", 5*time.Second); ok || err != nil {
		e.t.Errorf("ClaimReplayJob with every lease held = %+v, %v, %v; want none", x, ok, err)
	}
	claimed.State = platform.JobDone
	if _, err := e.s.SaveReplayJob(e.ctx, claimed, time.Second); err != nil {
		e.t.Errorf("the claimed job's final save: %v", err)
	}
	e.tick(10 * time.Second)
	claimed, ok, err = e.s.ClaimReplayJob(e.ctx, "serve-2", 5*time.Second)
	if err != nil || !ok || claimed.ID != j.ID || claimed.Owner != "serve-2" || claimed.Cursor != 42 || claimed.Replayed != 3 {
		e.t.Errorf("ClaimReplayJob after j's lease = %+v, %v, %v; want j, serve-2's, its progress kept", claimed, ok, err)
	}
	stale := j
	stale.Cursor, stale.State = 99, platform.JobDone
	_, err = e.s.SaveReplayJob(e.ctx, stale, time.Second)
	e.wantErr("a save by the owner that lost the job", err, platform.ErrConflict)
	if got, _ := e.s.GetReplayJob(e.ctx, a.ID, ep.ID, j.ID); got.Cursor != 42 || got.State != platform.JobRunning {
		e.t.Errorf("job after a refused save = %+v; want unchanged", got)
	}

	claimed.Cursor, claimed.Replayed, claimed.State, claimed.Error = 50, 4, platform.JobFailed, strings.Repeat("é", platform.MaxJobErrorBytes)
	e.tick(time.Second)
	done, err := e.s.SaveReplayJob(e.ctx, claimed, time.Second)
	if err != nil || done.State != platform.JobFailed || !done.FinishedAt.Equal(e.now()) || !done.LeaseUntil.IsZero() ||
		len(done.Error) > platform.MaxJobErrorBytes || done.Cursor != 50 {
		e.t.Errorf("a final save = %+v, %v; want failed, finished now, no lease, its error clipped", done, err)
	}
	_, err = e.s.SaveReplayJob(e.ctx, claimed, time.Second)
	e.wantErr("a save after the job finished", err, platform.ErrConflict)
	e.tick(time.Hour)
	if x, ok, err := e.s.ClaimReplayJob(e.ctx, "serve-4", time.Second); ok || err != nil || x.ID != "" {
		e.t.Errorf("ClaimReplayJob = %+v, %v, %v; want no finished job claimed", x, ok, err)
	}
	next := e.startJob(e.job(ep, "serve-1"), time.Second)

	list, err := e.s.ListReplayJobs(e.ctx, a.ID, ep.ID, "", 1)
	e.wantErr("ListReplayJobs", err, nil)
	diff(e.t, "ListReplayJobs, first page", []platform.ReplayJob{next}, list)
	list, err = e.s.ListReplayJobs(e.ctx, a.ID, ep.ID, next.ID, 5)
	e.wantErr("ListReplayJobs", err, nil)
	diff(e.t, "ListReplayJobs, second page", []platform.ReplayJob{done}, list)
}

// jobsCancel: cancelling a running job ends it and its lease: its
// owner's next save is refused and nobody claims it. A finished job is
// not cancelled again, and a job is found only under its own endpoint.
func jobsCancel(e *env) {
	a, b := e.app("a"), e.app("b")
	ep, other := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID))
	theirs := e.create(e.endpoint(b.ID))
	j := e.startJob(e.job(ep, "serve-1"), time.Second)
	e.tick(time.Millisecond)
	c, err := e.s.CancelReplayJob(e.ctx, a.ID, ep.ID, j.ID)
	if err != nil || c.State != platform.JobCancelled || !c.FinishedAt.Equal(e.now()) || !c.LeaseUntil.IsZero() {
		e.t.Errorf("CancelReplayJob = %+v, %v; want cancelled now, no lease", c, err)
	}
	j.Cursor = 7
	_, err = e.s.SaveReplayJob(e.ctx, j, time.Second)
	e.wantErr("a save of a cancelled job", err, platform.ErrConflict)
	again, err := e.s.CancelReplayJob(e.ctx, a.ID, ep.ID, j.ID)
	e.wantErr("cancelling again", err, platform.ErrConflict)
	diff(e.t, "the job a second cancel returns", c, again)
	e.tick(time.Hour)
	if x, ok, err := e.s.ClaimReplayJob(e.ctx, "serve-2", time.Second); ok || err != nil {
		e.t.Errorf("ClaimReplayJob = %+v, %v, %v; want no cancelled job claimed", x, ok, err)
	}
	for _, k := range []struct{ app, ep, id string }{{a.ID, other.ID, j.ID}, {b.ID, ep.ID, j.ID}, {b.ID, theirs.ID, j.ID},
		{a.ID, ep.ID, "rpl_x"}, {a.ID, ep.ID, e.id(platform.ReplayJobKind)}} {
		_, err := e.s.GetReplayJob(e.ctx, k.app, k.ep, k.id)
		e.wantErr("GetReplayJob("+k.app+", "+k.ep+", "+k.id+")", err, platform.ErrNotFound)
		_, err = e.s.CancelReplayJob(e.ctx, k.app, k.ep, k.id)
		e.wantErr("CancelReplayJob("+k.app+", "+k.ep+", "+k.id+")", err, platform.ErrNotFound)
	}
}

// jobsBadArguments: each bad input names its field and changes nothing;
// a job of an endpoint that is not the application's is not found.
func jobsBadArguments(e *env) {
	a, b := e.app("a"), e.app("b")
	ep := e.create(e.endpoint(a.ID))
	for _, c := range []struct {
		field string
		edit  func(*platform.ReplayJob)
		lease time.Duration
	}{
		{"id", func(j *platform.ReplayJob) { j.ID = "job_1" }, time.Second},
		{"app_id", func(j *platform.ReplayJob) { j.AppID = "" }, time.Second},
		{"endpoint_id", func(j *platform.ReplayJob) { j.EndpointID = a.ID }, time.Second},
		{"owner", func(j *platform.ReplayJob) { j.Owner = "" }, time.Second},
		{"owner", func(j *platform.ReplayJob) { j.Owner = "a\nb" }, time.Second},
		{"lease", func(*platform.ReplayJob) {}, 0},
	} {
		j := e.job(ep, "serve-1")
		c.edit(&j)
		_, err := e.s.CreateReplayJob(e.ctx, j, c.lease)
		e.wantField("CreateReplayJob with a bad "+c.field, err, c.field)
	}
	notTheirs := e.job(ep, "serve-1")
	notTheirs.AppID = b.ID
	_, err := e.s.CreateReplayJob(e.ctx, notTheirs, time.Second)
	e.wantErr("a job of another application's endpoint", err, platform.ErrNotFound)
	if list, err := e.s.ListReplayJobs(e.ctx, a.ID, ep.ID, "", 10); err != nil || len(list) != 0 {
		e.t.Errorf("jobs after refused creates = %v, %v; want none", list, err)
	}

	j := e.startJob(e.job(ep, "serve-1"), time.Second)
	for field, edit := range map[string]func(*platform.ReplayJob){
		"state":  func(j *platform.ReplayJob) { j.State = "paused" },
		"listed": func(j *platform.ReplayJob) { j.Skipped = -1 },
		"owner":  func(j *platform.ReplayJob) { j.Owner = "" },
		"id":     func(j *platform.ReplayJob) { j.ID = ep.ID },
	} {
		bad := j
		bad.Cursor = 5
		edit(&bad)
		_, err := e.s.SaveReplayJob(e.ctx, bad, time.Second)
		e.wantField("SaveReplayJob with a bad "+field, err, field)
	}
	_, err = e.s.SaveReplayJob(e.ctx, j, -time.Second)
	e.wantField("SaveReplayJob with a lease below 0", err, "lease")
	_, _, err = e.s.ClaimReplayJob(e.ctx, "", time.Second)
	e.wantField("ClaimReplayJob without an owner", err, "owner")
	if got, _ := e.s.GetReplayJob(e.ctx, a.ID, ep.ID, j.ID); got != j {
		e.t.Errorf("job after refused saves = %+v; want %+v", got, j)
	}
	_, err = e.s.ListReplayJobs(e.ctx, a.ID, ep.ID, "", 0)
	e.wantField("ListReplayJobs with limit 0", err, "limit")
	_, err = e.s.ListReplayJobs(e.ctx, a.ID, ep.ID, ep.ID, 10)
	e.wantField("ListReplayJobs after an endpoint ID", err, "after")
	_, err = e.s.ListReplayJobs(e.ctx, b.ID, ep.ID, "", 10)
	e.wantErr("ListReplayJobs of another application's endpoint", err, platform.ErrNotFound)
}

// jobsDeleted: deleting an endpoint deletes its jobs, and deleting an
// application all of its endpoints'; a running job deleted so is no
// longer claimed, and its owner's next save fails.
func jobsDeleted(e *env) {
	a, b := e.app("a"), e.app("b")
	ep, kept := e.create(e.endpoint(a.ID)), e.create(e.endpoint(a.ID))
	theirs := e.create(e.endpoint(b.ID))
	gone, stays, theirJob := e.startJob(e.job(ep, "serve-1"), time.Second), e.startJob(e.job(kept, "serve-1"), time.Second),
		e.startJob(e.job(theirs, "serve-1"), time.Second)
	if err := e.s.DeleteEndpoint(e.ctx, a.ID, ep.ID); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.s.SaveReplayJob(e.ctx, gone, time.Second)
	e.wantErr("a save of a deleted endpoint's job", err, platform.ErrNotFound)
	if _, err := e.s.GetReplayJob(e.ctx, a.ID, kept.ID, stays.ID); err != nil {
		e.t.Errorf("another endpoint's job after a delete: %v", err)
	}
	if err := e.s.DeleteApp(e.ctx, b.ID); err != nil {
		e.t.Fatal(err)
	}
	_, err = e.s.SaveReplayJob(e.ctx, theirJob, time.Second)
	e.wantErr("a save of a deleted application's job", err, platform.ErrNotFound)
	e.tick(time.Hour)
	j, ok, err := e.s.ClaimReplayJob(e.ctx, "serve-2", time.Second)
	if err != nil || !ok || j.ID != stays.ID {
		e.t.Errorf("ClaimReplayJob after the deletes = %+v, %v, %v; want only %s left to claim", j, ok, err, stays.ID)
	}
	if j, ok, err := e.s.ClaimReplayJob(e.ctx, "serve-2", time.Second); ok || err != nil {
		e.t.Errorf("a second claim = %+v, %v, %v; want none", j, ok, err)
	}
}

// jobsClaimedOnce: claimers racing for two jobs whose leases ended get
// each job once; the others get none.
func jobsClaimedOnce(e *env) {
	a := e.app("a")
	want := map[string]bool{}
	for range 2 {
		j := e.startJob(e.job(e.create(e.endpoint(a.ID)), "dead-serve"), time.Second)
		want[j.ID] = true
	}
	e.tick(time.Minute)
	const claimers = 8
	got := make(chan string, claimers)
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, ok, err := e.s.ClaimReplayJob(e.ctx, fmt.Sprintf("serve-%d", i), time.Minute)
			switch {
			case err != nil:
				got <- "error: " + err.Error()
			case ok:
				got <- j.ID
			}
		}()
	}
	wg.Wait()
	close(got)
	claimed := map[string]bool{}
	for id := range got {
		if claimed[id] || !want[id] {
			e.t.Errorf("claim answered %s: twice, or not a job to claim (want each of %v once)", id, want)
		}
		claimed[id] = true
	}
	diff(e.t, "jobs claimed", want, claimed)
}

package platmem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/courierlab/courier/platform"
)

func (s *Store) CreateReplayJob(ctx context.Context, j platform.ReplayJob, lease time.Duration) (platform.ReplayJob, error) {
	if err := platform.CheckReplayJob(j, lease); err != nil {
		return platform.ReplayJob{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.ReplayJob{}, err
	}
	defer s.mu.Unlock()
	if e, ok := s.endpoints[j.EndpointID]; !ok || e.AppID != j.AppID {
		return platform.ReplayJob{}, notFound("endpoint", j.EndpointID)
	}
	if _, ok := s.jobs[j.ID]; ok {
		return platform.ReplayJob{}, fmt.Errorf("%w: replay job %q exists", platform.ErrConflict, j.ID)
	}
	for _, x := range s.jobs {
		if x.EndpointID == j.EndpointID && x.State == platform.JobRunning {
			return x, fmt.Errorf("%w: replay job %s of endpoint %s is running", platform.ErrConflict, x.ID, x.EndpointID)
		}
	}
	now := s.clock()
	j = platform.ReplayJob{ID: j.ID, AppID: j.AppID, EndpointID: j.EndpointID, Since: j.Since.Truncate(time.Microsecond).UTC(),
		State: platform.JobRunning, Owner: j.Owner, LeaseUntil: now.Add(lease).Truncate(time.Microsecond), CreatedAt: now, UpdatedAt: now}
	s.jobs[j.ID] = j
	return j, nil
}

// jobOf finds job id of endpoint ep of application app; s.mu is held.
func (s *Store) jobOf(app, ep, id string) (platform.ReplayJob, error) {
	j, ok := s.jobs[id]
	if !ok || j.EndpointID != ep || j.AppID != app {
		return platform.ReplayJob{}, notFound("replay job", id)
	}
	return j, nil
}

func (s *Store) GetReplayJob(ctx context.Context, app, ep, id string) (platform.ReplayJob, error) {
	if err := s.lock(ctx); err != nil {
		return platform.ReplayJob{}, err
	}
	defer s.mu.Unlock()
	return s.jobOf(app, ep, id)
}

func (s *Store) ListReplayJobs(ctx context.Context, app, ep, after string, limit int) ([]platform.ReplayJob, error) {
	if err := platform.CheckPage(platform.ReplayJobKind, after, limit); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if e, ok := s.endpoints[ep]; !ok || e.AppID != app {
		return nil, notFound("endpoint", ep)
	}
	out := []platform.ReplayJob{}
	for _, j := range s.jobs {
		if j.EndpointID == ep && j.AppID == app && (after == "" || j.ID < after) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b platform.ReplayJob) int { return strings.Compare(b.ID, a.ID) })
	return out[:min(limit, len(out))], nil
}

func (s *Store) ClaimReplayJob(ctx context.Context, owner string, lease time.Duration) (platform.ReplayJob, bool, error) {
	if err := platform.CheckClaim(owner, lease); err != nil {
		return platform.ReplayJob{}, false, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.ReplayJob{}, false, err
	}
	defer s.mu.Unlock()
	now := s.clock()
	var oldest platform.ReplayJob
	for _, j := range s.jobs {
		if j.State == platform.JobRunning && !j.LeaseUntil.After(now) && (oldest.ID == "" || j.ID < oldest.ID) {
			oldest = j
		}
	}
	if oldest.ID == "" {
		return platform.ReplayJob{}, false, nil
	}
	oldest.Owner, oldest.LeaseUntil, oldest.UpdatedAt = owner, now.Add(lease).Truncate(time.Microsecond), now
	s.jobs[oldest.ID] = oldest
	return oldest, true, nil
}

func (s *Store) SaveReplayJob(ctx context.Context, j platform.ReplayJob, lease time.Duration) (platform.ReplayJob, error) {
	j, err := platform.CheckJobSave(j, lease)
	if err != nil {
		return platform.ReplayJob{}, err
	}
	if err := s.lock(ctx); err != nil {
		return platform.ReplayJob{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.jobs[j.ID]
	switch {
	case !ok:
		return platform.ReplayJob{}, notFound("replay job", j.ID)
	case old.State != platform.JobRunning || old.Owner != j.Owner:
		return platform.ReplayJob{}, fmt.Errorf("%w: replay job %s is %s, held by %q, not %q", platform.ErrConflict, j.ID, old.State, old.Owner, j.Owner)
	}
	now := s.clock()
	old.Cursor, old.Listed, old.Replayed, old.Skipped, old.Failed = j.Cursor, j.Listed, j.Replayed, j.Skipped, j.Failed
	old.State, old.Error, old.UpdatedAt, old.LeaseUntil = j.State, j.Error, now, now.Add(lease).Truncate(time.Microsecond)
	if old.Finished() {
		old.FinishedAt, old.LeaseUntil = now, time.Time{}
	}
	s.jobs[j.ID] = old
	return old, nil
}

func (s *Store) CancelReplayJob(ctx context.Context, app, ep, id string) (platform.ReplayJob, error) {
	if err := s.lock(ctx); err != nil {
		return platform.ReplayJob{}, err
	}
	defer s.mu.Unlock()
	j, err := s.jobOf(app, ep, id)
	if err != nil {
		return platform.ReplayJob{}, err
	}
	if j.Finished() {
		return j, fmt.Errorf("%w: replay job %s is %s already", platform.ErrConflict, id, j.State)
	}
	now := s.clock()
	j.State, j.UpdatedAt, j.FinishedAt, j.LeaseUntil = platform.JobCancelled, now, now, time.Time{}
	s.jobs[id] = j
	return j, nil
}

// forgetJobs deletes the jobs gone says are; s.mu is held.
func (s *Store) forgetJobs(gone func(platform.ReplayJob) bool) {
	for k, j := range s.jobs {
		if gone(j) {
			delete(s.jobs, k)
		}
	}
}

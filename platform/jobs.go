package platform

import (
	"context"
	"strings"
	"time"
)

// Bulk replay jobs, kept in the store so that a restart resumes them. A
// job pages through its endpoint's dead letters (ResumeDeadPage) and
// saves where it is (Cursor) and what it did after each page. One serve
// process runs a job at a time: the one whose claim (Owner, LeaseUntil)
// holds. It renews the claim with each save; when the process dies, the
// claim ends and another process (or the same one restarted) claims the
// job (ClaimReplayJob) and goes on from the cursor.

// ReplayJobKind prefixes a bulk replay job's ID.
const ReplayJobKind = "rpl"

// JobState is where a bulk replay job is.
type JobState string

const (
	JobRunning   JobState = "running"   // listing and replaying, or waiting to be claimed again
	JobDone      JobState = "done"      // every chosen dead letter was gone through
	JobFailed    JobState = "failed"    // the listing failed; Error says why
	JobCancelled JobState = "cancelled" // an operator cancelled it
)

// MaxJobOwnerBytes bounds a job's Owner; MaxJobErrorBytes its Error (a
// longer one is clipped).
const (
	MaxJobOwnerBytes = 256
	MaxJobErrorBytes = 1024
)

// ReplayJob is one bulk replay of an endpoint's dead letters and its
// progress.
type ReplayJob struct {
	ID         string // NewID(ReplayJobKind, ...): lists go newest first by it
	AppID      string
	EndpointID string
	Since      time.Time // zero: every dead letter (Chosen)
	State      JobState
	// Cursor is the Seq of the endpoint's stream's dead letters the job
	// has gone through: it lists after it next (ReplayedPage.Next).
	Cursor uint64
	// Listed, Replayed, Skipped and Failed add up the job's pages
	// (ReplayedPage); Replayed counts Again too.
	Listed, Replayed, Skipped, Failed int
	// Error says why a job failed (or an operator's word).
	Error string
	// Owner is the process that runs the job, until LeaseUntil (the
	// store's clock): after it, another may claim the job.
	Owner      string
	LeaseUntil time.Time
	// CreatedAt is when it started, UpdatedAt when it last saved,
	// FinishedAt when it left JobRunning (zero until then).
	CreatedAt, UpdatedAt, FinishedAt time.Time
}

// Finished reports whether the job has ended (done, failed or
// cancelled).
func (j ReplayJob) Finished() bool { return j.State != JobRunning }

// ReplayJobStore keeps bulk replay jobs; part of Store. Leases are
// durations from the store's now.
type ReplayJobStore interface {
	// CreateReplayJob stores j running, claimed by j.Owner for lease,
	// with Cursor 0 and nothing counted (CheckReplayJob). ErrNotFound if
	// application j.AppID has no endpoint j.EndpointID. If the endpoint
	// has a running job already, it returns that job and an ErrConflict:
	// one job per endpoint runs at a time. An ID taken is an ErrConflict
	// too, with the zero job.
	CreateReplayJob(ctx context.Context, j ReplayJob, lease time.Duration) (ReplayJob, error)
	// GetReplayJob returns job id of endpoint ep of application app.
	GetReplayJob(ctx context.Context, app, ep, id string) (ReplayJob, error)
	// ListReplayJobs lists the jobs of endpoint ep of application app,
	// newest first (ID order, descending), after the job ID after in that
	// order. ErrNotFound if the application has no such endpoint.
	ListReplayJobs(ctx context.Context, app, ep, after string, limit int) ([]ReplayJob, error)
	// ClaimReplayJob gives owner, for lease, the oldest running job
	// whose lease has ended; ok is false if there is none.
	ClaimReplayJob(ctx context.Context, owner string, lease time.Duration) (j ReplayJob, ok bool, err error)
	// SaveReplayJob saves j's progress (Cursor, the counts, and State,
	// FinishedAt and Error when State leaves JobRunning) and renews its
	// owner's lease for lease, if j.Owner still holds the running job
	// j.ID. If not (another process claimed it, or it was cancelled) it
	// changes nothing and fails with ErrConflict: the caller stops.
	SaveReplayJob(ctx context.Context, j ReplayJob, lease time.Duration) (ReplayJob, error)
	// CancelReplayJob moves the running job id of endpoint ep of
	// application app to JobCancelled, ending its lease: its owner stops
	// at its next save. A finished job is returned as it is, with an
	// ErrConflict.
	CancelReplayJob(ctx context.Context, app, ep, id string) (ReplayJob, error)
}

// CheckReplayJob checks a job to create: its IDs, a non-empty owner
// (checked as a text of at most MaxJobOwnerBytes), and a lease above 0.
func CheckReplayJob(j ReplayJob, lease time.Duration) error {
	if err := CheckID("id", ReplayJobKind, j.ID); err != nil {
		return err
	}
	if err := CheckID("app_id", AppKind, j.AppID); err != nil {
		return err
	}
	if err := CheckID("endpoint_id", EndpointKind, j.EndpointID); err != nil {
		return err
	}
	return CheckClaim(j.Owner, lease)
}

// CheckJobSave checks a save: an ID, an owner and lease as
// CheckReplayJob's, a known state, counts not below 0. It returns j with
// Error clipped to MaxJobErrorBytes.
func CheckJobSave(j ReplayJob, lease time.Duration) (ReplayJob, error) {
	if err := CheckID("id", ReplayJobKind, j.ID); err != nil {
		return j, err
	}
	if err := CheckClaim(j.Owner, lease); err != nil {
		return j, err
	}
	switch j.State {
	case JobRunning, JobDone, JobFailed, JobCancelled:
	default:
		return j, fieldErr("state", "%q is not running, done, failed or cancelled", clip(string(j.State)))
	}
	if min(j.Listed, j.Replayed, j.Skipped, j.Failed) < 0 {
		return j, fieldErr("listed", "a count is below 0 (%d, %d, %d, %d)", j.Listed, j.Replayed, j.Skipped, j.Failed)
	}
	if len(j.Error) > MaxJobErrorBytes {
		j.Error = strings.ToValidUTF8(j.Error[:MaxJobErrorBytes], "")
	}
	return j, nil
}

// CheckClaim checks ClaimReplayJob's owner and lease.
func CheckClaim(owner string, lease time.Duration) error {
	if err := checkText("owner", owner, MaxJobOwnerBytes, false); err != nil {
		return err
	}
	if lease <= 0 {
		return fieldErr("lease", "is %v; must be above 0", lease)
	}
	return nil
}

package store

import (
	"context"
	"encoding/json"
	"time"
)

// JobStatus is where a batch-eval job stands (the jobs of coderun's HTTP
// API, package server/jobs).
type JobStatus string

// The statuses a job is stored with.
const (
	JobRunning   JobStatus = "running"
	JobSucceeded JobStatus = "succeeded" // every item has a verdict
	JobFailed    JobStatus = "failed"    // the runtime failed: Error says how
	JobCancelled JobStatus = "cancelled" // cancelled by its tenant
)

// JobInterrupted is never stored: it is how a running job is shown whose
// owner's lease has expired or was released (its server shut down,
// crashed, or its machine restarted). Its verdicts so far are kept, and it
// can be claimed and resumed.
const JobInterrupted JobStatus = "interrupted"

// Final reports whether a job in this status has ended for good.
func (s JobStatus) Final() bool { return s == JobSucceeded || s == JobFailed || s == JobCancelled }

// Job is the record of one batch-eval job: what was submitted (Spec,
// opaque to the store: the server's), where it stands, and how many
// verdicts it has; the verdicts themselves are read with
// [JobRecords.JobVerdicts].
type Job struct {
	Tenant     string
	ID         string
	CreatedAt  time.Time
	FinishedAt time.Time
	Status     JobStatus
	// Error says why a failed job failed.
	Error string
	// Total is the number of items; Verdicts how many have a verdict.
	Total    int
	Verdicts int
	// Spec is what was submitted, as the server wrote it.
	Spec json.RawMessage
	// Owner is who runs the job, if anyone, and LeaseUntil when its lease
	// expires unless renewed.
	Owner      Owner
	LeaseUntil time.Time
}

// Shown returns the status to show now: [JobInterrupted] for a running job
// whose owner's lease has expired or was released.
func (j *Job) Shown() JobStatus { return j.ShownAt(time.Now()) }

// ShownAt returns the status to show at a time.
func (j *Job) ShownAt(now time.Time) JobStatus {
	if j.Status == JobRunning && (j.Owner == "" || !j.LeaseUntil.After(now)) {
		return JobInterrupted
	}
	return j.Status
}

// NewJob is what a job starts with.
type NewJob struct {
	// ID is the job's id; empty: a new one.
	ID    string
	Owner Owner
	Total int
	Spec  json.RawMessage
}

// JobRecords are a tenant's batch-eval jobs. A job is run by one owner at
// a time, by lease, as a run is driven ([Tenant]): [JobRecords.CreateJob]
// and [JobRecords.ClaimJob] give the owner a lease, [JobRecords.RenewJob]
// and every [JobRecords.AddVerdicts] extend it, and a job whose owner
// stopped renewing or released it shows as [JobInterrupted] and can be
// claimed. A job of another tenant is [ErrNotFound] here.
type JobRecords interface {
	// CreateJob stores a new job, status running, owned by nj.Owner with
	// a fresh lease.
	CreateJob(ctx context.Context, nj NewJob) (*Job, error)
	// GetJob returns the job with the given id.
	GetJob(ctx context.Context, id string) (*Job, error)
	// ListJobs returns the tenant's jobs, newest first, without their
	// Spec (it can be large: GetJob reads it).
	ListJobs(ctx context.Context) ([]*Job, error)
	// DeleteJob removes a job that is not running under a live lease,
	// with its verdicts.
	DeleteJob(ctx context.Context, id string) error

	// ClaimJob makes owner the job's owner with a fresh lease: when the
	// job has no owner, its owner's lease has expired, or owner already
	// owns it; [ErrNotOwner] while another owner's lease runs, [ErrEnded]
	// for a job that has ended.
	ClaimJob(ctx context.Context, id string, owner Owner) (*Job, error)
	// RenewJob extends owner's lease on the job and returns when it now
	// expires; [ErrNotOwner] when owner no longer owns it.
	RenewJob(ctx context.Context, id string, owner Owner) (time.Time, error)
	// AddVerdicts appends verdicts to the job's, in order, in one
	// transaction, if owner owns the job (and extends its lease); it
	// returns the job's number of verdicts after them.
	AddVerdicts(ctx context.Context, id string, owner Owner, verdicts ...json.RawMessage) (int, error)
	// EndJob ends the job owner owns with a final status (and, for
	// JobFailed, an error), and releases its lease.
	EndJob(ctx context.Context, id string, owner Owner, status JobStatus, errText string) error
	// ReleaseJob gives up owner's lease on a running job, which then shows
	// as [JobInterrupted] (a server stopping its jobs to resume later).
	ReleaseJob(ctx context.Context, id string, owner Owner) error
	// JobVerdicts returns the job's verdicts after the first after, in
	// order.
	JobVerdicts(ctx context.Context, id string, after int) ([]json.RawMessage, error)
}

// JobRenewer renews one tenant's leases on jobs, as [KeepAlive] needs.
type JobRenewer struct{ Jobs JobRecords }

// Renew renews owner's lease on job id.
func (r JobRenewer) Renew(ctx context.Context, id string, owner Owner) (time.Time, error) {
	return r.Jobs.RenewJob(ctx, id, owner)
}

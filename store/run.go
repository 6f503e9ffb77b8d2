package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Status is where a run stands. A run is [StatusRunning] from its creation
// until it pauses for approval or ends.
type Status string

// The statuses a run is stored with.
const (
	StatusRunning          Status = "running"
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusSucceeded        Status = "succeeded"
	StatusFailed           Status = "failed"
	StatusCancelled        Status = "cancelled"
)

// StatusInterrupted is never stored: it is how a running run is shown
// whose owner's lease has expired (its process was killed or crashed, its
// machine restarted) or that has no owner. Such a run can be claimed and
// resumes from its last checkpoint.
const StatusInterrupted Status = "interrupted"

// Final reports whether a run in this status has ended for good.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Run is one agent run: the task, the settings it runs with, where it
// stands, and, once it has ended, its answer or failure report.
type Run struct {
	// Tenant is the tenant the run belongs to.
	Tenant     string    `json:"tenant"`
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Task       string    `json:"task"`
	// Model is the model spec, "provider:model".
	Model string `json:"model"`
	// Mode is the agent's mode ("single", "steps").
	Mode   string `json:"mode"`
	Status Status `json:"status"`
	// Outcome says how the run ended ("answered", "retries_exhausted",
	// "timeout", ...), as the agent names it; empty while it runs.
	Outcome string `json:"outcome,omitempty"`
	// Answer is the final answer, when there is one.
	Answer string `json:"answer,omitempty"`
	// Failure is the honest report of a run that did not produce an
	// answer, and Pending the code waiting for a person's approval, as
	// the agent wrote them (JSON the store does not look into).
	Failure   json.RawMessage `json:"failure,omitempty"`
	Pending   json.RawMessage `json:"pending,omitempty"`
	Scorecard Scorecard       `json:"scorecard"`
	// Inputs describe the user's input files (their contents are in the
	// run's files, role "input").
	Inputs []InputFile `json:"inputs"`
	// Config is the agent's settings for the run, as the agent wrote them.
	Config json.RawMessage `json:"config,omitempty"`
	// State is the agent's checkpoint after the last step: opaque to the
	// store.
	State json.RawMessage `json:"-"`
	// Owner is who drives the run, if anyone, and LeaseUntil when its
	// lease expires unless renewed.
	Owner      Owner     `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Steps is the number of steps recorded.
	Steps int `json:"steps"`
}

// Shown returns the status to show now: [StatusInterrupted] for a running
// run whose owner's lease has expired, or that has no owner.
func (r *Run) Shown() Status { return r.ShownAt(time.Now()) }

// ShownAt returns the status to show at a time.
func (r *Run) ShownAt(now time.Time) Status {
	if r.Status == StatusRunning && (r.Owner == "" || !r.LeaseUntil.After(now)) {
		return StatusInterrupted
	}
	return r.Status
}

// InputFile describes one of the user's input files as the model is told
// about it.
type InputFile struct {
	// Path is where the file is in the workspace.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Summary is what the model is told about the file's shape (a CSV's
	// header and row count, a text file's line count).
	Summary string `json:"summary,omitempty"`
}

// NewRun is what a run starts with.
type NewRun struct {
	// ID is the run's id; empty means a new random one.
	ID     string
	Task   string
	Model  string
	Mode   string
	Inputs []InputFile
	// InputFiles are the contents of the input files, kept for resuming.
	InputFiles []File
	Config     json.RawMessage
	State      json.RawMessage
	// Owner drives the new run; it gets a lease.
	Owner Owner
}

// NewID returns a new random run id: 12 hexadecimal digits.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Filter selects runs to list.
type Filter struct {
	// Status, if set, keeps runs shown with this status
	// (StatusInterrupted: running runs whose owner's lease has expired;
	// StatusRunning: those whose lease runs).
	Status Status
	// Since keeps runs created at or after it.
	Since time.Time
	// Limit bounds the number of runs, newest first; 0 means no bound.
	Limit int
}

// Update is what one record changes in a run, atomically: the steps it
// appends, the agent's new checkpoint, and whatever else changed with them.
// Zero fields leave the run as it was.
type Update struct {
	// Steps are appended in order; their Seq and At are filled in.
	Steps []Step
	// State replaces the agent's checkpoint.
	State json.RawMessage
	// Status replaces the status.
	Status Status
	// Scorecard replaces the scorecard.
	Scorecard *Scorecard
	// Pending sets the code awaiting approval (the agent's JSON);
	// ClearPending removes it.
	Pending      json.RawMessage
	ClearPending bool
	// Outcome, Answer and Failure (the agent's JSON) are set when the run
	// ends (Status final), with the finish time.
	Outcome string
	Answer  string
	Failure json.RawMessage
	// Files are files the run produced, stored with role output (replacing
	// files of the same path); unless they say otherwise, they belong to
	// the first step of the update.
	Files []File
	// Review opens an item in the review queue.
	Review *NewReview
	// CloseReviews closes the run's open review items of this kind
	// ("approval", "failure", ...) with the given resolution.
	CloseReviews *CloseReviews
	// Release gives up ownership (the run paused or ended).
	Release bool
}

// CloseReviews closes a run's open review items of a kind.
type CloseReviews struct {
	Kind       ReviewKind
	Resolution string
	Note       string
}

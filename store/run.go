package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
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

// StatusInterrupted is never stored: it is how a running run whose owner
// process is gone (killed, crashed, the machine restarted) is shown. Such a
// run resumes from its last checkpoint.
const StatusInterrupted Status = "interrupted"

// Final reports whether a run in this status has ended for good.
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Run is one agent run: the task, the settings it runs with, where it
// stands, and, once it has ended, its answer or failure report.
type Run struct {
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
	// Failure is the honest report of a run that did not produce an answer.
	Failure *FailureReport `json:"failure,omitempty"`
	// Pending is the code waiting for a person's approval.
	Pending   *PendingApproval `json:"pending,omitempty"`
	Scorecard Scorecard        `json:"scorecard"`
	// Inputs describe the user's input files (their contents are in the
	// run's files, role "input").
	Inputs []InputFile `json:"inputs"`
	// Config is the agent's settings for the run, as the agent wrote them.
	Config json.RawMessage `json:"config,omitempty"`
	// State is the agent's checkpoint after the last step: opaque to the
	// store.
	State json.RawMessage `json:"-"`
	// Owner is the process driving the run, if any.
	Owner Owner `json:"owner,omitempty"`
	// Steps is the number of steps recorded.
	Steps int `json:"steps"`
}

// Shown returns the status to show: [StatusInterrupted] for a running run
// whose owner process is gone.
func (r *Run) Shown() Status {
	if r.Status == StatusRunning && !r.Owner.Alive() {
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

// PendingApproval is code held for a person's approval.
type PendingApproval struct {
	Language string `json:"language"`
	Code     string `json:"code"`
	// Explanation is the policy's paragraph; Findings its causes.
	Explanation string    `json:"explanation"`
	Findings    []Finding `json:"findings,omitempty"`
	// Step is the seq of the review step that asked.
	Step int       `json:"step"`
	At   time.Time `json:"at"`
}

// Owner names a live process driving a run: "host/pid/start", start being
// the process's start time in clock ticks since boot (so that a recycled
// pid is not taken for the owner).
type Owner string

// CurrentProcess is this process as an owner.
func CurrentProcess() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return Owner(fmt.Sprintf("%s/%d/%s", host, pid, processStart(pid)))
}

// Alive reports whether the owner process still runs. An owner on another
// host is taken to be alive (it cannot be checked from here); no owner is
// not alive.
func (o Owner) Alive() bool {
	if o == "" {
		return false
	}
	parts := strings.Split(string(o), "/")
	if len(parts) != 3 {
		return false
	}
	if host, _ := os.Hostname(); host != parts[0] {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	start := processStart(pid)
	return start != "" && start == parts[2]
}

// processStart reads field 22 of /proc/PID/stat, the start time, or ""
// when the process does not exist.
func processStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); the start time is field 22.
	if len(fields) < 20 {
		return ""
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return "" // a zombie is gone for our purposes
	}
	return fields[19]
}

// ErrNotOwner is returned when a process records into a run it does not
// own, or claims a run another live process owns.
var ErrNotOwner = errors.New("the run is driven by another process")

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
	Owner      Owner
}

// NewID returns a new random run id: 12 hexadecimal digits.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreateRun stores a new run, status running, owned by nr.Owner.
func (s *Store) CreateRun(ctx context.Context, nr NewRun) (*Run, error) {
	if nr.ID == "" {
		nr.ID = NewID()
	}
	if nr.Inputs == nil {
		nr.Inputs = []InputFile{}
	}
	now := s.now()
	inputs, err := json.Marshal(nr.Inputs)
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	cfg := nr.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	score, _ := json.Marshal(Scorecard{})
	err = s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, created_at, updated_at, task, model, mode, status,
			scorecard, inputs, config, state, owner) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
			nr.ID, formatTime(now), formatTime(now), nr.Task, nr.Model, nr.Mode, StatusRunning,
			string(score), string(inputs), string(cfg), string(nr.State), string(nr.Owner))
		if err != nil {
			return err
		}
		for _, f := range nr.InputFiles {
			f.Role = RoleInput
			if err := putFile(ctx, tx, nr.ID, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	return s.GetRun(ctx, nr.ID)
}

const runColumns = `id, created_at, updated_at, finished_at, task, model, mode, status, outcome, answer,
	failure, pending, scorecard, inputs, config, state, owner, steps`

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(sc rowScanner) (*Run, error) {
	var (
		r                                      Run
		created, updated, finished             string
		failure, pending, score, inputs, state string
		cfg                                    string
	)
	if err := sc.Scan(&r.ID, &created, &updated, &finished, &r.Task, &r.Model, &r.Mode, &r.Status,
		&r.Outcome, &r.Answer, &failure, &pending, &score, &inputs, &cfg, &state, &r.Owner, &r.Steps); err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = parseTime(created), parseTime(updated), parseTime(finished)
	if failure != "" {
		r.Failure = new(FailureReport)
		if err := json.Unmarshal([]byte(failure), r.Failure); err != nil {
			return nil, fmt.Errorf("run %s: failure report: %w", r.ID, err)
		}
	}
	if pending != "" {
		r.Pending = new(PendingApproval)
		if err := json.Unmarshal([]byte(pending), r.Pending); err != nil {
			return nil, fmt.Errorf("run %s: pending approval: %w", r.ID, err)
		}
	}
	if err := json.Unmarshal([]byte(score), &r.Scorecard); err != nil {
		return nil, fmt.Errorf("run %s: scorecard: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(inputs), &r.Inputs); err != nil {
		return nil, fmt.Errorf("run %s: inputs: %w", r.ID, err)
	}
	r.Config = json.RawMessage(cfg)
	if state != "" {
		r.State = json.RawMessage(state)
	}
	return &r, nil
}

// GetRun returns the run with the given id, or with the only id starting
// with it (at least 4 characters).
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) && len(id) >= 4 {
		rows, qerr := s.db.QueryContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
			escapeLike(id)+"%")
		if qerr != nil {
			return nil, fmt.Errorf("store: run %s: %w", id, qerr)
		}
		defer rows.Close()
		var found []*Run
		for rows.Next() {
			x, err := scanRun(rows)
			if err != nil {
				return nil, fmt.Errorf("store: run %s: %w", id, err)
			}
			found = append(found, x)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: run %s: %w", id, err)
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 2:
			return nil, fmt.Errorf("store: run %s: the prefix matches several runs", id)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: run %s: %w", id, err)
	}
	return r, nil
}

func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// Filter selects runs to list.
type Filter struct {
	// Status, if set, keeps runs stored with this status
	// (StatusInterrupted selects running runs whose owner is gone).
	Status Status
	// Since keeps runs created at or after it.
	Since time.Time
	// Limit bounds the number of runs, newest first; 0 means no bound.
	Limit int
}

// ListRuns returns runs, newest first.
func (s *Store) ListRuns(ctx context.Context, f Filter) ([]*Run, error) {
	q := "SELECT " + runColumns + " FROM runs WHERE 1=1"
	var args []any
	if f.Status != "" {
		st := f.Status
		if st == StatusInterrupted {
			st = StatusRunning
		}
		q += " AND status = ?"
		args = append(args, st)
	}
	if !f.Since.IsZero() {
		q += " AND created_at >= ?"
		args = append(args, formatTime(f.Since))
	}
	q += " ORDER BY created_at DESC, id"
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	defer rows.Close()
	var out []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list runs: %w", err)
		}
		if f.Status == StatusInterrupted && r.Shown() != StatusInterrupted {
			continue
		}
		if f.Status == StatusRunning && r.Shown() != StatusRunning {
			continue
		}
		out = append(out, r)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return out, nil
}

// Claim makes owner the run's owner, so that it may record into it: when
// the run has no owner, its owner is gone, or owner already owns it. A run
// that has ended cannot be claimed.
func (s *Store) Claim(ctx context.Context, id string, owner Owner) (*Run, error) {
	var run *Run
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanRun(tx.QueryRowContext(ctx, "SELECT "+runColumns+" FROM runs WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if r.Status.Final() {
			return fmt.Errorf("run %s has already ended (%s)", id, r.Status)
		}
		if r.Owner != "" && r.Owner != owner && r.Owner.Alive() {
			return fmt.Errorf("run %s: %w (%s)", id, ErrNotOwner, r.Owner)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET owner = ? WHERE id = ?", string(owner), id); err != nil {
			return err
		}
		r.Owner = owner
		run = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim: %w", err)
	}
	return run, nil
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
	// Pending sets the code awaiting approval; ClearPending removes it.
	Pending      *PendingApproval
	ClearPending bool
	// Outcome, Answer and Failure are set when the run ends (Status final),
	// with the finish time.
	Outcome string
	Answer  string
	Failure *FailureReport
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

// CloseReviews closes open review items.
type CloseReviews struct {
	Kind       ReviewKind
	Resolution string
	Note       string
}

// Record applies u to the run in one transaction, if owner owns the run,
// and returns the steps as stored (with Seq and At).
func (s *Store) Record(ctx context.Context, id string, owner Owner, u Update) ([]Step, error) {
	var steps []Step
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var cur Owner
		var n int
		var status Status
		err := tx.QueryRowContext(ctx, "SELECT owner, steps, status FROM runs WHERE id = ?", id).Scan(&cur, &n, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("run %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if cur != owner {
			return fmt.Errorf("run %s: %w (%s)", id, ErrNotOwner, cur)
		}
		if status.Final() {
			return fmt.Errorf("run %s has already ended (%s)", id, status)
		}
		now := s.now()
		for _, st := range u.Steps {
			n++
			st.Seq, st.At = n, now
			if len(st.Data) == 0 {
				st.Data = json.RawMessage("{}")
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO steps (run_id, seq, at, kind, attempt, summary, data)
				VALUES (?,?,?,?,?,?,?)`, id, st.Seq, formatTime(now), st.Kind, st.Attempt, st.Summary, string(st.Data)); err != nil {
				return err
			}
			steps = append(steps, st)
		}
		sets := []string{"updated_at = ?", "steps = ?"}
		args := []any{formatTime(now), n}
		set := func(col string, v any) {
			sets = append(sets, col+" = ?")
			args = append(args, v)
		}
		if u.State != nil {
			set("state", string(u.State))
		}
		if u.Status != "" {
			set("status", string(u.Status))
			if u.Status.Final() {
				set("finished_at", formatTime(now))
				set("outcome", u.Outcome)
				set("answer", u.Answer)
				failure := ""
				if u.Failure != nil {
					b, err := json.Marshal(u.Failure)
					if err != nil {
						return err
					}
					failure = string(b)
				}
				set("failure", failure)
			}
		}
		if u.Scorecard != nil {
			b, err := json.Marshal(u.Scorecard)
			if err != nil {
				return err
			}
			set("scorecard", string(b))
		}
		switch {
		case u.Pending != nil:
			b, err := json.Marshal(u.Pending)
			if err != nil {
				return err
			}
			set("pending", string(b))
		case u.ClearPending:
			set("pending", "")
		}
		if u.Release {
			set("owner", "")
		}
		args = append(args, id)
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET "+strings.Join(sets, ", ")+" WHERE id = ?", args...); err != nil {
			return err
		}
		for _, f := range u.Files {
			f.Role = RoleOutput
			if f.Step == 0 && len(steps) > 0 {
				f.Step = steps[0].Seq
			}
			if err := putFile(ctx, tx, id, f); err != nil {
				return err
			}
		}
		if u.CloseReviews != nil {
			if err := closeReviews(ctx, tx, id, *u.CloseReviews, now); err != nil {
				return err
			}
		}
		if u.Review != nil {
			if err := openReview(ctx, tx, id, *u.Review, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: record: %w", err)
	}
	return steps, nil
}

// DeleteRun removes a run with its steps, files and review items.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, "DELETE FROM runs WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("store: delete run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: delete run %s: %w", id, ErrNotFound)
	}
	return nil
}

// tx runs f in a transaction (BEGIN IMMEDIATE: writers queue up at the
// start instead of failing half-way).
func (s *Store) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

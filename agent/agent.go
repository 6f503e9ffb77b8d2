package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// Mode is how the agent works towards an answer.
type Mode string

// The modes.
const (
	// ModeSingle: one complete program, retried with feedback until it
	// works or the retries run out, then interpreted.
	ModeSingle Mode = "single"
	// ModeSteps: several cells in a persistent session with an observation
	// after each (CodeAct-style), up to a step budget, then interpreted.
	ModeSteps Mode = "steps"
)

// ParseMode reads "single" or "steps".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeSingle, ModeSteps:
		return m, nil
	}
	return "", fmt.Errorf("agent: unknown mode %q (want single or steps)", s)
}

// Format is how the model hands over its code.
type Format string

// The formats.
const (
	// FormatTool: the native run_code tool (function calling).
	FormatTool Format = "tool"
	// FormatFenced: a fenced code block in the reply, for models without
	// tool calling (llm.ExtractCode, llm.SelectCode).
	FormatFenced Format = "fenced"
)

// ApprovalMode says who approves code the policy asks about.
type ApprovalMode string

// The approval modes.
const (
	// ApproveAsk asks the Config's Approver; without one, the run pauses
	// in awaiting_approval until [Decide] is called and the run resumed.
	ApproveAsk ApprovalMode = "ask"
	// ApproveAll approves everything the policy asks about (never what it
	// denies).
	ApproveAll ApprovalMode = "all"
	// ApproveNone rejects everything the policy asks about: the default of
	// non-interactive runs.
	ApproveNone ApprovalMode = "none"
)

// ParseApprovalMode reads "ask", "all" or "none".
func ParseApprovalMode(s string) (ApprovalMode, error) {
	switch m := ApprovalMode(strings.ToLower(strings.TrimSpace(s))); m {
	case ApproveAsk, ApproveAll, ApproveNone:
		return m, nil
	}
	return "", fmt.Errorf("agent: unknown approval mode %q (want ask, all or none)", s)
}

// Defaults.
const (
	DefaultMaxRetries   = 3
	DefaultMaxSteps     = 10
	DefaultMaxFileBytes = 16 << 20
)

// Config configures an [Agent].
type Config struct {
	// Model writes the code and the answer; ModelSpec ("openai:gpt-4.1-mini")
	// names it in records and traces.
	Model     llm.Provider
	ModelSpec string
	// Backend runs the code. Steps mode wants a persistent one (a session);
	// over a one-shot backend only files carry over between cells.
	Backend Backend
	// Store records every step, in one tenant's records (a
	// store.Tenant). Required: runs are records.
	Store Store
	// Reviewer is the pre-flight policy review; nil means the default
	// policy.
	Reviewer *policy.Reviewer
	// Approval and Approver decide about code the policy asks about.
	Approval ApprovalMode
	Approver Approver

	// The settings of a run, stored with it (a resumed run keeps its own).
	Mode   Mode
	Format Format
	// MaxRetries bounds how often the model is sent back to fix its code;
	// 0 means DefaultMaxRetries, a negative value none.
	MaxRetries int
	// TimeoutRetries bounds how often code that ran past its wall-time
	// limit goes back to the model, told the limit; 0 means
	// DefaultTimeoutRetries, a negative value none.
	TimeoutRetries int
	// MaxSteps bounds the cells of steps mode; 0 means DefaultMaxSteps.
	MaxSteps int
	// MaxTokens bounds the tokens (input plus output) of all model calls;
	// 0 means no bound.
	MaxTokens int64
	// MaxWall bounds the run's active time (pauses for approval not
	// counted); 0 means no bound.
	MaxWall time.Duration
	// Limits bound each execution.
	Limits sandbox.Limits
	// Packages are the Python packages the sandbox offers, as detected
	// there (app.Config.NewAgent probes the runtime): the system prompt
	// names them. Nil names none.
	Packages []string
	// MaxFileBytes bounds the content kept of each file the code produces;
	// 0 means DefaultMaxFileBytes.
	MaxFileBytes int64

	// Tracer receives the run's spans; nil means none.
	Tracer trace.TracerProvider
	// Observer, if set, is called with each step once it is stored (from
	// the goroutine running the agent).
	Observer func(Event)
}

// Store is what the agent needs of a store of runs: to create a run,
// read it back, own it by lease (claim, renew), record its steps, and
// read its steps and files back for a resumed run. A [store.Tenant] is one.
type Store interface {
	CreateRun(ctx context.Context, nr store.NewRun) (*store.Run, error)
	GetRun(ctx context.Context, id string) (*store.Run, error)
	Claim(ctx context.Context, id string, owner store.Owner) (*store.Run, error)
	Renew(ctx context.Context, id string, owner store.Owner) (time.Time, error)
	Record(ctx context.Context, id string, owner store.Owner, u store.Update) ([]store.Step, error)
	Steps(ctx context.Context, runID string, kinds ...store.StepKind) ([]store.Step, error)
	Files(ctx context.Context, runID, role string) ([]store.File, error)
}

// Event is a stored step, for live progress.
type Event struct {
	RunID string
	Step  store.Step
	// Payload is the step's data, decoded: *ModelCall, *CodeRecord,
	// *Review, *Approval, *ExecutionRecord,
	// *Classification, *Retry, *Answer,
	// *FailureReport, *Start or *Resume.
	Payload any
}

// Approver asks a person about code the policy flagged.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Verdict, error)
}

// NotingApprover is an [Approver] whose person may add a note to the
// decision: the agent calls ApproveNoted instead of Approve and records
// the note with the decision (a rejection's note also goes back to the
// model), as [Decide] does with its note.
type NotingApprover interface {
	Approver
	ApproveNoted(ctx context.Context, req ApprovalRequest) (v Verdict, note string, err error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Verdict, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Verdict, error) {
	return f(ctx, req)
}

// ApprovalRequest is code waiting for a person's decision.
type ApprovalRequest struct {
	RunID    string
	Language language.Language
	Code     string
	Decision policy.Decision
}

// Verdict is a person's decision about flagged code.
type Verdict string

// The verdicts.
const (
	Approve Verdict = "approve"
	Reject  Verdict = "reject"
	// Always approves this code and, for the rest of the run, code flagged
	// by the same rules.
	Always Verdict = "always"
	// Defer leaves the decision for later: the run pauses in
	// awaiting_approval.
	Defer Verdict = "defer"
)

// ParseVerdict reads "approve" ("yes", "y"), "reject" ("no", "n"),
// "always" ("a") or "defer".
func ParseVerdict(s string) (Verdict, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "approve", "approved", "yes", "y":
		return Approve, nil
	case "reject", "rejected", "no", "n":
		return Reject, nil
	case "always", "a":
		return Always, nil
	case "defer", "later":
		return Defer, nil
	}
	return "", fmt.Errorf("agent: unknown verdict %q (want yes, no or always)", s)
}

// Result is where a run stands when Run or Resume returns.
type Result struct {
	RunID  string       `json:"run_id"`
	Status store.Status `json:"status"`
	// Outcome names how the run ended; empty while it is paused.
	Outcome Outcome `json:"outcome,omitempty"`
	// Answer is set when the run answered.
	Answer *Answer `json:"answer,omitempty"`
	// Failure is the honest report of a run without an answer.
	Failure *FailureReport `json:"failure,omitempty"`
	// Pending is the code awaiting approval.
	Pending   *PendingApproval `json:"pending,omitempty"`
	Scorecard store.Scorecard  `json:"scorecard"`
}

// Agent runs tasks: generate → review → execute → classify → retry or
// interpret. It is safe for concurrent use; each run is independent.
type Agent struct {
	cfg Config
}

// New checks cfg and returns an agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: no model")
	}
	if cfg.Backend == nil {
		return nil, errors.New("agent: no backend to run code")
	}
	if cfg.Store == nil {
		return nil, errors.New("agent: no store (runs are records)")
	}
	if cfg.ModelSpec == "" {
		cfg.ModelSpec = "unknown:unknown"
	}
	if cfg.Approval == "" {
		cfg.Approval = ApproveAsk
	}
	if _, err := ParseApprovalMode(string(cfg.Approval)); err != nil {
		return nil, err
	}
	if cfg.Reviewer == nil {
		// Every coderun runtime runs code without a network: code that
		// needs one is refused with that reason, not put to a person.
		cfg.Reviewer = &policy.Reviewer{Offline: true}
	}
	if _, err := cfg.settings(); err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg}, nil
}

// runConfig is the part of Config stored with a run.
type runConfig struct {
	Mode       Mode   `json:"mode"`
	Format     Format `json:"format"`
	MaxRetries int    `json:"max_retries"`
	// TimeoutRetries is resolved; runs stored before it existed read 0,
	// which is what they did: a timeout was never retried.
	TimeoutRetries int            `json:"timeout_retries"`
	MaxSteps       int            `json:"max_steps"`
	MaxTokens      int64          `json:"max_tokens,omitempty"`
	MaxWallMS      int64          `json:"max_wall_ms,omitempty"`
	Limits         sandbox.Limits `json:"limits"`
	MaxFileBytes   int64          `json:"max_file_bytes"`
	Packages       []string       `json:"packages,omitempty"`
}

func (c Config) settings() (runConfig, error) {
	rc := runConfig{Mode: c.Mode, Format: c.Format, MaxRetries: c.MaxRetries, TimeoutRetries: c.TimeoutRetries, MaxSteps: c.MaxSteps,
		MaxTokens: c.MaxTokens, MaxWallMS: c.MaxWall.Milliseconds(), Limits: c.Limits, MaxFileBytes: c.MaxFileBytes, Packages: c.Packages}
	if rc.Mode == "" {
		rc.Mode = ModeSingle
	}
	if _, err := ParseMode(string(rc.Mode)); err != nil {
		return rc, err
	}
	if rc.Format == "" {
		rc.Format = FormatTool
	}
	if rc.Format != FormatTool && rc.Format != FormatFenced {
		return rc, fmt.Errorf("agent: unknown format %q (want tool or fenced)", rc.Format)
	}
	switch {
	case rc.MaxRetries == 0:
		rc.MaxRetries = DefaultMaxRetries
	case rc.MaxRetries < 0:
		rc.MaxRetries = 0
	}
	switch {
	case rc.TimeoutRetries == 0:
		rc.TimeoutRetries = DefaultTimeoutRetries
	case rc.TimeoutRetries < 0:
		rc.TimeoutRetries = 0
	}
	if rc.MaxSteps <= 0 {
		rc.MaxSteps = DefaultMaxSteps
	}
	if rc.MaxFileBytes <= 0 {
		rc.MaxFileBytes = DefaultMaxFileBytes
	}
	rc.Limits = rc.Limits.WithDefaults(sandbox.DefaultLimits)
	if err := rc.Limits.Validate(); err != nil {
		return rc, fmt.Errorf("agent: limits: %w", err)
	}
	return rc, nil
}

// Run starts a run of task and drives it until it answers, fails, is
// cancelled or pauses for approval. Everything that happens is recorded in
// the store as it happens. The error is for what prevents recording (the
// store failing, invalid input); a run that fails has a nil error and a
// Result with the failure report.
func (a *Agent) Run(ctx context.Context, task Task) (*Result, error) {
	if strings.TrimSpace(task.Prompt) == "" {
		return nil, errors.New("agent: empty task")
	}
	rc, err := a.cfg.settings()
	if err != nil {
		return nil, err
	}
	if rc.Mode == ModeSteps && !a.cfg.Backend.Persistent() {
		return nil, errors.New("agent: steps mode needs a backend that keeps the interpreter's state (a session)")
	}
	var inputs []store.InputFile
	var files []store.File
	for _, f := range task.Files {
		p, err := sandbox.CleanPath(f.Path)
		if err != nil {
			return nil, fmt.Errorf("agent: input file: %w", err)
		}
		f.Path = p
		inputs = append(inputs, Describe(f))
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		files = append(files, store.File{Path: p, Kind: "file", Size: int64(len(f.Content)), Mode: mode, Content: f.Content})
	}
	st := newState(rc, task.Prompt, inputs)
	stateJSON, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	cfgJSON, err := json.Marshal(rc)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	owner := store.NewOwner()
	run, err := a.cfg.Store.CreateRun(ctx, store.NewRun{
		Task: task.Prompt, Model: a.cfg.ModelSpec, Mode: string(rc.Mode), Inputs: inputs,
		InputFiles: files, Config: cfgJSON, State: stateJSON, Owner: owner,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	r := a.newRunner(run, rc, st, owner)
	ctx, span := r.tr.invokeAgent(ctx, run.ID, false)
	defer span.End()
	if err := r.commit(ctx, store.Update{}, r.step(StepStart, 0, "started: "+oneLine(task.Prompt, 80),
		&Start{Task: task.Prompt, Model: a.cfg.ModelSpec, Mode: string(rc.Mode), Inputs: inputs})); err != nil {
		return nil, err
	}
	return r.drive(ctx, span)
}

// Resume takes up a run that is not driven by any process: one whose
// owner died (interrupted: its lease expired), or that paused for
// approval. It continues
// from the run's last checkpoint with the run's own settings, this agent's
// model, backend and approver. A run still awaiting a decision asks the
// Approver again (or, under ApproveAll or ApproveNone, decides by the
// mode); without an Approver it stays paused.
func (a *Agent) Resume(ctx context.Context, runID string) (*Result, error) {
	owner := store.NewOwner()
	run, err := a.cfg.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	from := run.Shown()
	if standing, err := RunStanding(run); err == nil {
		switch standing.Shown {
		case Approved:
			from = "approved"
		case Rejected:
			from = "rejected"
		}
	}
	run, err = a.cfg.Store.Claim(ctx, run.ID, owner)
	if err != nil {
		return nil, fmt.Errorf("agent: resume: %w", err)
	}
	var rc runConfig
	if err := json.Unmarshal(run.Config, &rc); err != nil {
		return nil, fmt.Errorf("agent: resume %s: settings: %w", run.ID, err)
	}
	var st state
	if err := json.Unmarshal(run.State, &st); err != nil {
		return nil, fmt.Errorf("agent: resume %s: checkpoint: %w", run.ID, err)
	}
	calls, err := a.cfg.Store.Steps(ctx, run.ID, StepModelCall)
	if err != nil {
		return nil, fmt.Errorf("agent: resume: %w", err)
	}
	if err := st.conversation(calls); err != nil {
		return nil, fmt.Errorf("agent: resume %s: conversation: %w", run.ID, err)
	}
	r := a.newRunner(run, rc, &st, owner)
	r.resumed = true
	ctx, span := r.tr.invokeAgent(ctx, run.ID, true)
	defer span.End()
	note := resumeNote(&st, from)
	if err := r.commit(ctx, store.Update{}, r.step(StepResume, st.Attempt, fmt.Sprintf("resumed (%s) at %s", from, st.Phase),
		&Resume{From: string(from), Phase: string(st.Phase), Note: note})); err != nil {
		return nil, err
	}
	return r.drive(ctx, span)
}

func resumeNote(st *state, from store.Status) string {
	switch st.Phase {
	case phaseGenerate:
		if from == "rejected" {
			return "the model is told of the rejection and may rewrite the code"
		}
		return "the model is asked again"
	case phaseReview:
		return "the pending code is reviewed again"
	case phaseApprove:
		return "the pending code still needs a decision"
	case phaseExecute:
		if from == store.StatusInterrupted {
			return "the pending code runs (again, if it was running when the process died)"
		}
		return "the approved code runs"
	case phaseInterpret:
		return "the answer is written from the recorded output"
	}
	return ""
}

// Decide records a person's decision about a run awaiting approval, from
// any process: Approve or Always lets the code run when the run is resumed
// ([Agent.Resume]); Reject goes back to the model with the note, as the
// result of its code, and the model may rewrite the code when the run is
// resumed — or, with no retries left, the run ends with an honest failure
// report. by names who decided ("review queue", a user name).
func Decide(ctx context.Context, s Store, runID string, v Verdict, by, note string) (*Result, error) {
	if v != Approve && v != Reject && v != Always {
		return nil, fmt.Errorf("agent: decide: verdict %q (want approve, reject or always)", v)
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if run.Status != store.StatusAwaitingApproval {
		return nil, fmt.Errorf("agent: run %s is %s, not awaiting approval", run.ID, run.Shown())
	}
	owner := store.NewOwner()
	run, err = s.Claim(ctx, run.ID, owner)
	if err != nil {
		return nil, fmt.Errorf("agent: decide: %w", err)
	}
	var rc runConfig
	var st state
	if err := json.Unmarshal(run.Config, &rc); err != nil {
		return nil, fmt.Errorf("agent: decide %s: settings: %w", run.ID, err)
	}
	if err := json.Unmarshal(run.State, &st); err != nil {
		return nil, fmt.Errorf("agent: decide %s: checkpoint: %w", run.ID, err)
	}
	calls, err := s.Steps(ctx, run.ID, StepModelCall)
	if err != nil {
		return nil, fmt.Errorf("agent: decide: %w", err)
	}
	if err := st.conversation(calls); err != nil {
		return nil, fmt.Errorf("agent: decide %s: conversation: %w", run.ID, err)
	}
	if st.Phase != phaseApprove || st.Pending == nil {
		return nil, fmt.Errorf("agent: run %s has no code awaiting approval", run.ID)
	}
	r := &runner{cfg: Config{Store: s}, store: s, run: run, rc: rc, st: &st, owner: owner, segment: time.Now()}
	t := r.decided(v, by, note)
	if v == Reject {
		// The rejection goes back to the model, which may rewrite the
		// code when the run is resumed; with no retries left the run ends.
		t = r.sendBack(t, "by "+by, note)
	}
	if t.end == nil {
		// The run waits, owned by no process, for Resume to run the code
		// or to ask the model again.
		t.update.Release = true
	}
	if err := r.apply(ctx, t); err != nil {
		return nil, err
	}
	return r.result(), nil
}

package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// The agent's records: the kinds of step it stores and the payload of
// each, which the store keeps as opaque JSON (store.Step.Data). Decode a
// step with [DecodeStep].

// The kinds of step, each with its payload type.
const (
	StepStart          store.StepKind = "start"          // Start
	StepModelCall      store.StepKind = "model_call"     // ModelCall
	StepCode           store.StepKind = "code"           // CodeRecord
	StepReview         store.StepKind = "review"         // Review
	StepApproval       store.StepKind = "approval"       // Approval
	StepExecution      store.StepKind = "execution"      // ExecutionRecord
	StepClassification store.StepKind = "classification" // Classification
	StepRetry          store.StepKind = "retry"          // Retry
	StepAnswer         store.StepKind = "answer"         // Answer
	StepFailure        store.StepKind = "failure"        // FailureReport
	StepResume         store.StepKind = "resume"         // Resume
)

// DecodeStep decodes a stored step's payload into a new value of its
// kind's type (*Start, *ModelCall, ...); nil for a kind it does not know.
func DecodeStep(s store.Step) (any, error) {
	var v any
	switch s.Kind {
	case StepStart:
		v = new(Start)
	case StepModelCall:
		v = new(ModelCall)
	case StepCode:
		v = new(CodeRecord)
	case StepReview:
		v = new(Review)
	case StepApproval:
		v = new(Approval)
	case StepExecution:
		v = new(ExecutionRecord)
	case StepClassification:
		v = new(Classification)
	case StepRetry:
		v = new(Retry)
	case StepAnswer:
		v = new(Answer)
	case StepFailure:
		v = new(FailureReport)
	case StepResume:
		v = new(Resume)
	default:
		return nil, nil
	}
	return v, s.Decode(v)
}

// RunFailure decodes a stored run's failure report; nil when it has none.
func RunFailure(r *store.Run) (*FailureReport, error) {
	if len(r.Failure) == 0 {
		return nil, nil
	}
	f := new(FailureReport)
	if err := json.Unmarshal(r.Failure, f); err != nil {
		return nil, fmt.Errorf("agent: run %s: failure report: %w", r.ID, err)
	}
	return f, nil
}

// RunPending decodes the code a stored run awaits approval for; nil when
// there is none.
func RunPending(r *store.Run) (*PendingApproval, error) {
	if len(r.Pending) == 0 {
		return nil, nil
	}
	p := new(PendingApproval)
	if err := json.Unmarshal(r.Pending, p); err != nil {
		return nil, fmt.Errorf("agent: run %s: pending approval: %w", r.ID, err)
	}
	return p, nil
}

// PendingApproval is code held for a person's approval.
type PendingApproval struct {
	Language language.Language `json:"language"`
	Code     string            `json:"code"`
	// Explanation is the policy's paragraph; Findings its causes.
	Explanation string           `json:"explanation"`
	Findings    []policy.Finding `json:"findings,omitempty"`
	// Step is the seq of the review step that asked.
	Step int       `json:"step"`
	At   time.Time `json:"at"`
}

// Start is the first step: what the run set out to do.
type Start struct {
	Task   string            `json:"task"`
	Model  string            `json:"model"`
	Mode   string            `json:"mode"`
	Inputs []store.InputFile `json:"inputs,omitempty"`
}

// ModelCall is one call to the model: what was sent, what came back, and
// what it cost.
type ModelCall struct {
	// Purpose is "generate" (write code) or "interpret" (write the answer).
	Purpose string `json:"purpose"`
	// Model is the model spec asked; ResponseModel the model that answered.
	Model         string `json:"model"`
	ResponseModel string `json:"response_model,omitempty"`
	// Messages are the messages the call was the first to send; before
	// them it sent the Prior earlier messages of its conversation, which
	// earlier calls of the same purpose recorded. So a run's conversation
	// is stored once, however many calls send it.
	Messages []llm.Message `json:"messages"`
	Prior    int           `json:"prior,omitempty"`
	// Tools are the names of the tools offered.
	Tools []string `json:"tools,omitempty"`
	// Text and ToolCalls are the reply.
	Text       string         `json:"text,omitempty"`
	ToolCalls  []llm.ToolCall `json:"tool_calls,omitempty"`
	StopReason string         `json:"stop_reason,omitempty"`
	Usage      llm.Usage      `json:"usage"`
	// LatencyMS is the wall time of the call, retries included.
	LatencyMS int64 `json:"latency_ms"`
	// Attempts is the number of HTTP requests the call took.
	Attempts int `json:"attempts,omitempty"`
	// Error says why the call failed, or what was wrong with the reply
	// (a malformed tool call).
	Error string `json:"error,omitempty"`
}

// CodeRecord is the code taken from a model's reply.
type CodeRecord struct {
	Language language.Language `json:"language"`
	Code     string            `json:"code"`
	// Source is "tool_call" (the run_code tool) or "fenced" (a code block).
	Source string `json:"source"`
	// CallID is the tool call's id.
	CallID string `json:"call_id,omitempty"`
	// Intent is what the model said about the code, if anything.
	Intent string `json:"intent,omitempty"`
}

// Review is the policy's pre-flight decision on the code.
type Review struct {
	Decision policy.Decision `json:"decision"`
}

// Approval is a decision about code the policy asked about.
type Approval struct {
	// Decision is "approved", "rejected" or "pending".
	Decision string `json:"decision"`
	// Always is set when the person approved these rules for the rest of
	// the run.
	Always bool `json:"always,omitempty"`
	// By says who decided: "terminal", "flag", "always", "review queue",
	// "non-interactive default", ...
	By string `json:"by"`
	// Rules are the policy rules the decision covers.
	Rules []string `json:"rules,omitempty"`
	Note  string   `json:"note,omitempty"`
}

// ExecutionRecord is what happened when the code ran.
type ExecutionRecord struct {
	Language language.Language `json:"language"`
	// Executor names what ran it ("sandbox:linux", "session").
	Executor        string         `json:"executor"`
	Stdout          string         `json:"stdout"`
	Stderr          string         `json:"stderr"`
	StdoutTruncated bool           `json:"stdout_truncated,omitempty"`
	StderrTruncated bool           `json:"stderr_truncated,omitempty"`
	ExitCode        int            `json:"exit_code"`
	Signal          string         `json:"signal,omitempty"`
	Reason          sandbox.Reason `json:"reason"`
	Error           string         `json:"error,omitempty"`
	Usage           sandbox.Usage  `json:"usage"`
	// DurationMS is the wall time of the execution as the agent saw it.
	DurationMS int64 `json:"duration_ms"`
	// Outputs are the Jupyter-shaped outputs of the cell.
	Outputs []Output `json:"outputs,omitempty"`
	// ExecutionCount is the cell's count in a session (0 for one-shot runs).
	ExecutionCount int `json:"execution_count,omitempty"`
	// Files are the files the code created or changed (content in the
	// run's files).
	Files []FileMeta `json:"files,omitempty"`
	// Removed are the paths of the workspace the code removed (sessions
	// only: a one-shot run does not see removals), so that a resumed run
	// can set its workspace to the files as they were at its checkpoint.
	Removed []string `json:"removed,omitempty"`
}

// Output is one output of a cell, in Jupyter's shapes: "stream" (Name
// "stdout" or "stderr", Text), "execute_result" and "display_data" (Data, a
// MIME bundle), "error" (Ename, Evalue, Traceback).
type Output struct {
	OutputType     string         `json:"output_type"`
	Name           string         `json:"name,omitempty"`
	Text           string         `json:"text,omitempty"`
	Data           map[string]any `json:"data,omitempty"`
	ExecutionCount int            `json:"execution_count,omitempty"`
	Ename          string         `json:"ename,omitempty"`
	Evalue         string         `json:"evalue,omitempty"`
	Traceback      []string       `json:"traceback,omitempty"`
}

// FileMeta describes a file without its content.
type FileMeta struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size int64  `json:"size"`
}

// Classification is what the agent made of an execution (or of a model
// reply it could not use).
type Classification struct {
	// Class is what the outcome means for the loop ("success",
	// "retryable", "fatal", "infrastructure", "cancelled").
	Class Class `json:"class"`
	// Kind names the error: "NameError", "exit_status", "timeout",
	// "memory_limit", "malformed_tool_call", "stuck", ...
	Kind Kind `json:"kind,omitempty"`
	// Message is the error line ("name 'y' is not defined").
	Message string `json:"message,omitempty"`
	// Signature identifies the error across attempts, for stuck detection.
	Signature string `json:"signature,omitempty"`
	// Why explains the class in a sentence.
	Why string `json:"why"`
}

// Retry is the agent going back to the model with feedback.
type Retry struct {
	// Number counts the run's retries from 1; Max is the budget.
	Number int `json:"number"`
	Max    int `json:"max"`
	// Reason is the kind of error retried.
	Reason Kind `json:"reason"`
	// Feedback is what the model was told.
	Feedback string `json:"feedback"`
}

// Answer is the final answer.
type Answer struct {
	Text string `json:"text"`
	// Grounded tells whether every number the answer quotes appears in the
	// evidence (the outputs, the task, the input descriptions);
	// Unsupported lists those that do not.
	Grounded    bool     `json:"grounded"`
	Unsupported []string `json:"unsupported,omitempty"`
	// Quoted are the numbers the answer quotes that were found in the
	// evidence.
	Quoted []string `json:"quoted,omitempty"`
}

// FailureReport is the honest account of a run that produced no answer:
// never an answer, but what was tried and what kept going wrong.
type FailureReport struct {
	// Outcome is the agent's name for the failure ("retries_exhausted",
	// "stuck", "timeout", "denied", "provider_error", ...).
	Outcome Outcome `json:"outcome"`
	// Summary is one paragraph for a person.
	Summary string `json:"summary"`
	// Intent is what the code was trying to do.
	Intent string `json:"intent,omitempty"`
	// Language and LastCode are the code of the last attempt.
	Language language.Language `json:"language,omitempty"`
	LastCode string            `json:"last_code,omitempty"`
	// Error is the error that kept occurring, Occurrences how often.
	Error       string `json:"error,omitempty"`
	Occurrences int    `json:"occurrences,omitempty"`
	// PartialOutput is the tail of the last attempt's output.
	PartialOutput string `json:"partial_output,omitempty"`
	Attempts      int    `json:"attempts"`
}

// Resume records that a process took the run up again.
type Resume struct {
	// From is the status the run was found in ("interrupted",
	// "awaiting_approval", "cancelled"), or "approved" or "rejected" for
	// a run decided about from the review queue and not resumed since.
	From string `json:"from"`
	// Phase is where the agent picks up.
	Phase string `json:"phase"`
	// Note says what is redone.
	Note string `json:"note,omitempty"`
}

// How runs a person decided about, and no process has resumed since, are
// shown ([RunStanding]): Approved, whose code waits to run; Rejected,
// whose rejection waits to go back to the model, to rewrite the code.
const (
	Approved = "approved, waiting to run"
	Rejected = "rejected, waiting for the model to rewrite the code"
	// InterpretFailed is how a run is shown whose code worked but whose
	// interpretation call failed: it is resumed from that step.
	InterpretFailed = "interrupted: the interpretation failed"
)

// Standing is where a run stands for a person, read from its record and
// checkpoint: what to show as its status, and, for a run no process
// drives, what was under way when its process stopped.
type Standing struct {
	// Shown is the run's status as shown ([store.Run.Shown]), except for
	// a run approved and not resumed yet: [Approved].
	Shown string `json:"shown"`
	// Phase is the checkpoint's phase: where the run continues.
	Phase string `json:"phase,omitempty"`
	// CodeRunning says that an interrupted run's process died while the
	// pending code ran (or was being started): what it did to files may
	// be partial, and resume runs it again.
	CodeRunning bool `json:"code_running,omitempty"`
	// Note says, for an interrupted or approved run, what was under way
	// and what resume does.
	Note string `json:"note,omitempty"`
}

// RunStanding reads where a stored run stands. A run approved from the
// review queue ([Decide]) is running but owned by no process until it is
// resumed; an interrupted one is owned by a process whose lease expired.
func RunStanding(r *store.Run) (Standing, error) {
	s := Standing{Shown: string(r.Shown())}
	if len(r.State) == 0 || r.Status.Final() {
		return s, nil
	}
	var st state
	if err := json.Unmarshal(r.State, &st); err != nil {
		return s, fmt.Errorf("agent: run %s: checkpoint: %w", r.ID, err)
	}
	s.Phase = string(st.Phase)
	if r.Shown() != store.StatusInterrupted {
		return s, nil
	}
	switch decidedWaiting(r, &st) {
	case Approved:
		s.Shown = Approved
		s.Note = "approved; the code has not run yet: it runs when the run is resumed"
		return s, nil
	case Rejected:
		s.Shown = Rejected
		s.Note = "rejected; the model is told when the run is resumed, and may rewrite the code"
		return s, nil
	case InterpretFailed:
		s.Shown = InterpretFailed
		s.Note = "the code ran, but the call that writes the answer failed; resume writes the answer from the recorded output"
		return s, nil
	}
	switch st.Phase {
	case phaseExecute:
		s.CodeRunning = true
		s.Note = fmt.Sprintf("the process died while the code of attempt %d ran (or was being started); what it did may be partial, and resume runs it again", st.Attempt+1)
	case phaseGenerate:
		s.Note = "the process died while the model was asked for code; no code was running"
	case phaseInterpret:
		s.Note = "the process died while the answer was being written; no code was running"
	case phaseReview, phaseApprove:
		s.Note = "the process died while the code was reviewed; no code was running"
	}
	return s, nil
}

// decidedWaiting says why a running run is owned by no process, which a
// killed process never leaves: a person decided about it ([Decide]):
// Approved or Rejected; or its interpretation call failed
// (InterpretFailed); "" otherwise.
func decidedWaiting(r *store.Run, st *state) string {
	if r.Status != store.StatusRunning || r.Owner != "" {
		return ""
	}
	switch {
	case st.Phase == phaseExecute && st.Pending != nil && st.Pending.Approved:
		return Approved
	case st.Phase == phaseGenerate:
		return Rejected
	case st.Phase == phaseInterpret:
		return InterpretFailed
	}
	return ""
}

// ErrorHeading is how a report introduces its Error: the error that kept
// occurring (with how often), the last error when none occurred twice, or
// what ended the run (a budget, a limit) when no error of the code did;
// empty without an Error.
func (f FailureReport) ErrorHeading() string {
	switch {
	case f.Error == "":
		return ""
	case f.Occurrences > 1:
		return fmt.Sprintf("The error that kept occurring (%d×)", f.Occurrences)
	case f.Occurrences == 1:
		return "The last error (none occurred twice)"
	}
	return "What ended the run"
}

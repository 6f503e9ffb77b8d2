package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/store"
)

// The loop is a state machine. Its state is checkpointed with every
// stored step, so that any process can pick it up where it stopped. Each
// phase (generate.go, review.go, approve.go, execute.go, interpret.go) is
// a function of the runner that reads the state, does its work (asks the
// model, the policy, a person, the executor) and returns a [transition]:
// the steps to record and where the run goes next — another phase, a
// pause, or an end with its outcome. One driver (drive, apply) commits
// each transition: it ends the run when the transition says so
// (finish.go), records the steps together with the checkpoint, and moves
// on.

// phase is where a run stands: the next thing to do.
type phase string

const (
	phaseGenerate  phase = "generate"  // ask the model for code
	phaseReview    phase = "review"    // pre-flight policy review of the pending code
	phaseApprove   phase = "approve"   // the policy asked: wait for a decision
	phaseExecute   phase = "execute"   // run the pending code
	phaseInterpret phase = "interpret" // write the answer from the output
	phaseDone      phase = "done"
)

// state is the agent's checkpoint.
type state struct {
	Phase  phase             `json:"phase"`
	Task   string            `json:"task"`
	Inputs []store.InputFile `json:"inputs,omitempty"`
	// Messages is the generation conversation so far. It is not part of
	// the checkpoint: each message is stored once, in the step of the
	// model call that first sent it (ModelCall.Messages), and only the
	// messages no call has sent yet (Unsent) are checkpointed; a resumed
	// run puts the conversation together again (conversation).
	Messages []llm.Message `json:"-"`
	// Sent counts the messages of Messages that model-call steps hold;
	// Unsent, written at each checkpoint, the rest.
	Sent   int           `json:"sent"`
	Unsent []llm.Message `json:"unsent,omitempty"`
	// LegacyMessages is the whole conversation as checkpoints held it
	// before it was stored once: read from old runs, never written.
	LegacyMessages []llm.Message `json:"messages,omitempty"`
	// Pending is the code between generation and execution.
	Pending *pendingCode `json:"pending,omitempty"`
	// Skipped are ids of further tool calls of the last turn, answered
	// "not run" after the pending call's result.
	Skipped []string `json:"skipped,omitempty"`
	// Always are policy rules a person approved for the rest of the run.
	Always []string `json:"always,omitempty"`
	// Attempt counts executions started.
	Attempt int `json:"attempt"`
	// Retries counts returns to the model with feedback on the code.
	Retries int `json:"retries"`
	// LastSig is the signature of the last error, "" after a success.
	LastSig string `json:"last_sig,omitempty"`
	// Cells are the successful executions, the evidence of the answer.
	Cells []cell `json:"cells,omitempty"`
	// Last is the last execution, for the failure report.
	Last *cell `json:"last,omitempty"`
	// ErrorCounts counts error lines, for "the error that kept occurring".
	ErrorCounts map[string]int `json:"error_counts,omitempty"`
	LastError   string         `json:"last_error,omitempty"`
	// Unverified is the answer that failed the grounding check, sent back
	// once.
	Unverified string          `json:"unverified,omitempty"`
	Score      store.Scorecard `json:"score"`
	ActiveMS   int64           `json:"active_ms"`
}

type pendingCode struct {
	Language language.Language `json:"language"`
	Code     string            `json:"code"`
	CallID   string            `json:"call_id,omitempty"`
	Source   string            `json:"source"`
	Intent   string            `json:"intent,omitempty"`
	Decision *policy.Decision  `json:"decision,omitempty"`
	Approved bool              `json:"approved,omitempty"`
}

type cell struct {
	Attempt  int               `json:"attempt"`
	Language language.Language `json:"language"`
	Code     string            `json:"code"`
	Intent   string            `json:"intent,omitempty"`
	Stdout   string            `json:"stdout,omitempty"`
	Stderr   string            `json:"stderr,omitempty"`
	Result   string            `json:"result,omitempty"` // execute_result text
	Files    []FileMeta        `json:"files,omitempty"`
	Error    string            `json:"error,omitempty"`
}

func newState(rc runConfig, task string, inputs []store.InputFile) *state {
	return &state{
		Phase:  phaseGenerate,
		Task:   task,
		Inputs: inputs,
		Messages: []llm.Message{
			llm.System(systemPrompt(rc)),
			llm.User(taskPrompt(task, inputs)),
		},
	}
}

// conversation puts a resumed run's generation conversation together
// again: from the messages its generation calls recorded (each call holds
// those it sent first, after the Prior earlier ones), then the messages
// no call has sent yet. A checkpoint written before the conversation was
// stored once holds the whole conversation itself.
func (st *state) conversation(calls []store.Step) error {
	var conv []llm.Message
	for _, s := range calls {
		var mc ModelCall
		if err := s.Decode(&mc); err != nil {
			return err
		}
		if mc.Purpose != "generate" {
			continue
		}
		if mc.Prior > len(conv) {
			return fmt.Errorf("model call %d follows %d messages, but %d were recorded before it", s.Seq, mc.Prior, len(conv))
		}
		conv = append(conv[:mc.Prior], mc.Messages...)
	}
	if st.LegacyMessages != nil {
		// Calls recorded the conversation whole, then: the last one's
		// messages were sent, the rest of the checkpoint's were not.
		if len(conv) > len(st.LegacyMessages) {
			return fmt.Errorf("the model calls recorded %d messages, the checkpoint holds %d", len(conv), len(st.LegacyMessages))
		}
		st.Messages, st.Sent, st.LegacyMessages = st.LegacyMessages, len(conv), nil
		return nil
	}
	if len(conv) != st.Sent {
		return fmt.Errorf("the model calls recorded %d messages, the checkpoint counts %d", len(conv), st.Sent)
	}
	st.Messages = append(conv, st.Unsent...)
	st.Unsent = nil
	return nil
}

type runner struct {
	cfg     Config
	store   Store
	run     *store.Run
	rc      runConfig
	st      *state
	owner   store.Owner
	tr      tracer
	exec    Executor
	resumed bool
	segment time.Time // start of the active stretch not yet added to ActiveMS
	final   finalResult
}

func (a *Agent) newRunner(run *store.Run, rc runConfig, st *state, owner store.Owner) *runner {
	return &runner{cfg: a.cfg, store: a.cfg.Store, run: run, rc: rc, st: st, owner: owner,
		tr: newTracer(a.cfg.Tracer, run.Model), segment: time.Now()}
}

// pendingStep is a step about to be recorded, with its payload.
type pendingStep struct {
	s       store.Step
	payload any
	err     error
}

func (r *runner) step(kind store.StepKind, attempt int, summary string, payload any) pendingStep {
	s, err := store.NewStep(kind, attempt, summary, payload)
	return pendingStep{s: s, payload: payload, err: err}
}

// commit stores steps together with the checkpoint and the scorecard, and
// tells the observer. It runs even when ctx is done: a cancelled run still
// records how it ended.
func (r *runner) commit(ctx context.Context, u store.Update, steps ...pendingStep) error {
	now := time.Now()
	r.st.ActiveMS += now.Sub(r.segment).Milliseconds()
	r.segment = now
	r.st.Score.WallMS = r.st.ActiveMS
	for _, s := range steps {
		if s.err != nil {
			return fmt.Errorf("agent: %w", s.err)
		}
		u.Steps = append(u.Steps, s.s)
	}
	if r.st.Sent > len(r.st.Messages) {
		return fmt.Errorf("agent: checkpoint: %d messages sent of a conversation of %d", r.st.Sent, len(r.st.Messages))
	}
	r.st.Unsent = r.st.Messages[r.st.Sent:]
	state, err := json.Marshal(r.st)
	if err != nil {
		return fmt.Errorf("agent: checkpoint: %w", err)
	}
	u.State = state
	r.st.Unsent = nil
	score := r.st.Score
	u.Scorecard = &score
	stored, err := r.store.Record(context.WithoutCancel(ctx), r.run.ID, r.owner, u)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if n := len(stored); n > 0 {
		r.run.Steps = stored[n-1].Seq
	}
	if u.Status != "" {
		r.run.Status = u.Status
	}
	if u.Release {
		r.run.Owner = ""
	}
	if r.cfg.Observer != nil {
		for i, s := range stored {
			r.cfg.Observer(Event{RunID: r.run.ID, Step: s, Payload: steps[i].payload})
		}
	}
	return nil
}

// transition is what a phase decided: the steps to record, what else
// changes in the store with them, and where the run goes next.
type transition struct {
	steps  []pendingStep
	update store.Update
	// next is the phase that follows (ignored when end or pause is set).
	next phase
	// pause leaves the run owned by no process — awaiting a person's
	// decision, or (interpretFailed) to be resumed: the driver returns.
	pause bool
	// end, when set, ends the run (finish.go).
	end *end
}

// to is a transition to the phase next, recording steps.
func to(next phase, steps ...pendingStep) transition {
	return transition{next: next, steps: steps}
}

// with adds steps before the transition's own and files to its update.
func (t transition) with(files []store.File, steps ...pendingStep) transition {
	t.steps = append(steps, t.steps...)
	t.update.Files = append(files, t.update.Files...)
	return t
}

// phaseFunc returns the function of a phase.
func (r *runner) phaseFunc(p phase) (func(context.Context) (transition, error), bool) {
	switch p {
	case phaseGenerate:
		return r.generate, true
	case phaseReview:
		return r.review, true
	case phaseApprove:
		return r.approve, true
	case phaseExecute:
		return r.execute, true
	case phaseInterpret:
		return r.interpret, true
	}
	return nil, false
}

// drive runs the state machine until the run ends or pauses: it runs the
// current phase and commits the transition it returns, again and again. A
// cancelled context ends the run as cancelled at the next phase.
func (r *runner) drive(ctx context.Context, span trace.Span) (*Result, error) {
	// The lease stays this process's while it drives the run, however long
	// a model call, an execution or a person takes.
	defer store.KeepAlive(ctx, r.store, r.run.ID, r.owner, r.run.LeaseUntil)()
	defer func() {
		if r.exec != nil {
			r.exec.Close()
		}
	}()
	for r.st.Phase != phaseDone {
		var t transition
		if suspended(ctx) {
			return r.suspend(ctx, span)
		}
		if ctx.Err() != nil {
			t = r.cancel()
		} else {
			f, ok := r.phaseFunc(r.st.Phase)
			if !ok {
				err := fmt.Errorf("agent: run %s: unknown phase %q", r.run.ID, r.st.Phase)
				span.SetStatus(codes.Error, err.Error())
				return nil, err
			}
			var err error
			if t, err = f(ctx); err != nil {
				span.SetStatus(codes.Error, err.Error())
				return nil, err
			}
			if t.end != nil && t.end.how == endCancelled && suspended(ctx) {
				// Stopped by the suspension, not by what the phase
				// found: the run is left at its checkpoint.
				return r.suspend(ctx, span)
			}
		}
		if err := r.apply(ctx, t); err != nil {
			span.SetStatus(codes.Error, err.Error())
			return nil, err
		}
		if t.pause {
			// Awaiting approval, or (interpretFailed) left to be resumed:
			// running and owned by no process, so interrupted.
			res := r.result()
			res.Status = r.run.Shown()
			span.SetAttributes(attribute.String("coderun.status", string(res.Status)))
			return res, nil
		}
	}
	res := r.result()
	span.SetAttributes(attribute.String("coderun.status", string(res.Status)),
		attribute.String("coderun.outcome", string(res.Outcome)),
		attribute.Int("coderun.attempts", res.Scorecard.Attempts),
		attribute.Int("coderun.retries", res.Scorecard.Retries))
	if res.Status == store.StatusFailed {
		span.SetAttributes(attribute.String("error.type", string(res.Outcome)))
		span.SetStatus(codes.Error, string(res.Outcome))
	}
	return res, nil
}

// ErrSuspended is the cause to cancel a run's context with
// (context.WithCancelCause) to stop driving the run without ending it, as
// a server shutting down does. The run is left at its last checkpoint,
// owned by no process (shown interrupted), and [Agent.Resume] takes it up
// from there; what was in progress when it stopped (a model call, code
// running) is done again, as after a crash. Run and Resume then return
// a Result with status interrupted and a nil error.
var ErrSuspended = errors.New("agent: the run was suspended to be resumed later")

// suspended reports whether ctx was cancelled with ErrSuspended.
func suspended(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrSuspended)
}

// suspend gives up the run without recording anything of the phase in
// progress: the stored checkpoint is where a resumed run starts.
func (r *runner) suspend(ctx context.Context, span trace.Span) (*Result, error) {
	if _, err := r.store.Record(context.WithoutCancel(ctx), r.run.ID, r.owner, store.Update{Release: true}); err != nil {
		span.SetStatus(codes.Error, err.Error())
		return nil, fmt.Errorf("agent: suspend: %w", err)
	}
	r.run.Owner = ""
	res := r.result()
	res.Status = r.run.Shown()
	span.SetAttributes(attribute.String("coderun.status", string(res.Status)))
	return res, nil
}

// apply commits a transition: it ends the run if the transition says so,
// or moves it to the next phase, and records the steps with the
// checkpoint.
func (r *runner) apply(ctx context.Context, t transition) error {
	switch {
	case t.end != nil:
		how := t.end.how
		var err error
		if t, err = r.finish(t); err != nil {
			return err
		}
		if how == endRejected {
			// A person decided, and the approval item records it: the
			// run's end opens no second item.
			t.update.Review = nil
		}
	case t.pause:
		t.update.Release = true
	case t.next != "":
		r.st.Phase = t.next
	}
	return r.commit(ctx, t.update, t.steps...)
}

func (r *runner) result() *Result {
	res := &Result{RunID: r.run.ID, Status: r.run.Status, Outcome: Outcome(r.st.Score.Outcome), Scorecard: r.st.Score}
	if r.run.Status == store.StatusAwaitingApproval && r.st.Pending != nil && r.st.Pending.Decision != nil {
		res.Pending = r.pendingApproval()
	}
	if r.final.answer != nil {
		res.Answer = r.final.answer
	}
	res.Failure = r.final.failure
	return res
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/sandbox"
)

// The execute phase: the pending code runs in the run's executor (opened
// on first use, rebuilt by replay for a resumed session), within the
// run's limits and what is left of its time budget. Its outcome is
// classified (classify.go): a success is kept as evidence and leads to
// the next cell (steps mode) or to interpretation; a retryable error goes
// back to the model; a fatal or infrastructure outcome ends the run by
// the [endings] table.

func (r *runner) execute(ctx context.Context) (transition, error) {
	if t, spent := r.timeSpent(); spent {
		return t, nil
	}
	if r.rc.Mode == ModeSteps && r.st.Attempt >= r.rc.MaxSteps {
		return r.endBy(endStepBudget, endFacts{budget: fmt.Sprint(r.rc.MaxSteps)}), nil
	}
	if r.exec == nil {
		replayed, err := r.openExecutor(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return r.cancel(), nil
			}
			return r.endBy(endExecutorSetup, endFacts{detail: err.Error()}), nil
		}
		if replayed != nil {
			// The rebuilt session is recorded before the code runs.
			return to(phaseExecute, *replayed), nil
		}
	}
	p := r.st.Pending
	r.st.Attempt++
	attempt := r.st.Attempt
	bctx, cancel := r.budgetCtx(ctx)
	defer cancel()
	ectx, span := r.tr.executeTool(bctx, p.CallID, p.Language, attempt)
	ex, err := r.exec.Execute(ectx, Code{Language: p.Language, Code: p.Code})
	if err != nil {
		endExecute(span, nil, verdict{}, err)
		if ctx.Err() != nil {
			return r.cancel(), nil
		}
		if errors.Is(err, sandbox.ErrInvalid) {
			v := verdict{Class: ClassRetryable, Kind: KindInvalidRequest, Message: err.Error(), Why: "the sandbox refused the code as given"}
			return r.retryOrFail(v, r.feedback(p, observationOf(v))), nil
		}
		return r.endBy(endExecutorError, endFacts{detail: err.Error()}), nil
	}
	// The code was cancelled when its context was done: the caller
	// cancelled the run, or the run's time budget ran out.
	v := classify(&ex.Record, bctx.Err() != nil)
	if v.Class == ClassCancelled && ctx.Err() == nil && bctx.Err() != nil {
		v = verdict{Class: ClassFatal, Kind: KindTimeBudget, Why: "the run's time budget ran out while the code ran"}
	}
	endExecute(span, ex, v, nil)
	r.st.Score.Attempts++
	r.st.Score.ExecMS += ex.Record.DurationMS

	c := &cell{Attempt: attempt, Language: p.Language, Code: p.Code, Intent: p.Intent, Stdout: ex.Record.Stdout,
		Stderr: ex.Record.Stderr, Files: ex.Record.Files}
	for _, o := range ex.Record.Outputs {
		if o.OutputType == "execute_result" {
			if t, ok := o.Data["text/plain"].(string); ok {
				c.Result += t + "\n"
			}
		}
	}
	if v.Class != ClassSuccess {
		c.Error = v.errorLine()
	}
	r.st.Last = c
	exStep := r.step(StepExecution, attempt, executionSummary(&ex.Record), &ex.Record)

	// Single mode wants something to interpret: a program that printed
	// nothing and wrote nothing gets one more try.
	if v.Class == ClassSuccess && r.rc.Mode == ModeSingle && strings.TrimSpace(c.Stdout) == "" && c.Result == "" && len(c.Files) == 0 {
		v = verdict{Class: ClassRetryable, Kind: KindNoOutput, Message: "the program printed nothing",
			Why: "the program ran but printed no result, so there is nothing to rest an answer on"}
		c.Error = v.errorLine()
	}

	switch v.Class {
	case ClassSuccess:
		r.st.LastSig = ""
		r.st.Cells = append(r.st.Cells, *c)
		r.st.Messages = append(r.st.Messages, r.feedback(p, observation(&ex.Record, v, ex.Record.Files))...)
		r.st.Pending = nil
		next := phaseInterpret
		if r.rc.Mode == ModeSteps {
			next = phaseGenerate
		}
		cl := v.record()
		return to(next, r.step(StepClassification, attempt, "success", &cl)).with(ex.Files, exStep), nil
	case ClassRetryable:
		return r.retryOrFail(v, r.feedback(p, observation(&ex.Record, v, ex.Record.Files))).with(ex.Files, exStep), nil
	case ClassCancelled:
		return r.cancel().with(ex.Files, exStep), nil
	}
	// Fatal or infrastructure.
	return r.endBy(executionEnding(v), endFacts{v: v}).with(ex.Files, exStep), nil
}

func observationOf(v verdict) string {
	return "The code was not run: " + v.errorLine()
}

// feedback is the message(s) that tell the model what its code did: the
// tool result for a tool call (and "not run" for the other calls of the
// turn), or a user message for a fenced block (the code is in the model's
// own message just before: it is not echoed back).
func (r *runner) feedback(p *pendingCode, obs string) []llm.Message {
	if p.Source == "tool_call" {
		failed := !strings.HasPrefix(obs, "The code ran successfully")
		msgs := []llm.Message{llm.ToolResult(p.CallID, obs, failed)}
		for _, id := range r.st.Skipped {
			msgs = append(msgs, llm.ToolResult(id, "Not run: run one program per turn.", true))
		}
		r.st.Skipped = nil
		return msgs
	}
	return []llm.Message{llm.User(obs)}
}

func executionSummary(ex *ExecutionRecord) string {
	s := string(ex.Reason)
	if ex.Reason == sandbox.ReasonExited {
		s = fmt.Sprintf("exit %d", ex.ExitCode)
		if ex.Signal != "" {
			s = "killed by " + ex.Signal
		}
	}
	s += fmt.Sprintf(" in %s", (time.Duration(ex.DurationMS) * time.Millisecond).String())
	if n := len(ex.Files); n > 0 {
		s += fmt.Sprintf(", %d files", n)
	}
	return s
}

// executionStep is the sequence number of the step that recorded the
// execution of attempt.
func (r *runner) executionStep(ctx context.Context, attempt int) (int, error) {
	steps, err := r.store.Steps(ctx, r.run.ID, StepExecution)
	if err != nil {
		return 0, err
	}
	for _, s := range steps {
		if s.Attempt == attempt {
			return s.Seq, nil
		}
	}
	return 0, fmt.Errorf("agent: run %s: no execution recorded for attempt %d", r.run.ID, attempt)
}

// openExecutor opens the executor with the run's workspace: the inputs
// and the files earlier executions produced. A persistent executor opened
// for a resumed run starts from the files as they were before its first
// successful cell and replays the successful cells to rebuild the
// interpreter's state; then its workspace is set to the files of the
// checkpoint, which undoes what the replay did to files and brings back
// what failed cells (not replayed) did. The step that records the replay
// is returned.
func (r *runner) openExecutor(ctx context.Context) (*pendingStep, error) {
	stored, err := r.store.Files(ctx, r.run.ID, "")
	if err != nil {
		return nil, err
	}
	removed, err := r.removals(ctx)
	if err != nil {
		return nil, err
	}
	// A resumed session is rebuilt by running its successful cells again,
	// so they must find the files as they were before the first of them
	// ran, not as the cells left them: a cell that reads a file another
	// cell appends to would read more.
	replay := r.cfg.Backend.Persistent() && len(r.st.Cells) > 0
	before := 0
	if replay {
		if before, err = r.executionStep(ctx, r.st.Cells[0].Attempt); err != nil {
			return nil, err
		}
	}
	ws := Workspace{Files: workspaceFiles(workspaceAt(stored, removed, before)), Limits: r.rc.Limits, MaxFileBytes: r.rc.MaxFileBytes}
	ex, err := r.cfg.Backend.Open(ctx, ws)
	if err != nil {
		return nil, err
	}
	r.exec = ex
	if !replay || !ex.Persistent() {
		return nil, nil
	}
	failed := 0
	for _, c := range r.st.Cells {
		res, err := ex.Execute(ctx, Code{Language: c.Language, Code: c.Code})
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		if v := classify(&res.Record, ctx.Err() != nil); v.Class != ClassSuccess {
			failed++
		}
	}
	note := fmt.Sprintf("the session was rebuilt by running the %d successful cells again", len(r.st.Cells))
	if failed > 0 {
		note += fmt.Sprintf("; %d of them failed this time", failed)
	}
	if rs, ok := ex.(workspaceRestorer); ok {
		kept, err := rs.restoreWorkspace(ctx, workspaceAt(stored, removed, 0))
		if err != nil {
			return nil, err
		}
		note += "; the workspace was set to the files of the checkpoint"
		if kept > 0 {
			note += fmt.Sprintf(", but for %d entries the records do not hold whole (files kept only in part, special files), left as the replay made them", kept)
		}
	}
	s := r.step(StepResume, r.st.Attempt, "session rebuilt", &Resume{From: "replay", Phase: string(r.st.Phase), Note: note})
	return &s, nil
}

package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/coderun/coderun/store"
)

// RecordReader reads a run's record: what [Notebook] needs of a store (a
// store.Tenant is one).
type RecordReader interface {
	GetRun(ctx context.Context, id string) (*store.Run, error)
	Steps(ctx context.Context, runID string, kinds ...store.StepKind) ([]store.Step, error)
	Files(ctx context.Context, runID, role string) ([]store.File, error)
}

// Notebook renders a run as a Jupyter notebook (nbformat 4.5): the task as
// markdown, each piece of code that ran as a code cell with its outputs
// (images the code wrote shown as display_data), notes on failed attempts,
// approvals and retries, and the answer or failure report at the end.
//
// The notebook is rendered here, in one place, from the run's record in
// a store: s is a store.Tenant, or any reader of runs, steps and files.
func Notebook(ctx context.Context, s RecordReader, runID string) ([]byte, error) {
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	steps, err := s.Steps(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	files, err := s.Files(ctx, run.ID, store.RoleOutput)
	if err != nil {
		return nil, err
	}
	nb, err := notebook(run, steps, files)
	if err != nil {
		return nil, fmt.Errorf("agent: notebook of %s: %w", run.ID, err)
	}
	return nb, nil
}

type nbCell struct {
	ID             string         `json:"id"`
	CellType       string         `json:"cell_type"`
	Metadata       map[string]any `json:"metadata"`
	Source         string         `json:"source"`
	ExecutionCount *int           `json:"execution_count,omitempty"`
	Outputs        []any          `json:"outputs,omitempty"`
}

func notebook(run *store.Run, steps []store.Step, files []store.File) ([]byte, error) {
	var cells []nbCell
	md := func(text string) {
		cells = append(cells, nbCell{ID: fmt.Sprintf("cell-%d", len(cells)+1), CellType: "markdown",
			Metadata: map[string]any{}, Source: text})
	}
	var head strings.Builder
	fmt.Fprintf(&head, "# Task\n\n%s\n\n", run.Task)
	fmt.Fprintf(&head, "- run: `%s`\n- model: `%s`\n- mode: `%s`\n- status: `%s`", run.ID, run.Model, run.Mode, run.Shown())
	if run.Outcome != "" {
		fmt.Fprintf(&head, " (`%s`)", run.Outcome)
	}
	for _, in := range run.Inputs {
		fmt.Fprintf(&head, "\n- input `%s`: %s", in.Path, in.Summary)
	}
	md(head.String())

	var code *CodeRecord
	count := 0
	for _, st := range steps {
		switch st.Kind {
		case StepCode:
			code = new(CodeRecord)
			if err := st.Decode(code); err != nil {
				return nil, err
			}
		case StepReview:
			var r Review
			if err := st.Decode(&r); err != nil {
				return nil, err
			}
			if r.Decision.Action != "allow" {
				md(fmt.Sprintf("> **Policy: %s.** %s", r.Decision.Action, r.Decision.Explanation))
			}
		case StepApproval:
			var a Approval
			if err := st.Decode(&a); err != nil {
				return nil, err
			}
			if a.Decision != "pending" {
				md(fmt.Sprintf("> **Approval: %s** by %s.", a.Decision, a.By))
			}
		case StepExecution:
			var ex ExecutionRecord
			if err := st.Decode(&ex); err != nil {
				return nil, err
			}
			count++
			n := count
			if ex.ExecutionCount > 0 {
				n = ex.ExecutionCount
			}
			src := ""
			if code != nil {
				src = cellSource(code.Language, code.Code)
			}
			cell := nbCell{ID: fmt.Sprintf("cell-%d", len(cells)+1), CellType: "code",
				Metadata: map[string]any{"coderun": map[string]any{"step": st.Seq, "attempt": st.Attempt,
					"reason": ex.Reason, "exit_code": ex.ExitCode}},
				Source: src, ExecutionCount: &n, Outputs: []any{}}
			outs := ex.Outputs
			if len(outs) == 0 {
				outs = streamOutputs(ex)
			}
			for _, o := range outs {
				cell.Outputs = append(cell.Outputs, nbOutput(o, n))
			}
			for _, f := range files {
				if f.Step == st.Seq {
					if o, ok := imageOutput(f); ok {
						cell.Outputs = append(cell.Outputs, o)
					}
				}
			}
			cells = append(cells, cell)
			code = nil
		case StepClassification:
			var c Classification
			if err := st.Decode(&c); err != nil {
				return nil, err
			}
			if c.Class != "success" {
				md(fmt.Sprintf("> **%s** (%s): %s", c.Class, c.Kind, c.Why))
			}
		case StepAnswer:
			var a Answer
			if err := st.Decode(&a); err != nil {
				return nil, err
			}
			text := "## Answer\n\n" + a.Text
			if !a.Grounded && len(a.Unsupported) > 0 {
				text += "\n\n> Not verified: the answer quotes " + strings.Join(a.Unsupported, ", ") +
					", which the output does not show."
			}
			md(text)
		case StepFailure:
			var f FailureReport
			if err := st.Decode(&f); err != nil {
				return nil, err
			}
			md(failureMarkdown(f))
		}
	}
	nb := map[string]any{
		"nbformat":       4,
		"nbformat_minor": 5,
		"metadata": map[string]any{
			"kernelspec":    map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"},
			"language_info": map[string]any{"name": "python"},
			"coderun": map[string]any{"run_id": run.ID, "model": run.Model, "mode": run.Mode,
				"status": run.Shown(), "outcome": run.Outcome},
		},
		"cells": cells,
	}
	return json.MarshalIndent(nb, "", " ")
}

// cellSource writes code of another language as a cell magic, so the
// notebook runs it the same way.
func cellSource(lang, code string) string {
	switch lang {
	case "bash":
		return "%%bash\n" + code
	case "node":
		return "%%script node\n" + code
	}
	return code
}

func streamOutputs(ex ExecutionRecord) []Output {
	var outs []Output
	if ex.Stdout != "" {
		outs = append(outs, Output{OutputType: "stream", Name: "stdout", Text: ex.Stdout})
	}
	if ex.Stderr != "" {
		outs = append(outs, Output{OutputType: "stream", Name: "stderr", Text: ex.Stderr})
	}
	if ex.Reason != "" && ex.Reason != "exited" {
		outs = append(outs, Output{OutputType: "stream", Name: "stderr", Text: fmt.Sprintf("[coderun: %s]\n", ex.Reason)})
	}
	return outs
}

func nbOutput(o Output, count int) map[string]any {
	switch o.OutputType {
	case "stream":
		return map[string]any{"output_type": "stream", "name": o.Name, "text": o.Text}
	case "error":
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		return map[string]any{"output_type": "error", "ename": o.Ename, "evalue": o.Evalue, "traceback": tb}
	case "execute_result":
		n := o.ExecutionCount
		if n == 0 {
			n = count
		}
		return map[string]any{"output_type": "execute_result", "data": o.Data, "metadata": map[string]any{}, "execution_count": n}
	default:
		return map[string]any{"output_type": "display_data", "data": o.Data, "metadata": map[string]any{}}
	}
}

func imageOutput(f store.File) (map[string]any, bool) {
	if f.Kind != "file" || f.Truncated || len(f.Content) == 0 {
		return nil, false
	}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".png":
		return map[string]any{"output_type": "display_data", "metadata": map[string]any{"filename": f.Path},
			"data": map[string]any{"image/png": base64.StdEncoding.EncodeToString(f.Content), "text/plain": "<" + f.Path + ">"}}, true
	case ".svg":
		return map[string]any{"output_type": "display_data", "metadata": map[string]any{"filename": f.Path},
			"data": map[string]any{"image/svg+xml": string(f.Content), "text/plain": "<" + f.Path + ">"}}, true
	}
	return nil, false
}

// failureMarkdown renders a failure report for a person.
func failureMarkdown(f FailureReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## No answer: %s\n\n%s\n", f.Outcome, f.Summary)
	if f.Intent != "" {
		fmt.Fprintf(&b, "\n**What the code was trying to do:** %s\n", f.Intent)
	}
	if f.Error != "" {
		fmt.Fprintf(&b, "\n**The error that kept occurring** (%d×):\n\n```\n%s\n```\n", f.Occurrences, f.Error)
	}
	if f.PartialOutput != "" {
		fmt.Fprintf(&b, "\n**Partial output of the last attempt:**\n\n```\n%s\n```\n", strings.TrimRight(f.PartialOutput, "\n"))
	}
	return b.String()
}

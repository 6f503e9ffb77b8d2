package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/language"
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
// a store (s is a store.Tenant, or any reader of runs, steps and files),
// and written by package jupyter, as sessions write theirs.
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

func notebook(run *store.Run, steps []store.Step, files []store.File) ([]byte, error) {
	var cells []jupyter.Cell
	md := func(text string) {
		cells = append(cells, jupyter.Cell{ID: fmt.Sprintf("cell-%d", len(cells)+1), Type: "markdown",
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
			if r.Decision.Action == "deny" && code != nil {
				md(notRun("denied by the policy", code))
				code = nil
			}
		case StepApproval:
			var a Approval
			if err := st.Decode(&a); err != nil {
				return nil, err
			}
			if a.Decision != "pending" {
				note := ""
				if a.Note != "" {
					note = " " + a.Note
				}
				md(fmt.Sprintf("> **Approval: %s** by %s.%s", a.Decision, a.By, note))
			}
			if a.Decision == "rejected" && code != nil {
				// Rejected code is shown, marked, as text: a notebook
				// run from the top must not run it.
				md(notRun("rejected", code))
				code = nil
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
			cell := jupyter.Cell{ID: fmt.Sprintf("cell-%d", len(cells)+1), Type: "code",
				Metadata: map[string]any{"coderun": map[string]any{"step": st.Seq, "attempt": st.Attempt,
					"reason": ex.Reason, "exit_code": ex.ExitCode}},
				Source: src, ExecutionCount: n}
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
	nb := &jupyter.Notebook{NBFormat: 4, NBFormatMinor: 5, Cells: cells,
		Metadata: map[string]any{
			"kernelspec":    map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"},
			"language_info": map[string]any{"name": "python"},
			"coderun": map[string]any{"run_id": run.ID, "model": run.Model, "mode": run.Mode,
				"status": run.Shown(), "outcome": run.Outcome},
		}}
	return json.MarshalIndent(nb, "", " ")
}

// notRun shows code that did not run (rejected, denied) as markdown,
// marked as such.
func notRun(why string, code *CodeRecord) string {
	fence := "```"
	for strings.Contains(code.Code, fence) {
		fence += "`"
	}
	return fmt.Sprintf("**Code %s — it did not run:**\n\n%s%s\n%s\n%s", why, fence, code.Language,
		strings.TrimRight(code.Code, "\n"), fence)
}

// cellSource writes code of another language as a cell magic, so the
// notebook runs it the same way.
func cellSource(lang language.Language, code string) string {
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

// nbOutput is a recorded output as a notebook's: an execute_result
// without a count takes its cell's (count), and any type but stream, error
// and execute_result shows as display_data.
func nbOutput(o Output, count int) jupyter.Output {
	switch o.OutputType {
	case jupyter.TypeStream:
		return jupyter.Output{Type: jupyter.TypeStream, Name: o.Name, Text: o.Text}
	case jupyter.TypeError:
		return jupyter.Output{Type: jupyter.TypeError, Ename: o.Ename, Evalue: o.Evalue, Traceback: o.Traceback}
	case jupyter.TypeExecuteResult:
		n := o.ExecutionCount
		if n == 0 {
			n = count
		}
		return jupyter.Output{Type: jupyter.TypeExecuteResult, Data: o.Data, ExecutionCount: n}
	default:
		return jupyter.Output{Type: jupyter.TypeDisplayData, Data: o.Data}
	}
}

// imageOutput shows a PNG or SVG file the code wrote as display_data.
func imageOutput(f store.File) (jupyter.Output, bool) {
	if f.Kind != "file" || f.Truncated || len(f.Content) == 0 {
		return jupyter.Output{}, false
	}
	o := jupyter.Output{Type: jupyter.TypeDisplayData, Metadata: map[string]any{"filename": f.Path}}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".png":
		o.Data = jupyter.MIMEBundle{"image/png": base64.StdEncoding.EncodeToString(f.Content), "text/plain": "<" + f.Path + ">"}
	case ".svg":
		o.Data = jupyter.MIMEBundle{"image/svg+xml": string(f.Content), "text/plain": "<" + f.Path + ">"}
	default:
		return jupyter.Output{}, false
	}
	return o, true
}

// failureMarkdown renders a failure report for a person.
func failureMarkdown(f FailureReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## No answer: %s\n\n%s\n", f.Outcome, f.Summary)
	if f.Intent != "" {
		fmt.Fprintf(&b, "\n**What the code was trying to do:** %s\n", f.Intent)
	}
	if h := f.ErrorHeading(); h != "" {
		fmt.Fprintf(&b, "\n**%s:**\n\n```\n%s\n```\n", h, f.Error)
	}
	if f.PartialOutput != "" {
		fmt.Fprintf(&b, "\n**Partial output of the last attempt:**\n\n```\n%s\n```\n", strings.TrimRight(f.PartialOutput, "\n"))
	}
	return b.String()
}

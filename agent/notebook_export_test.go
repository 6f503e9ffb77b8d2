package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/store"
)

// fixedRecord is a run's record held in memory, with fixed ids.
type fixedRecord struct {
	run   store.Run
	steps []store.Step
	files []store.File
}

func (r *fixedRecord) GetRun(context.Context, string) (*store.Run, error) { return &r.run, nil }
func (r *fixedRecord) Steps(context.Context, string, ...store.StepKind) ([]store.Step, error) {
	return r.steps, nil
}
func (r *fixedRecord) Files(context.Context, string, string) ([]store.File, error) {
	return r.files, nil
}

// A run's notebook is the same bytes for the same record: every kind of
// step, output and file the rendering knows, against a golden file
// (UPDATE_NOTEBOOK_GOLDEN=1 rewrites it).
func TestNotebookExportIsStable(t *testing.T) {
	step := func(seq int, kind store.StepKind, data any) store.Step {
		s := nbStep(t, kind, data)
		s.Seq = seq
		return s
	}
	png, svg := []byte("\x89PNG\r\n\x1a\n...."), []byte("<svg xmlns=\"http://www.w3.org/2000/svg\"/>")
	rec := &fixedRecord{
		run: store.Run{ID: "run-1", Task: "plot the mean of data.csv", Model: "openai:m", Mode: "steps",
			Status: store.StatusFailed, Outcome: "retries_exhausted",
			Inputs: []store.InputFile{{Path: "data.csv", Summary: "CSV, 3 rows"}}},
		steps: []store.Step{
			step(1, agent.StepCode, agent.CodeRecord{Language: "python", Code: "import os; os.system('rm -rf /')\n"}),
			step(2, agent.StepReview, agent.Review{Decision: policy.Decision{Action: "ask", Explanation: "deletes files"}}),
			step(3, agent.StepApproval, agent.Approval{Decision: "approved", By: "ann"}),
			step(4, agent.StepExecution, agent.ExecutionRecord{Language: "python", ExecutionCount: 1, Reason: "exited",
				Outputs: []agent.Output{{OutputType: "stream", Name: "stdout", Text: "a <b> & c\n"},
					{OutputType: "execute_result", Data: map[string]any{"text/plain": "2.0", "text/html": "<i>2.0</i>"}},
					{OutputType: "display_data", Data: map[string]any{"application/json": map[string]any{"k": []any{1.0, "x"}}}},
					{OutputType: "error", Ename: "ValueError", Evalue: "bad"}}}),
			step(5, agent.StepClassification, agent.Classification{Class: "retryable", Kind: "ValueError", Why: "fixable"}),
			step(6, agent.StepCode, agent.CodeRecord{Language: "bash", Code: "echo hi\n"}),
			step(7, agent.StepExecution, agent.ExecutionRecord{Language: "bash", Stdout: "hi\n", Stderr: "warn\n", Reason: "timeout", ExitCode: -1}),
			step(8, agent.StepCode, agent.CodeRecord{Language: "node", Code: "console.log(1)\n"}),
			step(9, agent.StepExecution, agent.ExecutionRecord{Language: "node", Stdout: "1\n", Reason: "exited"}),
			step(10, agent.StepAnswer, agent.Answer{Text: "The mean is 3.", Unsupported: []string{"3"}}),
			step(11, agent.StepFailure, agent.FailureReport{Outcome: "retries_exhausted", Summary: "gave up", Intent: "plot",
				Error: "ValueError: bad", Occurrences: 2, PartialOutput: "a\n"}),
		},
		files: []store.File{{Path: "plot.png", Kind: "file", Content: png, Step: 4}, {Path: "fig.svg", Kind: "file", Content: svg, Step: 9},
			{Path: "big.png", Kind: "file", Content: png, Truncated: true, Step: 9}},
	}
	got, err := agent.Notebook(context.Background(), rec, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "notebook_export.ipynb")
	if os.Getenv("UPDATE_NOTEBOOK_GOLDEN") == "1" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the notebook changed:\n%s", got)
	}
}

// A code cell whose execution showed nothing still has its "outputs"
// (nbformat requires them), and an execute_result without data has an
// empty bundle, not null.
func TestNotebookEmptyOutputs(t *testing.T) {
	rec := &fixedRecord{run: store.Run{ID: "run-2", Task: "t", Status: store.StatusSucceeded},
		steps: []store.Step{
			nbStep(t, agent.StepCode, agent.CodeRecord{Language: "python", Code: "x = 1\n"}),
			nbStep(t, agent.StepExecution, agent.ExecutionRecord{Language: "python", Reason: "exited"}),
			nbStep(t, agent.StepCode, agent.CodeRecord{Language: "python", Code: "x\n"}),
			nbStep(t, agent.StepExecution, agent.ExecutionRecord{Language: "python", Reason: "exited",
				Outputs: []agent.Output{{OutputType: "execute_result"}}}),
		}}
	data, err := agent.Notebook(context.Background(), rec, "run-2")
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []map[string]json.RawMessage `json:"cells"`
	}
	if err := json.Unmarshal(data, &nb); err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 3 {
		t.Fatalf("%d cells:\n%s", len(nb.Cells), data)
	}
	if got := string(nb.Cells[1]["outputs"]); got != "[]" {
		t.Errorf("outputs of a silent cell: %q, want []", got)
	}
	if !bytes.Contains(nb.Cells[2]["outputs"], []byte(`"data": {}`)) {
		t.Errorf("an execute_result without data: %s", nb.Cells[2]["outputs"])
	}
}

package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

func nbStep(t *testing.T, kind store.StepKind, data any) store.Step {
	t.Helper()
	s, err := store.NewStep(kind, 1, string(kind), data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNotebookIsValidNbformat(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, _ := db.Tenant(store.DefaultTenant)
	me := store.NewOwner()
	r, err := st.CreateRun(ctx, store.NewRun{Task: "mean of 1, 2, 3", Model: "openai:m", Mode: "single", Owner: me})
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n....")
	_, err = st.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{
		nbStep(t, agent.StepStart, agent.Start{Task: r.Task}),
		nbStep(t, agent.StepCode, agent.CodeRecord{Language: "python", Code: "print(x)\n", Source: "tool_call"}),
		nbStep(t, agent.StepExecution, agent.ExecutionRecord{Language: "python", Stderr: "Traceback...\nNameError: name 'x' is not defined\n", ExitCode: 1, Reason: "exited"}),
		nbStep(t, agent.StepClassification, agent.Classification{Class: "retryable", Kind: "NameError", Why: "fixable"}),
		nbStep(t, agent.StepCode, agent.CodeRecord{Language: "bash", Code: "echo 2.0\n", Source: "tool_call"}),
		nbStep(t, agent.StepExecution, agent.ExecutionRecord{Language: "bash", Stdout: "2.0\n", Reason: "exited",
			Outputs: []agent.Output{{OutputType: "stream", Name: "stdout", Text: "2.0\n"},
				{OutputType: "execute_result", Data: map[string]any{"text/plain": "2.0"}, ExecutionCount: 2},
				{OutputType: "error", Ename: "E", Evalue: "v", Traceback: []string{"t"}}}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{nbStep(t, agent.StepAnswer, agent.Answer{Text: "The mean is 2.0.", Grounded: true})},
		Files:  []store.File{{Path: "plot.png", Kind: "file", Size: int64(len(png)), Content: png, Step: 6}},
		Status: store.StatusSucceeded, Outcome: "answered", Answer: "The mean is 2.0.", Release: true})
	if err != nil {
		t.Fatal(err)
	}
	nb, err := agent.Notebook(ctx, st, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"nbformat": 4`, `%%bash`, `NameError`, `image/png`, `The mean is 2.0.`, `"execution_count": 2`} {
		if !strings.Contains(string(nb), want) {
			t.Errorf("notebook lacks %s", want)
		}
	}
	path := filepath.Join(dir, "r.ipynb")
	os.WriteFile(path, nb, 0o644)
	if _, err := exec.Command("/usr/bin/python3", "-c", "import nbformat").CombinedOutput(); err != nil {
		t.Skip("python3-nbformat is not installed")
	}
	out, err := exec.Command("/usr/bin/python3", "-c",
		"import sys, nbformat; nb = nbformat.read(sys.argv[1], as_version=4); nbformat.validate(nb); print(len(nb.cells))", path).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "5" {
		t.Fatalf("nbformat: %v %s", err, out)
	}
}

package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coderun/coderun/store"
)

func open(t *testing.T) (*store.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

func newRun(t *testing.T, st *store.Store, owner store.Owner) *store.Run {
	t.Helper()
	r, err := st.CreateRun(context.Background(), store.NewRun{Task: "mean of 1, 2, 3", Model: "openai:m", Mode: "single",
		Inputs:     []store.InputFile{{Path: "data.csv", Size: 6, Summary: "CSV"}},
		InputFiles: []store.File{{Path: "data.csv", Kind: "file", Size: 6, Mode: 0o644, Content: []byte("x\n1\n2\n")}},
		State:      json.RawMessage(`{"phase":"generate"}`), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func step(t *testing.T, kind store.StepKind, data any) store.Step {
	t.Helper()
	s, err := store.NewStep(kind, 1, string(kind), data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaultDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CODERUN_DATA_DIR": "/d", "XDG_DATA_HOME": "/x", "HOME": "/h"}, "/d"},
		{map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, "/x/coderun"},
		{map[string]string{"HOME": "/h"}, "/h/.local/share/coderun"},
	} {
		got, err := store.DefaultDir(func(k string) string { return c.env[k] })
		if err != nil || got != c.want {
			t.Errorf("%v: %q %v, want %q", c.env, got, err, c.want)
		}
	}
	if _, err := store.DefaultDir(func(string) string { return "" }); err == nil {
		t.Error("no error without any directory")
	}
}

func TestRecordIsAtomicAndOrdered(t *testing.T) {
	st, dir := open(t)
	ctx := context.Background()
	me := store.CurrentProcess()
	r := newRun(t, st, me)
	if r.Status != store.StatusRunning || r.Shown() != store.StatusRunning || r.Steps != 0 {
		t.Fatalf("new run: %+v", r)
	}
	sc := store.Scorecard{Attempts: 1}
	sc.AddError("retryable", "NameError")
	steps, err := st.Record(ctx, r.ID, me, store.Update{
		Steps:     []store.Step{step(t, store.KindStart, store.Start{Task: r.Task}), step(t, store.KindExecution, store.Execution{Stdout: "2.0\n"})},
		State:     json.RawMessage(`{"phase":"interpret"}`),
		Scorecard: &sc,
		Files:     []store.File{{Path: "plot.png", Kind: "file", Size: 3, Content: []byte("png")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Seq != 1 || steps[1].Seq != 2 {
		t.Fatalf("steps: %+v", steps)
	}
	// A stranger cannot record, and a failed record changes nothing.
	if _, err := st.Record(ctx, r.ID, "otherhost/1/1", store.Update{Steps: []store.Step{step(t, store.KindRetry, store.Retry{})}}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("stranger recorded: %v", err)
	}
	// Another handle on the same file (another process) sees it all.
	st2, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	got, err := st2.GetRun(ctx, r.ID[:5])
	if err != nil {
		t.Fatal(err)
	}
	if got.Steps != 2 || string(got.State) != `{"phase":"interpret"}` || got.Scorecard.ErrorKinds["NameError"] != 1 {
		t.Errorf("run: %+v", got)
	}
	all, _ := st2.Steps(ctx, r.ID)
	if len(all) != 2 {
		t.Errorf("%d steps", len(all))
	}
	var ex store.Execution
	if err := all[1].Decode(&ex); err != nil || ex.Stdout != "2.0\n" {
		t.Errorf("execution: %+v %v", ex, err)
	}
	outs, _ := st2.Files(ctx, r.ID, store.RoleOutput)
	ins, _ := st2.Files(ctx, r.ID, store.RoleInput)
	if len(outs) != 1 || outs[0].Step != 1 || string(outs[0].Content) != "png" || len(ins) != 1 || string(ins[0].Content) != "x\n1\n2\n" {
		t.Errorf("files: %+v %+v", outs, ins)
	}

	// Ending the run: final fields, owner released, review item, no more records.
	_, err = st.Record(ctx, r.ID, me, store.Update{
		Steps:  []store.Step{step(t, store.KindFailure, store.FailureReport{Outcome: "stuck"})},
		Status: store.StatusFailed, Outcome: "stuck", Failure: &store.FailureReport{Outcome: "stuck", Summary: "s"},
		Review: &store.NewReview{Kind: store.ReviewFailure, Reason: "stuck"}, Release: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = st.GetRun(ctx, r.ID)
	if got.Status != store.StatusFailed || got.Outcome != "stuck" || got.Failure.Summary != "s" || got.Owner != "" || got.FinishedAt.IsZero() {
		t.Errorf("ended run: %+v", got)
	}
	if _, err := st.Record(ctx, r.ID, "", store.Update{}); err == nil {
		t.Error("recorded into an ended run")
	}
	if _, err := st.Claim(ctx, r.ID, me); err == nil {
		t.Error("claimed an ended run")
	}
	items, _ := st.Reviews(ctx, "", false)
	if len(items) != 1 || items[0].RunID != r.ID {
		t.Fatalf("review items: %+v", items)
	}
	if err := st.CloseReview(ctx, items[0].ID, "resolved", "fixed the prompt"); err != nil {
		t.Fatal(err)
	}
	if err := st.CloseReview(ctx, items[0].ID, "resolved", ""); err == nil {
		t.Error("closed twice")
	}
	if items, _ := st.Reviews(ctx, "", false); len(items) != 0 {
		t.Errorf("open items: %+v", items)
	}
}

func TestClaimDeadOwner(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	// A process that has exited is a dead owner.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	host, _ := os.Hostname()
	dead := store.Owner(fmt.Sprintf("%s/%d/12345", host, cmd.Process.Pid))
	if dead.Alive() {
		t.Fatal("an exited process is alive")
	}
	if !store.CurrentProcess().Alive() {
		t.Fatal("this process is not alive")
	}
	if !store.Owner("some-other-host/1/1").Alive() {
		t.Error("an owner on another host must be taken to be alive")
	}
	r := newRun(t, st, dead)
	if got, _ := st.GetRun(ctx, r.ID); got.Shown() != store.StatusInterrupted {
		t.Errorf("shown %s", got.Shown())
	}
	list, _ := st.ListRuns(ctx, store.Filter{Status: store.StatusInterrupted})
	if len(list) != 1 {
		t.Errorf("interrupted runs: %d", len(list))
	}
	me := store.CurrentProcess()
	if _, err := st.Claim(ctx, r.ID, me); err != nil {
		t.Fatal(err)
	}
	// Now alive-owned: nobody else may claim.
	r2 := newRun(t, st, me)
	if _, err := st.Claim(ctx, r2.ID, store.Owner(fmt.Sprintf("%s/%d/1", host, os.Getpid()))); !errors.Is(err, store.ErrNotOwner) {
		t.Errorf("claim of a live process's run: %v", err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	st, dir := open(t)
	ctx := context.Background()
	me := store.CurrentProcess()
	var runs []*store.Run
	for i := 0; i < 4; i++ {
		runs = append(runs, newRun(t, st, me))
	}
	st2, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i, r := range runs {
		h := st
		if i%2 == 1 {
			h = st2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := h.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{step(t, store.KindRetry, store.Retry{Number: j})}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, r := range runs {
		steps, _ := st.Steps(ctx, r.ID)
		if len(steps) != 20 || steps[19].Seq != 20 {
			t.Errorf("run %s: %d steps", r.ID, len(steps))
		}
	}
}

func TestStatsAggregate(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	me := store.CurrentProcess()
	end := func(outcome, answer string, sc store.Scorecard, status store.Status) {
		r := newRun(t, st, me)
		_, err := st.Record(ctx, r.ID, me, store.Update{Status: status, Outcome: outcome, Answer: answer, Scorecard: &sc, Release: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	a := store.Scorecard{Outcome: "answered", Attempts: 1, ModelCalls: 2, InputTokens: 100, OutputTokens: 10, ModelMS: 1000, ExecMS: 500}
	b := store.Scorecard{Outcome: "answered", Attempts: 2, Retries: 1, ModelCalls: 3, InputTokens: 200, OutputTokens: 20, ModelMS: 2000, ExecMS: 700}
	b.AddError("retryable", "NameError")
	c := store.Scorecard{Outcome: "timeout", Attempts: 1, ModelCalls: 1, InputTokens: 50, ExecMS: 1000}
	c.AddError("fatal", "timeout")
	end("answered", "x", a, store.StatusSucceeded)
	end("answered", "y", b, store.StatusSucceeded)
	end("timeout", "", c, store.StatusFailed)
	s, err := st.Stats(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Runs != 3 || s.ByOutcome["answered"] != 2 || s.ByOutcome["timeout"] != 1 || s.Attempts != 4 || s.Retries != 1 ||
		s.InputTokens != 350 || s.Errors["fatal"] != 1 || s.ErrorKinds["NameError"] != 1 || s.ExecTime.Milliseconds() != 2200 ||
		s.FirstTry != 0.5 || s.Answered < 0.66 || s.Answered > 0.67 {
		t.Errorf("stats: %+v", s)
	}
}

func TestNotebookIsValidNbformat(t *testing.T) {
	st, dir := open(t)
	ctx := context.Background()
	me := store.CurrentProcess()
	r := newRun(t, st, me)
	png := []byte("\x89PNG\r\n\x1a\n....")
	_, err := st.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{
		step(t, store.KindStart, store.Start{Task: r.Task}),
		step(t, store.KindCode, store.Code{Language: "python", Code: "print(x)\n", Source: "tool_call"}),
		step(t, store.KindExecution, store.Execution{Language: "python", Stderr: "Traceback...\nNameError: name 'x' is not defined\n", ExitCode: 1, Reason: "exited"}),
		step(t, store.KindClassification, store.Classification{Class: "retryable", Kind: "NameError", Why: "fixable"}),
		step(t, store.KindCode, store.Code{Language: "bash", Code: "echo 2.0\n", Source: "tool_call"}),
		step(t, store.KindExecution, store.Execution{Language: "bash", Stdout: "2.0\n", Reason: "exited",
			Outputs: []store.Output{{OutputType: "stream", Name: "stdout", Text: "2.0\n"},
				{OutputType: "execute_result", Data: map[string]any{"text/plain": "2.0"}, ExecutionCount: 2},
				{OutputType: "error", Ename: "E", Evalue: "v", Traceback: []string{"t"}}}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Record(ctx, r.ID, me, store.Update{Steps: []store.Step{step(t, store.KindAnswer, store.Answer{Text: "The mean is 2.0.", Grounded: true})},
		Files:  []store.File{{Path: "plot.png", Kind: "file", Size: int64(len(png)), Content: png, Step: 6}},
		Status: store.StatusSucceeded, Outcome: "answered", Answer: "The mean is 2.0.", Release: true})
	if err != nil {
		t.Fatal(err)
	}
	nb, err := st.Notebook(ctx, r.ID)
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
	exp, err := st.Export(ctx, r.ID, false)
	if err != nil || len(exp.Steps) != 7 || exp.Files[0].Content != nil {
		t.Errorf("export: %v %+v", err, exp)
	}
}

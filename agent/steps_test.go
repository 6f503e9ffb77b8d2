package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

func stepsHarness(t *testing.T, protocol string, turns ...llmtest.Turn) *harness {
	h := newHarness(t, protocol, turns...)
	h.cfg.Mode = agent.ModeSteps
	h.cfg.Backend = agent.SessionBackend{Runtime: runtime(t)}
	return h
}

// Three cells share one interpreter: the second and third use variables
// the earlier ones defined, which fails with NameError unless the state
// persisted.
func TestStepsModeAcrossThreeCells(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.shape)\n"),
			llmtest.RunCode("c2", "python", "by_region = df.groupby('region')['sales'].sum()\nprint(by_region.to_string())\n"),
			llmtest.RunCode("c3", "python", "best = by_region.idxmax()\nprint('best region:', best, int(by_region[best]))\n"),
			llmtest.Reply("Done: the outputs answer the task."),
			llmtest.Reply("The north region sold the most: 320."),
		)
		res := h.run("Which region sold the most, and how much?", sandbox.File{Path: "sales.csv", Content: []byte(salesCSV)})
		if res.Outcome != agent.OutcomeAnswered || !res.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res.Outcome, res.Answer, res.Failure)
		}
		var cells []agent.ExecutionRecord
		_, steps := h.steps(res.RunID)
		for i := 0; i < 3; i++ {
			cells = append(cells, decode[agent.ExecutionRecord](t, steps, agent.StepExecution, i))
		}
		want := []string{"(4, 3)\n", "region\nnorth    320\nsouth    230\n", "best region: north 320\n"}
		for i, c := range cells {
			if c.Stdout != want[i] || c.Executor != "session" || c.ExecutionCount != i+1 {
				t.Errorf("cell %d: stdout %q executor %s count %d", i+1, c.Stdout, c.Executor, c.ExecutionCount)
			}
		}
		// Each observation went back to the model before the next cell.
		third := h.sent(2)
		mustContain(t, "observation", lastUser(third), "north    320")
		// The interpretation saw all three cells.
		mustContain(t, "interpretation", lastUser(h.sent(4)), "Cell 1", "Cell 3", "best region: north 320")
		if sc := res.Scorecard; sc.Attempts != 3 || sc.ModelCalls != 5 || sc.Retries != 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		nb, err := agent.Notebook(context.Background(), h.store, res.RunID)
		if err != nil || strings.Count(string(nb), `"cell_type": "code"`) != 3 {
			t.Errorf("notebook: %v\n%s", err, nb)
		}
	})
}

func TestStepsModeErrorThenFixKeepsState(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "xs = [4, 8, 15, 16, 23, 42]\nprint(len(xs))\n"),
			llmtest.RunCode("c2", "python", "print(xs[6])\n"),
			llmtest.RunCode("c3", "python", "print('last:', xs[5], 'sum:', sum(xs))\n"),
			llmtest.Reply("Finished."),
			llmtest.Reply("The last number is 42 and the sum is 108."),
		)
		res := h.run("What is the last of 4, 8, 15, 16, 23, 42 and their sum?")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		_, steps := h.steps(res.RunID)
		c := decode[agent.Classification](t, steps, agent.StepClassification, 1)
		if c.Kind != "IndexError" || c.Class != "retryable" {
			t.Errorf("classification: %+v", c)
		}
		if sc := res.Scorecard; sc.Attempts != 3 || sc.Retries != 1 || sc.ErrorKinds["IndexError"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestStepsModeStepBudget(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "a = 1\nprint(a)\n"),
			llmtest.RunCode("c2", "python", "b = a + 1\nprint(b)\n"),
			llmtest.RunCode("c3", "python", "c = b + 1\nprint(c)\n"),
		)
		h.cfg.MaxSteps = 2
		res := h.run("Count slowly.")
		if res.Outcome != agent.OutcomeStepBudget || res.Status != store.StatusFailed {
			t.Fatalf("outcome %s", res.Outcome)
		}
		if f := res.Failure; f.Attempts != 2 || !strings.Contains(f.PartialOutput, "2") || !strings.Contains(f.Summary, "2 cells") {
			t.Errorf("failure: %+v", f)
		}
	})
}

func TestStepsModeNeedsPersistentBackend(t *testing.T) {
	h := newHarness(t, llmtest.OpenAI)
	h.cfg.Mode = agent.ModeSteps
	if _, err := h.agent().Run(context.Background(), agent.Task{Prompt: "x"}); err == nil {
		t.Fatal("steps mode ran over a one-shot backend")
	}
}

// A steps run paused for approval resumes in a new session: the cells that
// ran before are replayed, so the approved cell finds their variables.
func TestStepsModeResumeReplaysCells(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := stepsHarness(t, protocol,
			llmtest.RunCode("c1", "python", "xs = [10, 20, 30]\nprint('sum', sum(xs))\n"),
			llmtest.RunCode("c2", "python", "import subprocess\nout = subprocess.run(['echo', 'total', str(sum(xs))], capture_output=True, text=True).stdout\nprint(out)\n"),
		)
		h.cfg.Approval = agent.ApproveAsk
		res := h.run("Sum 10, 20, 30 and echo it from a child process.")
		if res.Status != store.StatusAwaitingApproval {
			t.Fatalf("status %s", res.Status)
		}
		if _, err := agent.Decide(context.Background(), h.store, res.RunID, agent.Approve, "test", ""); err != nil {
			t.Fatal(err)
		}
		h2 := stepsHarness(t, protocol, llmtest.Reply("Done."), llmtest.Reply("The child echoed total 60."))
		h2.cfg.Store, h2.store = h.store, h.store
		res2, err := h2.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res2.Outcome != agent.OutcomeAnswered || !res2.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res2.Outcome, res2.Answer, res2.Failure)
		}
		_, steps := h2.steps(res.RunID)
		if ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 1); ex.Stdout != "total 60\n\n" {
			t.Errorf("approved cell after replay: %q %q", ex.Stdout, ex.Stderr)
		}
		if r := decode[agent.Resume](t, steps, agent.StepResume, 1); r.From != "replay" || !strings.Contains(r.Note, "1 successful cells") {
			t.Errorf("replay note: %+v", r)
		}
		// The resumed run put its conversation together again from the
		// stored model calls and its checkpoint: the task, both cells'
		// results.
		var sent []string
		for _, m := range h2.sent(0).Messages {
			sent = append(sent, m.Content)
		}
		mustContain(t, "the first request after resuming", strings.Join(sent, "\n"), "Sum 10, 20, 30", "sum 60", "total 60")
		if protocol == llmtest.OpenAI && len(sent) != 6 {
			t.Errorf("%d messages sent after resuming, want 6 (system, task, two calls and their results)", len(sent))
		}
		conversationStoredOnce(t, steps)
	})
}

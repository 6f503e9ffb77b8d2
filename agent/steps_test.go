package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

// fakeSteps is a steps-mode harness over a scripted session.
func fakeSteps(t *testing.T, protocol string, b *agenttest.Backend, turns ...llmtest.Turn) *harness {
	h := fakeHarness(t, protocol, b, turns...)
	h.cfg.Mode = agent.ModeSteps
	return h
}

func TestStepsModeErrorThenFixKeepsState(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeSteps(t, protocol, agenttest.NewSession(
			agenttest.On("len(xs)", agenttest.Print("6\n")),
			agenttest.On("xs[6]", agenttest.Result{Exception: &agenttest.Exception{Ename: "IndexError", Evalue: "list index out of range",
				Traceback: []string{"Traceback (most recent call last)", "IndexError: list index out of range"}}}),
			agenttest.On("sum(xs)", agenttest.Print("last: 42 sum: 108\n"))),
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
		h := fakeSteps(t, protocol, agenttest.NewSession(
			agenttest.On("a = 1", agenttest.Print("1\n")),
			agenttest.On("b = a + 1", agenttest.Print("2\n")),
			agenttest.On("c = b + 1", agenttest.Print("3\n"))),
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
	h := fakeHarness(t, llmtest.OpenAI, agenttest.NewBackend())
	h.cfg.Mode = agent.ModeSteps
	if _, err := h.agent().Run(context.Background(), agent.Task{Prompt: "x"}); err == nil {
		t.Fatal("steps mode ran over a one-shot backend")
	}
}

// A steps run paused for approval and resumed opens a new session and
// replays the cells that succeeded before (not the failed ones) before it
// runs the approved cell; the replay is recorded.
func TestStepsModeResumeReplaysSuccessfulCells(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		script := func() *agenttest.Backend {
			return agenttest.NewSession(
				agenttest.On("xs = [10, 20, 30]", agenttest.Print("sum 60\n")),
				agenttest.On("ys[0]", agenttest.Raise("NameError", "name 'ys' is not defined")),
				agenttest.On("subprocess", agenttest.Print("total 60\n\n")))
		}
		code2 := "import subprocess\nout = subprocess.run(['echo', 'total', str(sum(xs))], capture_output=True, text=True).stdout\nprint(out)\n"
		h := fakeSteps(t, protocol, script(),
			llmtest.RunCode("c1", "python", "xs = [10, 20, 30]\nprint('sum', sum(xs))\n"),
			llmtest.RunCode("c2", "python", "print(ys[0])\n"),
			llmtest.RunCode("c3", "python", code2),
		)
		h.cfg.Approval = agent.ApproveAsk
		res := h.run("Sum 10, 20, 30 and echo it from a child process.")
		if res.Status != store.StatusAwaitingApproval {
			t.Fatalf("status %s outcome %s failure %+v", res.Status, res.Outcome, res.Failure)
		}
		if _, err := agent.Decide(context.Background(), h.store, res.RunID, agent.Approve, "test", ""); err != nil {
			t.Fatal(err)
		}
		b2 := script()
		h2 := fakeSteps(t, protocol, b2, llmtest.Reply("Done."), llmtest.Reply("The child echoed total 60."))
		h2.cfg.Store, h2.store = h.store, h.store
		res2, err := h2.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res2.Outcome != agent.OutcomeAnswered || !res2.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res2.Outcome, res2.Answer, res2.Failure)
		}
		var ran []string
		for _, c := range b2.Executed() {
			ran = append(ran, strings.SplitN(c.Code, "\n", 2)[0])
		}
		if want := "xs = [10, 20, 30]|import subprocess"; strings.Join(ran, "|") != want {
			t.Errorf("the resumed session ran %q, want %q", strings.Join(ran, "|"), want)
		}
		steps := h2.wantKinds(res.RunID, agent.StepStart,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification, agent.StepRetry,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepApproval, agent.StepApproval,
			agent.StepResume, agent.StepResume, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepModelCall, agent.StepAnswer)
		if r := decode[agent.Resume](t, steps, agent.StepResume, 1); r.From != "replay" || !strings.Contains(r.Note, "1 successful cells") {
			t.Errorf("replay note: %+v", r)
		}
		if ws := b2.Opened(); len(ws) != 1 {
			t.Errorf("the resumed run opened %d sessions, want 1", len(ws))
		}
		conversationStoredOnce(t, steps)
	})
}

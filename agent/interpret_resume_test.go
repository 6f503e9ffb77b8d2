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

// A run whose code worked but whose interpretation call failed is not
// ended: it is resumed from the interpretation step, and the answer is
// written from the recorded output without running the code again.
func TestInterpretationFailureIsResumable(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		b := agenttest.NewBackend(agenttest.On("6 * 7", agenttest.Print("42\n")))
		h := fakeHarness(t, protocol, b,
			llmtest.RunCode("c1", "python", "print(6 * 7)\n"),
			llmtest.Fail(500, "internal error"), llmtest.Fail(500, "internal error"), llmtest.Fail(500, "internal error"))
		res := h.run("Multiply 6 by 7.")
		if res.Status != store.StatusInterrupted || res.Failure == nil || res.Answer != nil {
			t.Fatalf("status %s outcome %s failure %+v", res.Status, res.Outcome, res.Failure)
		}
		mustContain(t, "the failure report", res.Failure.Summary, "server error", "coderun runs resume "+res.RunID)
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepClassification)
		if c := decode[agent.Classification](t, steps, agent.StepClassification, 1); c.Class != "infrastructure" || c.Kind != "server_error" {
			t.Errorf("classification: %+v", c)
		}
		run := h.storedRun(res.RunID)
		standing, err := agent.RunStanding(run)
		if err != nil || run.Status.Final() || run.Owner != "" || standing.Shown != agent.InterpretFailed || standing.Phase != "interpret" {
			t.Fatalf("stored run: status %s owner %q standing %+v %v", run.Status, run.Owner, standing, err)
		}

		h.srv.Push(llmtest.Reply("6 times 7 is 42."))
		res, err = h.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusSucceeded || res.Answer == nil || !strings.Contains(res.Answer.Text, "42") {
			t.Fatalf("resumed: %+v", res)
		}
		h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepClassification,
			agent.StepResume, agent.StepModelCall, agent.StepAnswer)
		if n := len(b.Executed()); n != 1 {
			t.Errorf("the code ran %d times", n)
		}
		if sc := res.Scorecard; sc.Attempts != 1 || sc.Errors["infrastructure"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

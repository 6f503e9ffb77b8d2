package agent_test

import (
	"slices"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

// A number the task or the code shows does not ground an answer: only the
// output does.
func TestAnswerFromTaskOrCodeIsNotGrounded(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("sum(values)", agenttest.Print("mean: 137.5\n"))),
			llmtest.RunCode("c1", "python", "values = [120, 80, 200, 150]\nprint('mean:', sum(values) / len(values))\n"),
			llmtest.Reply("The mean is 150."),
			llmtest.Reply("The mean is 150."),
		)
		res := h.run("What is the mean of 120, 80, 200, 150?")
		if res.Outcome != agent.OutcomeUnverified || res.Answer == nil || res.Answer.Grounded || !slices.Equal(res.Answer.Unsupported, []string{"150"}) {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		mustContain(t, "grounding feedback", lastUser(h.sent(2)), "150", "does not show")
		h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepClassification, agent.StepRetry,
			agent.StepModelCall, agent.StepAnswer)
		if sc := res.Scorecard; sc.Outcome != string(agent.OutcomeUnverified) || sc.ErrorKinds[string(agent.KindUngroundedAnswer)] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if run := h.storedRun(res.RunID); run.Outcome != string(agent.OutcomeUnverified) {
			t.Errorf("stored outcome %q", run.Outcome)
		}
		items, _ := h.store.Reviews(t.Context(), res.RunID, false)
		if len(items) != 1 || items[0].Kind != store.ReviewUnverified {
			t.Errorf("review queue: %+v", items)
		}

		h2 := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("range(1000)", agenttest.Print("count: 999\n"))),
			llmtest.RunCode("c1", "python", "print('count:', len([i for i in range(1000) if i]))\n"),
			llmtest.Reply("There are 1000 of them."),
			llmtest.Reply("There are 1000 of them."),
		)
		res = h2.run("How many of the integers below one thousand are non-zero?")
		if res.Outcome != agent.OutcomeUnverified || !slices.Equal(res.Answer.Unsupported, []string{"1000"}) {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
	})
}

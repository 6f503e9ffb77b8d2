package agent_test

import (
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
)

// An interpretation saying that the output does not answer the task is
// not an answer: its reason goes back to the model, which computes what
// was missing.
func TestInterpretationNotAnsweredIsRetried(t *testing.T) {
	for _, c := range []struct{ name, notAnswered string }{
		{"json", "```json\n{\"answers\": false, \"reason\": \"the output shows only the row count, not the mean\"}\n```"},
		{"plain", "The output does not answer the task: the output shows only the row count, not the mean."},
	} {
		t.Run(c.name, func(t *testing.T) {
			protocols(t, func(t *testing.T, protocol string) {
				b := agenttest.NewBackend(agenttest.On("len(values)", agenttest.Print("rows: 4\n")),
					agenttest.On("mean(", agenttest.Print("mean: 137.5\n")))
				h := fakeHarness(t, protocol, b,
					llmtest.RunCode("c1", "python", "values = [120, 80, 200, 150]\nprint('rows:', len(values))\n"),
					llmtest.Reply(c.notAnswered),
					llmtest.RunCode("c2", "python", "import statistics\nprint('mean:', statistics.mean([120, 80, 200, 150]))\n"),
					llmtest.Reply(`{"answers": true, "answer": "The mean is 137.5."}`),
				)
				res := h.run("What is the mean of 120, 80, 200, 150?")
				if res.Outcome != agent.OutcomeAnswered || res.Answer == nil || res.Answer.Text != "The mean is 137.5." || !res.Answer.Grounded {
					t.Fatalf("outcome %s answer %+v failure %+v", res.Outcome, res.Answer, res.Failure)
				}
				mustContain(t, "feedback", lastUser(h.sent(2)), "does not answer the task", "only the row count, not the mean")
				steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
					agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepClassification, agent.StepRetry,
					agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
					agent.StepModelCall, agent.StepAnswer)
				cl := decode[agent.Classification](t, steps, agent.StepClassification, 1)
				if cl.Kind != agent.KindNotAnswered || cl.Class != agent.ClassRetryable || cl.Message == "" {
					t.Errorf("classification: %+v", cl)
				}
				rt := decode[agent.Retry](t, steps, agent.StepRetry, 0)
				if rt.Reason != agent.KindNotAnswered {
					t.Errorf("retry: %+v", rt)
				}
				if sc := res.Scorecard; sc.Attempts != 2 || sc.Retries != 1 || sc.ErrorKinds[string(agent.KindNotAnswered)] != 1 ||
					sc.Outcome != string(agent.OutcomeAnswered) {
					t.Errorf("scorecard: %s", fmtScore(sc))
				}
			})
		})
	}
}

// An interpretation that never finds an answer in the output ends the run
// without one when the retries are used up, naming the reason.
func TestInterpretationNeverAnswersExhaustsRetries(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		b := agenttest.NewBackend(agenttest.On("len(", agenttest.Print("rows: 4\n")), agenttest.On("max(", agenttest.Print("max: 200\n")))
		h := fakeHarness(t, protocol, b,
			llmtest.RunCode("c1", "python", "print('rows:', len([1, 2, 3, 4]))\n"),
			llmtest.Reply(`{"answers": false, "reason": "only the row count"}`),
			llmtest.RunCode("c2", "python", "print('max:', max([120, 80, 200, 150]))\n"),
			llmtest.Reply(`{"answers": false, "reason": "the maximum, not the mean"}`),
		)
		h.cfg.MaxRetries = 1
		res := h.run("What is the mean of 120, 80, 200, 150?")
		if res.Outcome != agent.OutcomeRetriesExhausted || res.Answer != nil || res.Failure == nil {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		mustContain(t, "report", res.Failure.Summary, "not_answered", "the maximum, not the mean")
	})
}

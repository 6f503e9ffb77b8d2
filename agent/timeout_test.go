package agent_test

import (
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
)

// A timeout is not fatal at once: told the limit, the model may write code
// that finishes within it.
func TestTimeoutRetriedWithTheLimitThenAnswered(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("slow", agenttest.Stopped(sandbox.ReasonTimeout, "")),
			agenttest.On("fast", agenttest.Print("primes: 664579\n"))),
			llmtest.RunCode("c1", "python", "# slow\nprint(sum(1 for n in range(2, 10**7) if all(n % d for d in range(2, n))))\n"),
			llmtest.RunCode("c2", "python", "# fast: a sieve\nprint('primes:', 664579)\n"),
			llmtest.Reply(`{"answers": true, "answer": "There are 664579 primes below ten million."}`),
		)
		h.cfg.Limits.WallTime = 5 * time.Second
		res := h.run("How many primes are there below ten million?")
		if res.Outcome != agent.OutcomeAnswered || res.Answer == nil || !res.Answer.Grounded {
			t.Fatalf("outcome %s answer %+v failure %+v", res.Outcome, res.Answer, res.Failure)
		}
		mustContain(t, "timeout feedback", lastUser(h.sent(1)), "wall-time limit of 5s", "finishes well within 5s", "retry 1 of 3")
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepRetry, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepAnswer)
		if c := decode[agent.Classification](t, steps, agent.StepClassification, 0); c.Class != agent.ClassRetryable || c.Kind != agent.KindTimeout {
			t.Errorf("classification: %+v", c)
		}
		if sc := res.Scorecard; sc.Attempts != 2 || sc.Retries != 1 || sc.ErrorKinds["timeout"] != 1 || sc.Errors["retryable"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

// How often a timeout goes back to the model is the run's setting: none
// ends the run at the first timeout, two let the model try twice more.
func TestTimeoutRetriesSetting(t *testing.T) {
	for _, c := range []struct {
		retries, attempts int
	}{{-1, 1}, {2, 3}} {
		h := fakeHarness(t, llmtest.OpenAI, agenttest.NewBackend(agenttest.On("slow", agenttest.Stopped(sandbox.ReasonTimeout, ""))),
			llmtest.RunCode("c1", "python", "# slow 1\n"), llmtest.RunCode("c2", "python", "# slow 2\n"), llmtest.RunCode("c3", "python", "# slow 3\n"))
		h.cfg.TimeoutRetries = c.retries
		res := h.run("Count the primes below ten billion.")
		if res.Outcome != agent.OutcomeTimeout || res.Scorecard.Attempts != c.attempts {
			t.Errorf("TimeoutRetries %d: outcome %s after %d attempts, want timeout after %d", c.retries, res.Outcome, res.Scorecard.Attempts, c.attempts)
		}
	}
}

package agent_test

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

func TestRateLimitThenSuccess(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("6 * 7", agenttest.Print("product 42\n"))),
			llmtest.Fail(429, "slow down").WithHeader("Retry-After-Ms", "20"),
			llmtest.RunCode("c1", "python", "print('product', 6 * 7)\n"),
			llmtest.Reply("The product is 42."),
		)
		res := h.run("Multiply 6 by 7.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		_, steps := h.steps(res.RunID)
		if mc := decode[agent.ModelCall](t, steps, agent.StepModelCall, 0); mc.Attempts != 2 || mc.Error != "" {
			t.Errorf("first model call: attempts %d error %q", mc.Attempts, mc.Error)
		}
		if sc := res.Scorecard; sc.ProviderRetries != 1 || sc.ModelCalls != 2 || sc.Retries != 0 || len(sc.Errors) != 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if n := len(h.srv.Requests()); n != 3 {
			t.Errorf("%d HTTP requests, want 3", n)
		}
	})
}

func TestServerErrorEveryCall(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(), llmtest.Fail(500, "internal error").Forever())
		res := h.run("Multiply 6 by 7.")
		if res.Status != store.StatusFailed || res.Outcome != agent.OutcomeProviderError || res.Answer != nil {
			t.Fatalf("status %s outcome %s", res.Status, res.Outcome)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepClassification, agent.StepFailure)
		mc := decode[agent.ModelCall](t, steps, agent.StepModelCall, 0)
		if mc.Attempts != 3 || !strings.Contains(mc.Error, "HTTP 500") {
			t.Errorf("model call: attempts %d error %q", mc.Attempts, mc.Error)
		}
		c := decode[agent.Classification](t, steps, agent.StepClassification, 0)
		if c.Class != "infrastructure" || c.Kind != "server_error" {
			t.Errorf("classification: %+v", c)
		}
		if !strings.Contains(res.Failure.Summary, "server error") || res.Failure.Attempts != 0 {
			t.Errorf("failure: %+v", res.Failure)
		}
		if sc := res.Scorecard; sc.ProviderRetries != 2 || sc.Errors["infrastructure"] != 1 || sc.Attempts != 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if n := len(h.srv.Requests()); n != 3 {
			t.Errorf("%d HTTP requests, want 3 (the provider's retry budget)", n)
		}
	})
}

func TestMalformedToolCallFedBack(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("2 ** 10", agenttest.Print("power 1024\n"))),
			llmtest.CallTool("c1", llm.RunCodeToolName, `{"language": "python", "code": "print(2 ** 10)"`),
			llmtest.RunCode("c2", "python", "print('power', 2 ** 10)\n"),
			llmtest.Reply("2 to the 10th is 1024."),
		)
		res := h.run("What is 2 to the 10th?")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepClassification, agent.StepRetry,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepAnswer)
		c := decode[agent.Classification](t, steps, agent.StepClassification, 0)
		if c.Class != "retryable" || c.Kind != "malformed_tool_call" {
			t.Errorf("classification: %+v", c)
		}
		// The second request answers the bad call with an error result.
		second := h.sent(1)
		last := second.Messages[len(second.Messages)-1]
		if last.Role != llm.RoleTool || !strings.Contains(last.Content, "malformed") {
			t.Errorf("feedback: %+v", last)
		}
		if sc := res.Scorecard; sc.Retries != 1 || sc.Attempts != 1 || sc.ErrorKinds["malformed_tool_call"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestReplyWithoutCodeIsSentBack(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("range(1, 45)", agenttest.Print("sum 990\n"))),
			llmtest.Reply("The answer is obviously 1000."),
			llmtest.RunCode("c1", "python", "print('sum', sum(range(1, 45)))\n"),
			llmtest.Reply("The sum is 990."),
		)
		res := h.run("Sum the integers from 1 to 44.")
		if res.Outcome != agent.OutcomeAnswered || res.Answer.Text != "The sum is 990." {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		mustContain(t, "feedback", lastUser(h.sent(1)), "No code was run")
		if sc := res.Scorecard; sc.ErrorKinds["no_code"] != 1 || sc.Retries != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestUngroundedAnswerIsCorrectedOrFlagged(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("sorted(", agenttest.Print("median: 7\n"))),
			llmtest.RunCode("c1", "python", "print('median:', sorted([7, 1, 9, 4, 12])[2])\n"),
			llmtest.Reply("The median is 8.5."),
			llmtest.Reply("The median is 7."),
		)
		res := h.run("Median of 7, 1, 9, 4, 12?")
		if res.Outcome != agent.OutcomeAnswered || res.Answer.Text != "The median is 7." {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		mustContain(t, "grounding feedback", lastUser(h.sent(2)), "8.5", "does not show")

		h2 := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("sorted(", agenttest.Print("median: 7\n"))),
			llmtest.RunCode("c1", "python", "print('median:', sorted([7, 1, 9, 4, 12])[2])\n"),
			llmtest.Reply("The median is 8.5."),
			llmtest.Reply("The median is 8.5, trust me."),
		)
		res = h2.run("Median of 7, 1, 9, 4, 12?")
		if res.Outcome != agent.OutcomeUnverified || res.Answer.Grounded || res.Answer.Unsupported[0] != "8.5" {
			t.Fatalf("outcome %s answer %+v", res.Outcome, res.Answer)
		}
		items, _ := h2.store.Reviews(t.Context(), res.RunID, false)
		if len(items) != 1 || items[0].Kind != store.ReviewUnverified {
			t.Errorf("review queue: %+v", items)
		}
	})
}

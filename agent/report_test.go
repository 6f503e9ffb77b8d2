package agent_test

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
)

// Four different errors: none "kept occurring"; the report counts them.
func TestFailureReportCountsDifferentErrors(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("e1", agenttest.Raise("NameError", "name 'a' is not defined")),
			agenttest.On("e2", agenttest.Raise("KeyError", "'q1'")),
			agenttest.On("e3", agenttest.Raise("IndexError", "list index out of range")),
			agenttest.On("e4", agenttest.Raise("KeyError", "'q1'"))),
			llmtest.RunCode("c1", "python", "# e1\nprint(a)\n"),
			llmtest.RunCode("c2", "python", "# e2\nprint({}['q1'])\n"),
			llmtest.RunCode("c3", "python", "# e3\nprint([][0])\n"),
			llmtest.RunCode("c4", "python", "# e4\nprint({}['q1'])\n"),
		)
		res := h.run("Anything.")
		f := res.Failure
		if res.Outcome != agent.OutcomeRetriesExhausted || f == nil {
			t.Fatalf("outcome %s", res.Outcome)
		}
		// KeyError: 'q1' occurred twice (not in a row), the others once.
		if f.Occurrences != 2 || f.Error != "KeyError: 'q1'" {
			t.Errorf("error %q ×%d", f.Error, f.Occurrences)
		}
		mustContain(t, "summary", f.Summary, "4 errors, 3 different", "the last error was KeyError: 'q1'")
		if sc := res.Scorecard; sc.Errors["retryable"] != 4 || sc.ErrorKinds["KeyError"] != 2 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		_, steps := h.steps(res.RunID)
		if stored := decode[agent.FailureReport](t, steps, agent.StepFailure, 0); stored.Summary != f.Summary || stored.Occurrences != 2 {
			t.Errorf("stored report: %+v", stored)
		}
	})
}

// A budget that ends the run after an error was fixed names the budget,
// not the fixed error.
func TestFailureReportNamesTheBudgetNotAFixedError(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("nope", agenttest.Raise("NameError", "name 'nope' is not defined")),
			agenttest.On("fixed", agenttest.Print("fixed 42\n"))),
			llmtest.RunCode("c1", "python", "print(nope)\n").WithUsage(100, 20),
			llmtest.RunCode("c2", "python", "print('fixed', 42)\n").WithUsage(100, 20),
			llmtest.Reply("must not be asked"),
		)
		h.cfg.MaxTokens = 200
		res := h.run("Anything.")
		f := res.Failure
		if res.Outcome != agent.OutcomeTokenBudget || f == nil {
			t.Fatalf("outcome %s", res.Outcome)
		}
		if strings.Contains(f.Error, "NameError") || !strings.Contains(f.Error, "token_budget") || f.Occurrences != 0 {
			t.Errorf("report error %q ×%d", f.Error, f.Occurrences)
		}
		if sc := res.Scorecard; sc.ErrorKinds["NameError"] != 1 || sc.ErrorKinds["token_budget"] != 1 || sc.Outcome != "token_budget" {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

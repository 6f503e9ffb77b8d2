package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

func TestMeanAnswerQuotesComputedValue(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("sum(values)", agenttest.Print("mean: 137.5\n"))),
			llmtest.RunCode("call_1", "python", "values = [120, 80, 200, 150]\nprint('mean:', sum(values) / len(values))\n").WithUsage(100, 20),
			llmtest.Reply("The mean of 120, 80, 200 and 150 is 137.5.").WithUsage(80, 12),
		)
		res := h.run("What is the mean of 120, 80, 200, 150?")
		if res.Status != store.StatusSucceeded || res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("status %s outcome %s failure %+v", res.Status, res.Outcome, res.Failure)
		}
		if !res.Answer.Grounded || !slices.Contains(res.Answer.Quoted, "137.5") {
			t.Errorf("answer not grounded on 137.5: %+v", res.Answer)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepAnswer)
		ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 0)
		if ex.Stdout != "mean: 137.5\n" || ex.Reason != "exited" || ex.ExitCode != 0 {
			t.Errorf("execution: %+v", ex)
		}
		// The interpretation is a separate call that carries the real output.
		interp := h.sent(1)
		if len(interp.Tools) != 0 {
			t.Errorf("the interpretation call offered tools: %v", interp.Tools)
		}
		mustContain(t, "interpretation prompt", lastUser(interp), "mean: 137.5", "What is the mean", "sum(values)")
		// The generation call carried the run_code tool.
		if gen := h.sent(0); len(gen.Tools) != 1 || gen.Tools[0].Name != llm.RunCodeToolName {
			t.Errorf("generation tools: %v", gen.Tools)
		}
		mc := decode[agent.ModelCall](t, steps, agent.StepModelCall, 0)
		if mc.Usage.InputTokens != 100 || mc.Usage.OutputTokens != 20 || len(mc.Messages) != 2 || len(mc.ToolCalls) != 1 {
			t.Errorf("model call record: %+v", mc)
		}
		sc := res.Scorecard
		if sc.Attempts != 1 || sc.Retries != 0 || sc.ModelCalls != 2 || sc.InputTokens != 180 || sc.OutputTokens != 32 ||
			sc.Outcome != string(agent.OutcomeAnswered) || len(sc.Errors) != 0 || sc.ExecMS <= 0 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		run := h.storedRun(res.RunID)
		if run.Answer != res.Answer.Text || run.Status != store.StatusSucceeded || run.Owner != "" || run.Scorecard.Attempts != 1 {
			t.Errorf("stored run: %+v", run)
		}
	})
}

func TestNameErrorCorrected(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("sum(valuez)", agenttest.Raise("NameError", "name 'valuez' is not defined")),
			agenttest.On("sum(values)", agenttest.Print("total: 12\n"))),
			llmtest.RunCode("call_1", "python", "values = [3, 4, 5]\nprint('total:', sum(valuez))\n"),
			llmtest.RunCode("call_2", "python", "values = [3, 4, 5]\nprint('total:', sum(values))\n"),
			llmtest.Reply("The total is 12."),
		)
		res := h.run("Add 3, 4 and 5.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification, agent.StepRetry,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepAnswer)
		c := decode[agent.Classification](t, steps, agent.StepClassification, 0)
		if c.Class != "retryable" || c.Kind != "NameError" || !strings.Contains(c.Message, "valuez") {
			t.Errorf("classification: %+v", c)
		}
		// The traceback went back to the model as the tool result.
		retry := h.sent(1)
		last := retry.Messages[len(retry.Messages)-1]
		if last.Role != llm.RoleTool || !strings.Contains(last.Content, "NameError: name 'valuez' is not defined") ||
			!strings.Contains(last.Content, "Traceback") {
			t.Errorf("feedback: %+v", last)
		}
		if protocol == llmtest.Anthropic && !last.IsError {
			t.Errorf("the failed tool result is not marked as an error")
		}
		// The retry's call stored only what it sent first: the model's
		// call and the traceback, after the system prompt and the task.
		mc := decode[agent.ModelCall](t, steps, agent.StepModelCall, 1)
		if mc.Prior != 2 || len(mc.Messages) != 2 || mc.Messages[0].Role != llm.RoleAssistant ||
			!strings.Contains(mc.Messages[1].Content, "NameError") {
			t.Errorf("retry call: prior %d, messages %+v", mc.Prior, mc.Messages)
		}
		if protocol == llmtest.OpenAI && len(retry.Messages) != mc.Prior+len(mc.Messages) {
			t.Errorf("the retry sent %d messages, its record says %d", len(retry.Messages), mc.Prior+len(mc.Messages))
		}
		conversationStoredOnce(t, steps)
		sc := res.Scorecard
		if sc.Attempts != 2 || sc.Retries != 1 || sc.Errors["retryable"] != 1 || sc.ErrorKinds["NameError"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if !res.Answer.Grounded || !slices.Contains(res.Answer.Quoted, "12") {
			t.Errorf("answer: %+v", res.Answer)
		}
	})
}

func TestImportErrorCorrected(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("numpyy", agenttest.Raise("ModuleNotFoundError", "No module named 'numpyy'")),
			agenttest.On("import numpy", agenttest.Print("std: 2.0\n"))),
			llmtest.RunCode("c1", "python", "import numpyy as np\nprint('std:', np.std([2, 4, 4, 4, 5, 5, 7, 9]))\n"),
			llmtest.RunCode("c2", "python", "import numpy as np\nprint('std:', np.std([2, 4, 4, 4, 5, 5, 7, 9]))\n"),
			llmtest.Reply("The standard deviation is 2.0."),
		)
		res := h.run("Standard deviation of 2, 4, 4, 4, 5, 5, 7, 9?")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s: %+v", res.Outcome, res.Failure)
		}
		_, steps := h.steps(res.RunID)
		c := decode[agent.Classification](t, steps, agent.StepClassification, 0)
		if c.Class != "retryable" || c.Kind != "ModuleNotFoundError" || !strings.Contains(c.Message, "numpyy") {
			t.Errorf("classification: %+v", c)
		}
		ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 1)
		if ex.Stdout != "std: 2.0\n" {
			t.Errorf("second execution: %q", ex.Stdout)
		}
		mustContain(t, "feedback", lastUser(h.sent(1)), "ModuleNotFoundError: No module named 'numpyy'")
		if sc := res.Scorecard; sc.Attempts != 2 || sc.Retries != 1 || sc.ErrorKinds["ModuleNotFoundError"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestInfiniteLoopTimesOutWithHonestReport(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("while True", agenttest.Stopped(sandbox.ReasonTimeout, "starting\n"))),
			llmtest.RunCode("c1", "python", "# count the primes below ten million, slowly\nprint('starting', flush=True)\nn = 0\nwhile True:\n    n += 1\n"),
			llmtest.RunCode("c2", "python", "# count the primes below ten million, faster\nprint('starting', flush=True)\nwhile True:\n    pass\n"),
			llmtest.Reply("must not be asked"),
		)
		h.cfg.Limits.WallTime = time.Second
		res := h.run("Count the primes below ten million.")
		if res.Status != store.StatusFailed || res.Outcome != agent.OutcomeTimeout {
			t.Fatalf("status %s outcome %s", res.Status, res.Outcome)
		}
		if res.Answer != nil {
			t.Fatalf("a timed-out run answered: %+v", res.Answer)
		}
		// The first timeout goes back to the model with the limit stated.
		mustContain(t, "timeout feedback", lastUser(h.sent(1)), "wall-time limit of 1s", "finishes well within 1s")
		f := res.Failure
		if f == nil || f.Attempts != 2 || !strings.Contains(f.PartialOutput, "starting") ||
			!strings.Contains(f.Intent, "faster") || !strings.Contains(f.LastCode, "pass") ||
			!strings.Contains(f.Summary, "wall-time limit of 1s") || !strings.Contains(f.Summary, "told the limit and rewrote it once") ||
			strings.Contains(f.Summary, "same limit") {
			t.Errorf("failure report: %+v", f)
		}
		h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepRetry, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepExecution, agent.StepClassification, agent.StepFailure)
		if n := len(h.srv.Requests()); n != 2 {
			t.Errorf("the model was called %d times; a timeout is retried once", n)
		}
		if sc := res.Scorecard; sc.Errors["retryable"] != 1 || sc.Errors["fatal"] != 1 || sc.ErrorKinds["timeout"] != 2 || sc.Retries != 1 || sc.Outcome != "timeout" {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		queue, err := h.store.Reviews(context.Background(), res.RunID, false)
		if err != nil || len(queue) != 1 || queue[0].Kind != store.ReviewFailure {
			t.Errorf("review queue: %+v %v", queue, err)
		}
	})
}

func TestRetriesExhaustedHonestReport(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("partial 1", agenttest.Raise("NameError", "name 'totals' is not defined").Printing("partial 1\n")),
			agenttest.On("partial 2", agenttest.Raise("KeyError", "'q1'").Printing("partial 2\n")),
			agenttest.On("partial 3", agenttest.Raise("IndexError", "list index out of range").Printing("partial 3\n")),
			agenttest.On("partial 4", agenttest.Raise("KeyError", "'q2'").Printing("partial 4\n"))),
			llmtest.RunCode("c1", "python", "# read the totals\nprint('partial 1')\nprint(totals[0])\n"),
			llmtest.RunCode("c2", "python", "# read the totals\ntotals = {}\nprint('partial 2')\nprint(totals['q1'])\n"),
			llmtest.RunCode("c3", "python", "# read the totals\ntotals = []\nprint('partial 3')\nprint(totals[0])\n"),
			llmtest.RunCode("c4", "python", "# read the totals\ntotals = {}\nprint('partial 4')\nprint(totals['q2'])\n"),
			llmtest.Reply("must not be asked"),
		)
		res := h.run("What were the Q1 totals?")
		if res.Status != store.StatusFailed || res.Outcome != agent.OutcomeRetriesExhausted || res.Answer != nil {
			t.Fatalf("status %s outcome %s answer %+v", res.Status, res.Outcome, res.Answer)
		}
		f := res.Failure
		if f.Attempts != 4 || !strings.Contains(f.PartialOutput, "partial 4") || !strings.Contains(f.Error, "KeyError") ||
			f.Occurrences != 1 || f.Intent != "read the totals" || !strings.Contains(f.LastCode, "totals['q2']") {
			t.Errorf("failure report: %+v", f)
		}
		if sc := res.Scorecard; sc.Attempts != 4 || sc.Retries != 3 || sc.ErrorKinds["KeyError"] != 2 ||
			sc.ErrorKinds["NameError"] != 1 || sc.ErrorKinds["IndexError"] != 1 || sc.Errors["retryable"] != 4 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if n := len(h.srv.Requests()); n != 4 {
			t.Errorf("%d model calls, want 4", n)
		}
		_, steps := h.steps(res.RunID)
		if r := decode[agent.Retry](t, steps, agent.StepRetry, 2); r.Number != 3 || r.Max != 3 {
			t.Errorf("third retry: %+v", r)
		}
		queue, err := h.store.Reviews(context.Background(), "", false)
		if err != nil || len(queue) != 1 || queue[0].RunID != res.RunID || queue[0].Kind != store.ReviewFailure ||
			!strings.Contains(queue[0].Reason, "retries_exhausted") {
			t.Errorf("review queue: %+v %v", queue, err)
		}
		run := h.storedRun(res.RunID)
		if f, err := agent.RunFailure(run); err != nil || f == nil || f.Outcome != agent.OutcomeRetriesExhausted || run.Answer != "" {
			t.Errorf("stored run: %+v", run)
		}
	})
}

func TestSameErrorTwiceIsStuck(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("read_csv", agenttest.Raise("FileNotFoundError", "[Errno 2] No such file or directory: 'sales.csv'"))),
			llmtest.RunCode("c1", "python", "import pandas as pd\nprint(pd.read_csv('sales.csv'))\n"),
			llmtest.RunCode("c2", "python", "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(df.sum())\n"),
			llmtest.Reply("must not be asked"),
		)
		res := h.run("Sum the sales.")
		if res.Outcome != agent.OutcomeStuck || res.Status != store.StatusFailed {
			t.Fatalf("outcome %s", res.Outcome)
		}
		_, steps := h.steps(res.RunID)
		c := decode[agent.Classification](t, steps, agent.StepClassification, 1)
		if c.Class != "fatal" || c.Kind != "stuck" || !strings.Contains(c.Message, "FileNotFoundError") {
			t.Errorf("classification: %+v", c)
		}
		if f := res.Failure; f.Occurrences != 2 || !strings.Contains(f.Error, "sales.csv") || f.Attempts != 2 {
			t.Errorf("failure: %+v", f)
		}
		if sc := res.Scorecard; sc.Attempts != 2 || sc.Retries != 1 || sc.ErrorKinds["FileNotFoundError"] != 2 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

func TestFencedCodeBlocks(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("math.hypot(3, 4)", agenttest.Print("hypotenuse 5.0\n"))),
			llmtest.Reply("I will compute it.\n\n```python\nimport math\nprint('hypotenuse', math.hypot(3, 4))\n```\n"),
			llmtest.Reply("The hypotenuse is 5.0."),
		)
		h.cfg.Format = agent.FormatFenced
		res := h.run("Hypotenuse of a 3-4 right triangle?")
		if res.Outcome != agent.OutcomeAnswered || !slices.Contains(res.Answer.Quoted, "5.0") {
			t.Fatalf("outcome %s answer %+v failure %+v", res.Outcome, res.Answer, res.Failure)
		}
		if gen := h.sent(0); len(gen.Tools) != 0 {
			t.Errorf("fenced mode offered tools: %v", gen.Tools)
		}
		_, steps := h.steps(res.RunID)
		code := decode[agent.CodeRecord](t, steps, agent.StepCode, 0)
		if code.Source != "fenced" || code.Language != "python" || code.Intent != "I will compute it." {
			t.Errorf("code: %+v", code)
		}
	})
}

// In fenced mode the feedback gives the error and one instruction; it does
// not echo back the code, which is in the model's own message before it.
func TestFencedRetryDoesNotEchoTheCode(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("10 / 0", agenttest.Raise("ZeroDivisionError", "division by zero")),
			agenttest.On("10 / 4", agenttest.Print("ratio 2.5\n"))),
			llmtest.Reply("```python\nprint(10 / 0)\n```"),
			llmtest.Reply("```python\nprint('ratio', 10 / 4)\n```"),
			llmtest.Reply("The ratio is 2.5."),
		)
		h.cfg.Format = agent.FormatFenced
		res := h.run("Divide 10 by 4.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s", res.Outcome)
		}
		fb := lastUser(h.sent(1))
		mustContain(t, "feedback", fb, "ZeroDivisionError", "fenced code block")
		if strings.Contains(fb, "```") || strings.Contains(fb, "You wrote") {
			t.Errorf("the feedback echoes the code:\n%s", fb)
		}
		if sc := res.Scorecard; sc.ErrorKinds["ZeroDivisionError"] != 1 || sc.Retries != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

// A reply without code gets one instruction: write the code, and how.
func TestNoCodeFeedbackGivesOneInstruction(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("10 / 4", agenttest.Print("ratio 2.5\n"))),
			llmtest.Reply("The ratio is 2.5."),
			llmtest.RunCode("c1", "python", "print('ratio', 10 / 4)\n"),
			llmtest.Reply(`{"answers": true, "answer": "The ratio is 2.5."}`),
		)
		res := h.run("Divide 10 by 4.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s, failure %+v", res.Outcome, res.Failure)
		}
		fb := lastUser(h.sent(1))
		if n := strings.Count(fb, "Call run_code"); n != 1 || strings.Contains(fb, "Fix the error") {
			t.Errorf("feedback for a reply without code (%d instructions):\n%s", n, fb)
		}
	})
}

package main

import (
	"strings"
	"testing"

	"github.com/coderun/coderun/llm/llmtest"
)

// The failure report counts errors as they happened and names what ended
// the run.
func TestAskFailureReportCountsAndNamesTheBudget(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", "print('ratio', 1 / 0)\n"),
				llmtest.RunCode("c2", "python", "print('ratio', undefined)\n"),
			)
			r := e.run("ask", "Compute the ratio.", "--model", e.model, "--max-retries", "1")
			if r.code != exitNoAnswer {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			mustHave(t, "report", r.stdout, "No answer (retries_exhausted)", "2 errors, all different",
				"The last error (none occurred twice): NameError")
			if strings.Contains(r.stdout, "kept occurring") {
				t.Errorf("a single error 'kept occurring':\n%s", r.stdout)
			}
			if k := stepKinds(t, e.store(), e.onlyRun().ID); !strings.HasSuffix(k, "retry model_call code review execution classification failure") {
				t.Errorf("steps: %s", k)
			}

			b := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", "print(nope)\n").WithUsage(100, 20),
				llmtest.RunCode("c2", "python", "print('fixed', 42)\n").WithUsage(100, 20),
				llmtest.Reply("must not be asked"),
			)
			r = b.run("ask", "Print a number.", "--model", b.model, "--max-tokens", "200")
			if r.code != exitNoAnswer {
				t.Fatalf("budget: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			mustHave(t, "budget report", r.stdout, "No answer (token_budget)", "What ended the run: token_budget: 240 used, budget 200")
			if strings.Contains(r.stdout, "NameError") {
				t.Errorf("the report names the fixed NameError:\n%s", r.stdout)
			}
			run := b.onlyRun()
			if run.Outcome != "token_budget" || run.Scorecard.ErrorKinds["NameError"] != 1 {
				t.Errorf("stored run: %+v", run)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

// An answer that could not be verified is not a success: it says so on
// stdout, is answered_unverified in --json, and exits 4.
func TestAskUnverifiedAnswerExitsFour(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			code := "values = [120, 80, 200, 150]\nprint('mean:', sum(values) / len(values))\n"
			e := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", code), llmtest.Reply("The mean is 150."), llmtest.Reply("The mean is 150."),
				llmtest.RunCode("c1", "python", code), llmtest.Reply("The mean is 150."), llmtest.Reply("The mean is 150."),
			)
			task := "What is the mean of 120, 80, 200, 150?"
			r := e.run("ask", task, "--model", e.model)
			if r.code != exitUnverified {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			mustHave(t, "stdout", r.stdout, "The mean is 150.", "UNVERIFIED", "150", "does not show")
			mustHave(t, "stderr", r.stderr, "warning", "answered_unverified")

			r = e.run("ask", task, "--model", e.model, "--json")
			if r.code != exitUnverified {
				t.Fatalf("--json: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			var res struct {
				RunID     string `json:"run_id"`
				Outcome   string
				Answer    *agent.Answer
				Scorecard store.Scorecard
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("%v: %s", err, r.stdout)
			}
			if res.Outcome != string(agent.OutcomeUnverified) || res.Answer == nil || res.Answer.Grounded ||
				res.Scorecard.Outcome != string(agent.OutcomeUnverified) || res.Scorecard.Retries != 1 {
				t.Fatalf("result: %+v", res)
			}
			run, err := e.store().GetRun(t.Context(), res.RunID)
			if err != nil || run.Outcome != string(agent.OutcomeUnverified) {
				t.Fatalf("stored run: %v %+v", err, run)
			}
			if k := stepKinds(t, e.store(), res.RunID); !strings.HasSuffix(k, "model_call classification retry model_call answer") {
				t.Errorf("steps: %s", k)
			}
		})
	}
}

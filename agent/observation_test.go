package agent_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
)

// Output clipped for the model (stdout and a traceback's tail) reaches it
// whole: no character is split, and the hint at the end of a traceback
// ("Did you mean") survives.
func TestClippedObservationKeepsCharactersAndHints(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		// 9,001 bytes of two-byte characters: the
		// clip's cut points fall inside characters unless it avoids them.
		out := strings.Repeat("é", 4500) + "\n"
		trace := "Traceback (most recent call last):\n" + strings.Repeat("  File \"/work/main.py\", line 1, in <module>\n    print('ééé')\n", 40) +
			"AttributeError: module 'math' has no attribute 'sqroot'. Did you mean: 'sqrt'?\n"
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("sqroot", agenttest.Result{ExitCode: 1, Stdout: out, Stderr: trace}),
			agenttest.On("sqrt", agenttest.Print("root: 1.4142135623730951\n"))),
			llmtest.RunCode("c1", "python", "import math\nprint('é' * 4500)\nprint(math.sqroot(2))\n"),
			llmtest.RunCode("c2", "python", "import math\nprint('root:', math.sqrt(2))\n"),
			llmtest.Reply(`{"answers": true, "answer": "The square root of 2 is 1.4142135623730951."}`),
		)
		res := h.run("What is the square root of 2?")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s failure %+v", res.Outcome, res.Failure)
		}
		fb := lastUser(h.sent(1))
		mustContain(t, "feedback", fb, "Did you mean: 'sqrt'?", "bytes cut")
		if !utf8.ValidString(fb) || strings.ContainsRune(fb, utf8.RuneError) {
			t.Errorf("the feedback splits a character: %q", fb[:200])
		}
		_, steps := h.steps(res.RunID)
		if rt := decode[agent.Retry](t, steps, agent.StepRetry, 0); strings.ContainsRune(rt.Feedback, utf8.RuneError) || !strings.Contains(rt.Feedback, "Did you mean") {
			t.Errorf("stored feedback: %.200q", rt.Feedback)
		}
	})
}

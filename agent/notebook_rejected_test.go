package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
)

// The notebook of a run shows the code a person rejected, marked as not
// run and as text (running the notebook must not run it), before the
// rewritten code that ran.
func TestNotebookShowsRejectedCode(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		b := agenttest.NewBackend(agenttest.On("print(6 * 7)", agenttest.Print("42\n")))
		h := fakeHarness(t, protocol, b,
			llmtest.RunCode("c1", "python", childCode),
			llmtest.RunCode("c2", "python", "print(6 * 7)\n"),
			llmtest.Reply("It is 42."))
		h.cfg.Approval = agent.ApproveAsk
		h.cfg.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Verdict, error) {
			return agent.Reject, nil
		})
		res := h.run("Compute 6 times 7.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s", res.Outcome)
		}
		data, err := agent.Notebook(context.Background(), h.store, res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var nb struct {
			Cells []struct {
				Type   string `json:"cell_type"`
				Source any    `json:"source"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(data, &nb); err != nil {
			t.Fatal(err)
		}
		rejected, ran := -1, -1
		for i, c := range nb.Cells {
			src := source(c.Source)
			switch {
			case c.Type == "markdown" && strings.Contains(src, "Code rejected — it did not run") && strings.Contains(src, "subprocess.run"):
				rejected = i
			case c.Type == "code" && strings.Contains(src, "subprocess"):
				t.Errorf("the rejected code is a code cell: %q", src)
			case c.Type == "code" && strings.Contains(src, "print(6 * 7)"):
				ran = i
			}
		}
		if rejected < 0 || ran < rejected {
			t.Errorf("rejected code at cell %d, the code that ran at %d:\n%s", rejected, ran, data)
		}
	})
}

// source is a notebook cell's source, a string or a list of lines.
func source(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []any:
		var b strings.Builder
		for _, l := range s {
			b.WriteString(l.(string))
		}
		return b.String()
	}
	return ""
}

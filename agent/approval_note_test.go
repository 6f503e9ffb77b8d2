package agent_test

import (
	"context"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
)

// notingApprover rejects with a note.
type notingApprover struct{ note string }

func (n notingApprover) Approve(context.Context, agent.ApprovalRequest) (agent.Verdict, error) {
	return agent.Reject, nil
}

func (n notingApprover) ApproveNoted(context.Context, agent.ApprovalRequest) (agent.Verdict, string, error) {
	return agent.Reject, n.note, nil
}

// A NotingApprover's note is recorded with the decision and, for a
// rejection, goes back to the model.
func TestApproverNoteIsRecorded(t *testing.T) {
	h := fakeHarness(t, llmtest.OpenAI, child(),
		llmtest.RunCode("c1", "python", childCode),
		llmtest.RunCode("c2", "python", "print(6 * 7)\n"),
		llmtest.Reply("It is 42."))
	h.cfg.Approval = agent.ApproveAsk
	h.cfg.Approver = notingApprover{note: "no child processes, please"}
	res := h.run("Compute 6 times 7.")
	steps, err := h.store.Steps(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if a := decode[agent.Approval](t, steps, agent.StepApproval, 1); a.Decision != "rejected" || a.Note != "no child processes, please" {
		t.Errorf("the decision: %+v", a)
	}
	last := h.sent(1).Messages[len(h.sent(1).Messages)-1]
	mustContain(t, "the rejection's tool result", last.Content, "noting: no child processes, please")
}

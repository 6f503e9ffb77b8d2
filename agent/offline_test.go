package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
)

// Code that needs the network is never put to a person: the sandbox has
// none, so the code is refused, with that reason, before it runs.
func TestNetworkCodeRefusedOffline(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		backend := agenttest.NewBackend()
		h := fakeHarness(t, protocol, backend,
			llmtest.RunCode("c1", "python", "import urllib.request\nprint(urllib.request.urlopen('https://example.com').read()[:100])\n"),
			llmtest.Reply("must not be needed"),
		)
		h.cfg.Approval = agent.ApproveAsk
		h.cfg.Approver = agent.ApproverFunc(func(ctx context.Context, req agent.ApprovalRequest) (agent.Verdict, error) {
			t.Errorf("asked a person about code that needs the network: %+v", req.Decision)
			return agent.Approve, nil
		})
		res := h.run("Fetch example.com and print the start of the page.")
		if res.Outcome != agent.OutcomeDenied {
			t.Fatalf("outcome %s", res.Outcome)
		}
		if res.Failure == nil || !strings.Contains(strings.ToLower(res.Failure.Error+res.Failure.Summary), "network") {
			t.Errorf("the failure does not say why: %+v", res.Failure)
		}
		if len(backend.Executed()) != 0 {
			t.Errorf("the code ran: %v", backend.Executed())
		}
	})
}

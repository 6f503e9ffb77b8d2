package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

// A run whose context is cancelled with ErrSuspended (a server shutting
// down) is not ended: it is left at its checkpoint, owned by no one, and
// resumes from there.
func TestSuspendedRunResumes(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(agenttest.On("print", agenttest.Print("42\n"))),
			llmtest.RunCode("c0", "python", "print('never run')\n").WithDelay(30*time.Second),
			llmtest.RunCode("c1", "python", "print(6*7)\n"),
			llmtest.Reply("It is 42."),
		)
		ctx, cancel := context.WithCancelCause(context.Background())
		h.cfg.Observer = func(e agent.Event) {
			if e.Step.Kind == agent.StepStart {
				go func() {
					for h.srv.Pending() == 3 { // until the model call is under way
						time.Sleep(10 * time.Millisecond)
					}
					cancel(agent.ErrSuspended)
				}()
			}
		}
		res, err := h.agent().Run(ctx, agent.Task{Prompt: "What is 6*7?"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusInterrupted || res.Outcome != "" || res.Failure != nil {
			t.Fatalf("suspended run: status %s outcome %q failure %+v", res.Status, res.Outcome, res.Failure)
		}
		run := h.storedRun(res.RunID)
		if run.Status != store.StatusRunning || run.Owner != "" || run.Shown() != store.StatusInterrupted {
			t.Fatalf("stored run: status %s owner %q shown %s", run.Status, run.Owner, run.Shown())
		}
		if kinds, _ := h.steps(res.RunID); strings.Join(kinds, " ") != "start" {
			t.Fatalf("the suspended call was recorded: %v", kinds)
		}

		h.cfg.Observer = nil
		res, err = h.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusSucceeded || res.Answer == nil || res.Answer.Text != "It is 42." {
			t.Fatalf("resumed run: %+v", res)
		}
		kinds, _ := h.steps(res.RunID)
		if got := strings.Join(kinds, " "); !strings.HasPrefix(got, "start resume model_call code") || strings.Contains(got, "failure") {
			t.Errorf("steps: %s", got)
		}
	})
}

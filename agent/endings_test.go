package agent_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// Every way the code's execution ends a run goes through the one table of
// endings: the outcome, the classification and the summary of the failure
// report, tested over a scripted executor. (A timeout is retried once
// first: TestInfiniteLoopTimesOutWithHonestReport.)
func TestExecutionEndings(t *testing.T) {
	killed := agenttest.Stopped(sandbox.ReasonKilled, "")
	killed.Error = "killed by the operator"
	for _, c := range []struct {
		name    string
		backend *agenttest.Backend
		maxWall time.Duration
		outcome string
		class   string
		kind    string
		summary string
	}{
		{"cpu", agenttest.NewBackend(agenttest.On("", agenttest.Stopped(sandbox.ReasonCPULimit, ""))),
			0, string(agent.OutcomeCPULimit), "fatal", "cpu_limit", "CPU-time limit of 3s"},
		{"memory", agenttest.NewBackend(agenttest.On("", agenttest.Stopped(sandbox.ReasonMemoryLimit, ""))),
			0, string(agent.OutcomeMemoryLimit), "fatal", "memory_limit", "memory limit of 64 MiB"},
		{"MemoryError", agenttest.NewBackend(agenttest.On("", agenttest.Raise("MemoryError", ""))),
			0, string(agent.OutcomeMemoryLimit), "fatal", "MemoryError", "memory limit of 64 MiB"},
		{"output", agenttest.NewBackend(agenttest.On("", agenttest.Stopped(sandbox.ReasonOutputLimit, ""))),
			0, string(agent.OutcomeOutputLimit), "fatal", "output_limit", "output limit of 1.0 KiB"},
		{"setup", agenttest.NewBackend(agenttest.On("", agenttest.Result{Reason: sandbox.ReasonSetupError, ExitCode: -1, Error: "no cgroup"})),
			0, string(agent.OutcomeSetupError), "infrastructure", "setup_error", "could not be set up, so the code did not run: no cgroup"},
		{"killed", agenttest.NewBackend(agenttest.On("", killed)),
			0, string(agent.OutcomeExecutorError), "infrastructure", "killed", "stopped from outside (killed: killed by the operator)"},
		{"open", &agenttest.Backend{OpenErr: errors.New("no sandbox here")},
			0, string(agent.OutcomeSetupError), "infrastructure", "setup_error", "The sandbox for the code could not be set up: no sandbox here"},
		{"executor", agenttest.NewBackend(agenttest.On("", agenttest.Result{Err: errors.New("broken pipe")})),
			0, string(agent.OutcomeExecutorError), "infrastructure", "executor_error", "The code could not be run: broken pipe"},
		{"time budget", agenttest.NewBackend(agenttest.On("", agenttest.Result{UntilCancelled: true})),
			2 * time.Second, string(agent.OutcomeTimeBudget), "fatal", "time_budget", "time budget ran out while the code ran"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := fakeHarness(t, llmtest.OpenAI, c.backend, llmtest.RunCode("c1", "python", "print('work')\n"), llmtest.Reply("must not be asked"))
			h.cfg.Limits = sandbox.Limits{WallTime: 7 * time.Second, CPUTime: 3 * time.Second, Memory: 64 << 20, OutputBytes: 1 << 10}
			h.cfg.MaxWall = c.maxWall
			res := h.run("Work.")
			if res.Status != store.StatusFailed || string(res.Outcome) != c.outcome || res.Answer != nil {
				t.Fatalf("status %s outcome %s, want failed %s; failure %+v", res.Status, res.Outcome, c.outcome, res.Failure)
			}
			if !strings.Contains(res.Failure.Summary, c.summary) {
				t.Errorf("summary %q does not say %q", res.Failure.Summary, c.summary)
			}
			_, steps := h.steps(res.RunID)
			cl := decode[agent.Classification](t, steps, agent.StepClassification, 0)
			if string(cl.Class) != c.class || string(cl.Kind) != c.kind || cl.Why != res.Failure.Summary {
				t.Errorf("classification %+v, want %s %s", cl, c.class, c.kind)
			}
			if sc := res.Scorecard; sc.Errors[c.class] != 1 || sc.ErrorKinds[c.kind] != 1 || sc.Outcome != c.outcome {
				t.Errorf("scorecard: %s", fmtScore(sc))
			}
			if n := len(h.srv.Requests()); n != 1 {
				t.Errorf("%d model calls; an ending must not be retried", n)
			}
			queue, err := h.store.Reviews(t.Context(), res.RunID, false)
			if err != nil || len(queue) != 1 || queue[0].Kind != store.ReviewFailure || !strings.HasPrefix(queue[0].Reason, c.outcome+":") {
				t.Errorf("review queue: %+v %v", queue, err)
			}
		})
	}
}

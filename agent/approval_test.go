package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/agent/agenttest"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

const childCode = "import subprocess\nout = subprocess.run(['echo', 'words:', '42'], capture_output=True, text=True).stdout\nprint('child said', out)\n"

// child is the script of an executor that runs childCode.
func child() *agenttest.Backend {
	return agenttest.NewBackend(agenttest.On("subprocess.run(['echo'", agenttest.Print("child said words: 42\n\n")))
}

func TestSubprocessAskedApprovedRuns(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, child(),
			llmtest.RunCode("c1", "python", childCode),
			llmtest.Reply("The child process printed 42."),
		)
		var asked atomic.Int32
		h.cfg.Approval = agent.ApproveAsk
		h.cfg.Approver = agent.ApproverFunc(func(ctx context.Context, req agent.ApprovalRequest) (agent.Verdict, error) {
			asked.Add(1)
			if req.Decision.Action != policy.Ask || !strings.Contains(req.Code, "subprocess.run") ||
				len(req.Decision.Causes) == 0 || req.Decision.Causes[0].Rule != policy.RuleProcessSpawn {
				t.Errorf("approval request: %+v", req)
			}
			return agent.Approve, nil
		})
		res := h.run("Run echo in a child process and report the number it prints.")
		if res.Outcome != agent.OutcomeAnswered || asked.Load() != 1 {
			t.Fatalf("outcome %s, asked %d times, failure %+v", res.Outcome, asked.Load(), res.Failure)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepApproval, agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepAnswer)
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 0); a.Decision != "pending" {
			t.Errorf("first approval step: %+v", a)
		}
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 1); a.Decision != "approved" || a.By != "terminal" ||
			len(a.Rules) != 1 || a.Rules[0] != policy.RuleProcessSpawn {
			t.Errorf("second approval step: %+v", a)
		}
		if ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 0); ex.Stdout != "child said words: 42\n\n" {
			t.Errorf("stdout %q", ex.Stdout)
		}
		if sc := res.Scorecard; sc.Approvals != 1 || sc.Attempts != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		// The approval item was opened and closed.
		items, _ := h.store.Reviews(context.Background(), res.RunID, true)
		if len(items) != 1 || items[0].Kind != store.ReviewApproval || items[0].Status != "closed" || items[0].Resolution != "approved" {
			t.Errorf("review items: %+v", items)
		}
	})
}

// A person's rejection goes back to the model as the result of its call,
// and the model rewrites the code within the retry budget.
func TestSubprocessRejectedGoesBackToModel(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		b := agenttest.NewBackend(agenttest.On("print(6 * 7)", agenttest.Print("42\n")))
		h := fakeHarness(t, protocol, b,
			llmtest.RunCode("c1", "python", childCode),
			llmtest.RunCode("c2", "python", "print(6 * 7)\n"),
			llmtest.Reply("It is 42."))
		h.cfg.Approval = agent.ApproveAsk
		var asked atomic.Int32
		h.cfg.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Verdict, error) {
			asked.Add(1)
			return agent.Reject, nil
		})
		res := h.run("Compute 6 times 7.")
		if res.Status != store.StatusSucceeded || res.Outcome != agent.OutcomeAnswered || asked.Load() != 1 {
			t.Fatalf("status %s outcome %s asked %d failure %+v", res.Status, res.Outcome, asked.Load(), res.Failure)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepApproval, agent.StepRetry,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepAnswer)
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 1); a.Decision != "rejected" {
			t.Errorf("approval: %+v", a)
		}
		if r := decode[agent.Retry](t, steps, agent.StepRetry, 0); r.Reason != agent.KindRejected || r.Number != 1 {
			t.Errorf("retry: %+v", r)
		}
		// The model was told, as the result of its call c1.
		sent := h.sent(1)
		last := sent.Messages[len(sent.Messages)-1]
		if last.Role != llm.RoleTool || last.ToolCallID != "c1" {
			t.Fatalf("the rejection went to the model as %+v", last)
		}
		mustContain(t, "the rejection's tool result", last.Content, "not run", "rejected", "at the terminal", "process.spawn", "Rewrite")
		if sc := res.Scorecard; sc.Rejections != 1 || sc.Attempts != 1 || sc.Retries != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		// One review item: the approval, closed as rejected.
		items, _ := h.store.Reviews(context.Background(), res.RunID, true)
		if len(items) != 1 || items[0].Kind != store.ReviewApproval || items[0].Resolution != "rejected" {
			t.Errorf("review items: %+v", items)
		}
	})
}

// With no retries left, a rejection ends the run, and opens no second
// review item: the approval item records the decision.
func TestSubprocessRejectedWithoutRetriesEnds(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, child(), llmtest.RunCode("c1", "python", childCode), llmtest.Reply("must not be asked"))
		h.cfg.Approval = agent.ApproveAsk
		h.cfg.MaxRetries = -1
		h.cfg.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Verdict, error) {
			return agent.Reject, nil
		})
		res := h.run("Run echo in a child process.")
		if res.Status != store.StatusFailed || res.Outcome != agent.OutcomeRejected || res.Answer != nil {
			t.Fatalf("status %s outcome %s", res.Status, res.Outcome)
		}
		h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepApproval, agent.StepFailure)
		f := res.Failure
		if f.Attempts != 0 || !strings.Contains(f.Summary, "rejected") || !strings.Contains(f.Summary, "process.spawn") ||
			!strings.Contains(f.LastCode, "subprocess") {
			t.Errorf("failure: %+v", f)
		}
		items, _ := h.store.Reviews(context.Background(), res.RunID, true)
		if len(items) != 1 || items[0].Kind != store.ReviewApproval || items[0].Resolution != "rejected" {
			t.Errorf("review items: %+v", items)
		}
	})
}

func TestNonInteractiveRejectsByDefaultAndFlagApproves(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, child(), llmtest.RunCode("c1", "python", childCode))
		h.cfg.Approval = agent.ApproveNone
		res := h.run("Run echo in a child process.")
		if res.Outcome != agent.OutcomeRejected {
			t.Fatalf("outcome %s", res.Outcome)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepFailure)
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 0); !strings.Contains(a.By, "non-interactive") {
			t.Errorf("approval: %+v", a)
		}

		h2 := fakeHarness(t, protocol, child(), llmtest.RunCode("c1", "python", childCode), llmtest.Reply("It printed 42."))
		h2.cfg.Approval = agent.ApproveAll
		res = h2.run("Run echo in a child process.")
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("outcome %s", res.Outcome)
		}
		steps = h2.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepAnswer)
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 0); a.Decision != "approved" || !strings.Contains(a.By, "--approve all") {
			t.Errorf("approval: %+v", a)
		}
	})
}

func TestAlwaysCoversLaterCode(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(
			agenttest.On("['false']", agenttest.Raise("subprocess.CalledProcessError", "Command '['false']' returned non-zero exit status 1.")),
			agenttest.On("subprocess.run(['echo'", agenttest.Print("child said words: 42\n\n"))),
			llmtest.RunCode("c1", "python", "import subprocess\nsubprocess.run(['false'], check=True)\n"),
			llmtest.RunCode("c2", "python", childCode),
			llmtest.Reply("It printed 42."),
		)
		var asked atomic.Int32
		h.cfg.Approval = agent.ApproveAsk
		h.cfg.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Verdict, error) {
			asked.Add(1)
			return agent.Always, nil
		})
		res := h.run("Run echo in a child process.")
		if res.Outcome != agent.OutcomeAnswered || asked.Load() != 1 {
			t.Fatalf("outcome %s, asked %d", res.Outcome, asked.Load())
		}
		_, steps := h.steps(res.RunID)
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 2); a.Decision != "approved" || !strings.HasPrefix(a.By, "always") {
			t.Errorf("second approval: %+v", a)
		}
		if c := decode[agent.Classification](t, steps, agent.StepClassification, 0); c.Kind != "CalledProcessError" {
			t.Errorf("classification: %+v", c)
		}
	})
}

func TestPolicyDenialAborts(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		h := fakeHarness(t, protocol, agenttest.NewBackend(), llmtest.RunCode("c1", "bash", "rm -rf / --no-preserve-root\n"), llmtest.Reply("must not be asked"))
		h.cfg.Approval = agent.ApproveAll // approval never overrides a denial
		res := h.run("Free some disk space.")
		if res.Outcome != agent.OutcomeDenied || res.Status != store.StatusFailed {
			t.Fatalf("outcome %s", res.Outcome)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepClassification, agent.StepFailure)
		rv := decode[agent.Review](t, steps, agent.StepReview, 0)
		if rv.Decision.Action != policy.Deny || !strings.Contains(res.Failure.Summary, "destructive.rm-root") {
			t.Errorf("review %+v, failure %+v", rv, res.Failure)
		}
		if sc := res.Scorecard; sc.ErrorKinds["policy_denied"] != 1 || sc.Errors["fatal"] != 1 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
	})
}

// A run paused for approval survives a restart: the store is closed and
// opened again, a new agent (new provider, new process state) resumes it
// after the decision was recorded from the review queue.
func TestAwaitingApprovalResumesAfterRestart(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		dir := t.TempDir()
		h := fakeHarness(t, protocol, child(), llmtest.RunCode("c1", "python", childCode))
		db, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := db.Tenant(store.DefaultTenant)
		h.cfg.Store = st
		h.store = st
		h.cfg.Approval = agent.ApproveAsk
		res := h.run("Run echo in a child process and report the number.")
		if res.Status != store.StatusAwaitingApproval || res.Pending == nil || !strings.Contains(res.Pending.Code, "subprocess") {
			t.Fatalf("status %s pending %+v", res.Status, res.Pending)
		}
		run := h.storedRun(res.RunID)
		pending, err := agent.RunPending(run)
		if err != nil || run.Status != store.StatusAwaitingApproval || run.Owner != "" || pending == nil ||
			pending.Findings[0].Rule != policy.RuleProcessSpawn {
			t.Fatalf("stored run: %+v %v", run, err)
		}
		open, _ := st.Reviews(context.Background(), "", false)
		if len(open) != 1 || open[0].Kind != store.ReviewApproval {
			t.Fatalf("review queue: %+v", open)
		}
		db.Close()

		// "Restart": a new store handle, a new model server and provider.
		st2 := openStore(t, dir)
		dres, err := agent.Decide(context.Background(), st2, res.RunID, agent.Approve, "review queue", "looks fine")
		if err != nil {
			t.Fatal(err)
		}
		if dres.Status != store.StatusRunning {
			t.Errorf("after the decision: %s", dres.Status)
		}
		h2 := fakeHarness(t, protocol, child(), llmtest.Reply("The child printed 42."))
		h2.cfg.Store, h2.store = st2, st2
		res2, err := h2.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res2.Outcome != agent.OutcomeAnswered || res2.Answer.Text != "The child printed 42." {
			t.Fatalf("resumed run: %+v", res2)
		}
		steps := h2.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepApproval, agent.StepResume,
			agent.StepExecution, agent.StepClassification, agent.StepModelCall, agent.StepAnswer)
		if a := decode[agent.Approval](t, steps, agent.StepApproval, 1); a.Decision != "approved" || a.By != "review queue" || a.Note != "looks fine" {
			t.Errorf("decision: %+v", a)
		}
		if ex := decode[agent.ExecutionRecord](t, steps, agent.StepExecution, 0); !strings.Contains(ex.Stdout, "words: 42") {
			t.Errorf("execution: %+v", ex)
		}
		if sc := res2.Scorecard; sc.Approvals != 1 || sc.Attempts != 1 || sc.ModelCalls != 2 {
			t.Errorf("scorecard: %s", fmtScore(sc))
		}
		if open, _ := st2.Reviews(context.Background(), "", false); len(open) != 0 {
			t.Errorf("open review items after approval: %+v", open)
		}
	})
}

// A rejection from the review queue goes back to the model, with the
// reviewer's note, when the run is resumed.
func TestAwaitingApprovalRejectedFromQueue(t *testing.T) {
	protocols(t, func(t *testing.T, protocol string) {
		b := agenttest.NewBackend(agenttest.On("print(6 * 7)", agenttest.Print("42\n")))
		h := fakeHarness(t, protocol, b, llmtest.RunCode("c1", "python", childCode))
		h.cfg.Approval = agent.ApproveAsk
		res := h.run("Compute 6 times 7.")
		if res.Status != store.StatusAwaitingApproval {
			t.Fatalf("status %s", res.Status)
		}
		dres, err := agent.Decide(context.Background(), h.store, res.RunID, agent.Reject, "review queue", "no child processes")
		if err != nil {
			t.Fatal(err)
		}
		if dres.Status != store.StatusRunning || dres.Outcome != "" || dres.Failure != nil {
			t.Fatalf("after rejection: %+v", dres)
		}
		run := h.storedRun(res.RunID)
		standing, err := agent.RunStanding(run)
		if err != nil || run.Owner != "" || run.Pending != nil || standing.Shown != agent.Rejected {
			t.Errorf("stored run: %+v, standing %+v %v", run, standing, err)
		}
		if _, err := agent.Decide(context.Background(), h.store, res.RunID, agent.Approve, "x", ""); err == nil {
			t.Errorf("a second decision was accepted")
		}
		h.srv.Push(llmtest.RunCode("c2", "python", "print(6 * 7)\n"), llmtest.Reply("It is 42."))
		res, err = h.agent().Resume(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != agent.OutcomeAnswered {
			t.Fatalf("resumed: %+v", res)
		}
		steps := h.wantKinds(res.RunID, agent.StepStart, agent.StepModelCall, agent.StepCode, agent.StepReview,
			agent.StepApproval, agent.StepApproval, agent.StepRetry, agent.StepResume,
			agent.StepModelCall, agent.StepCode, agent.StepReview, agent.StepExecution, agent.StepClassification,
			agent.StepModelCall, agent.StepAnswer)
		if r := decode[agent.Resume](t, steps, agent.StepResume, 0); r.From != "rejected" {
			t.Errorf("resume: %+v", r)
		}
		sent := h.sent(1)
		last := sent.Messages[len(sent.Messages)-1]
		if last.Role != llm.RoleTool || last.ToolCallID != "c1" {
			t.Fatalf("the rejection went to the model as %+v", last)
		}
		mustContain(t, "the rejection's tool result", last.Content, "rejected", "by review queue", "no child processes")
		items, _ := h.store.Reviews(context.Background(), res.RunID, true)
		if len(items) != 1 || items[0].Resolution != "rejected" || items[0].Status != "closed" {
			t.Errorf("review items: %+v", items)
		}
	})
}

package main

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/agent"

	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
)

// A paused run resumed without a terminal stays paused: nobody was asked,
// so nothing is decided for anybody.
func TestResumePausedWithoutTerminalKeepsItPaused(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newAskEnv(t, protocol, llmtest.RunCode("c1", "python", childCode))
			r := e.run("ask", "Run echo in a child process.", "--model", e.model, "--approve", "defer")
			if r.code != exitAwaiting {
				t.Fatalf("ask: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			run := e.onlyRun()
			st := e.store()
			before := stepKinds(t, st, run.ID)

			r = e.run("runs", "resume", run.ID)
			if r.code != exitAwaiting || r.stdout != "" {
				t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			mustHave(t, "resume's message", r.stderr, "awaiting approval", "no terminal", "stays paused",
				"coderun review approve "+run.ID)
			run = e.onlyRun()
			if run.Status != store.StatusAwaitingApproval || len(run.Pending) == 0 || run.Outcome != "" || run.Scorecard.Rejections != 0 {
				t.Fatalf("after resume: status %s outcome %q pending %s scorecard %+v", run.Status, run.Outcome, run.Pending, run.Scorecard)
			}
			if after := stepKinds(t, st, run.ID); after != before {
				t.Fatalf("resume recorded steps: %s, was %s", after, before)
			}
			mustHave(t, "review list", e.run("review", "list").stdout, run.ID, "approval")

			// A decision given on the command line is a decision.
			e.srv.Push(llmtest.Reply("The child printed 42."))
			r = e.run("runs", "resume", run.ID, "--approve", "all")
			if r.code != 0 || strings.TrimSpace(r.stdout) != "The child printed 42." {
				t.Fatalf("resume --approve all: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// A run approved from the review queue and not resumed yet is "approved,
// waiting to run", not interrupted: runs list, runs show and review list
// say so, and the resume records where it came from.
func TestApprovedNotResumedIsShownAsApproved(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newAskEnv(t, protocol, llmtest.RunCode("c1", "python", childCode))
			if r := e.run("ask", "Run echo in a child process.", "--model", e.model, "--approve", "defer"); r.code != exitAwaiting {
				t.Fatalf("ask: exit %d\nstderr: %s", r.code, r.stderr)
			}
			run := e.onlyRun()
			if r := e.run("review", "approve", run.ID, "--no-resume"); r.code != 0 {
				t.Fatalf("approve: exit %d\nstderr: %s", r.code, r.stderr)
			}
			list := e.run("runs", "list").stdout
			mustHave(t, "runs list", list, "approved, waiting to run")
			if strings.Contains(list, "interrupted") {
				t.Errorf("runs list shows the approved run as interrupted:\n%s", list)
			}
			show := e.run("runs", "show", run.ID).stdout
			mustHave(t, "runs show", show, "run "+run.ID+"   approved, waiting to run", "the code has not run yet",
				"coderun runs resume "+run.ID)
			if strings.Contains(show, "nterrupted") {
				t.Errorf("runs show calls the approved run interrupted:\n%s", show)
			}
			mustHave(t, "review list", e.run("review", "list").stdout, run.ID+"  approved")
			mustHave(t, "review show", e.run("review", "show", run.ID).stdout, "approved, waiting to run")

			e.srv.Push(llmtest.Reply("The child printed 42."))
			r := e.run("runs", "resume", run.ID)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "The child printed 42." {
				t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			steps, err := e.store().Steps(context.Background(), run.ID, agent.StepResume)
			if err != nil || len(steps) != 1 {
				t.Fatalf("resume steps: %v %v", steps, err)
			}
			var res agent.Resume
			if err := steps[0].Decode(&res); err != nil || res.From != "approved" || res.Phase != "execute" {
				t.Errorf("resume step: %+v %v", res, err)
			}
		})
	}
}

// A run whose process died while its code ran is interrupted, in the
// review list, and runs show says the code was running.
func TestInterruptedWhileCodeRanIsShownAndQueued(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newAskEnv(t, protocol, llmtest.RunCode("c1", "python", "import time\nprint('waiting', flush=True)\ntime.sleep(60)\n"))
			cmd := e.command("ask", "Wait a minute.", "--model", e.model)
			stderr, _ := cmd.StderrPipe()
			cmd.Stdin = strings.NewReader("")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, stderr, "policy allow", 30*time.Second)
			time.Sleep(500 * time.Millisecond) // the code is running
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			run := e.awaitLease(e.onlyRun().ID)
			if run.Shown() != store.StatusInterrupted {
				t.Fatalf("shown %s", run.Shown())
			}
			show := e.run("runs", "show", run.ID).stdout
			mustHave(t, "runs show", show, "run "+run.ID+"   interrupted", "the process died while the code of attempt 1 ran",
				"coderun runs resume "+run.ID)
			mustHave(t, "review list", e.run("review", "list").stdout, run.ID+"  interrupted", "the code of attempt 1 ran")
			var items []store.ReviewItem
			if err := json.Unmarshal([]byte(e.run("review", "list", "--json").stdout), &items); err != nil || len(items) != 1 ||
				items[0].RunID != run.ID || items[0].Kind != "interrupted" {
				t.Errorf("review list --json: %+v %v", items, err)
			}
		})
	}
}

// A rejection from the review queue goes back to the model with the
// note; the model rewrites the code, the run answers, and the approval
// item is the run's only review item.
func TestReviewRejectGoesBackToModel(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newAskEnv(t, protocol, llmtest.RunCode("c1", "python", childCode))
			if r := e.run("ask", "Print the number 42 with a label.", "--model", e.model, "--approve", "defer"); r.code != exitAwaiting {
				t.Fatalf("ask: exit %d\nstderr: %s", r.code, r.stderr)
			}
			run := e.onlyRun()
			r := e.run("review", "reject", run.ID, "--note", "no child processes here", "--no-resume")
			if r.code != 0 {
				t.Fatalf("reject: exit %d\nstderr: %s", r.code, r.stderr)
			}
			mustHave(t, "runs show", e.run("runs", "show", run.ID).stdout, "rejected, waiting for the model to rewrite the code",
				"retry  1 of 3 (rejected)")
			mustHave(t, "review list", e.run("review", "list").stdout, run.ID+"  rejected")

			e.srv.Push(llmtest.RunCode("c2", "python", "print('words:', 42)\n"), llmtest.Reply("It printed 42."))
			r = e.run("runs", "resume", run.ID)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "It printed 42." {
				t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			st := e.store()
			if k := stepKinds(t, st, run.ID); k != "start model_call code review approval approval retry resume model_call code review execution classification model_call answer" {
				t.Fatalf("steps: %s", k)
			}
			reqs := e.srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests", len(reqs))
			}
			sent, err := reqs[1].Decode()
			if err != nil {
				t.Fatal(err)
			}
			last := sent.Messages[len(sent.Messages)-1]
			if last.ToolCallID != "c1" {
				t.Fatalf("the rejection went to the model as %+v", last)
			}
			mustHave(t, "the rejection's tool result", last.Content, "rejected", "no child processes here", "Rewrite")
			items, err := st.Reviews(context.Background(), run.ID, true)
			if err != nil || len(items) != 1 || items[0].Kind != store.ReviewApproval || items[0].Resolution != "rejected" {
				t.Errorf("review items: %+v %v", items, err)
			}
		})
	}
}

// A steps-mode run killed after a cell appended to a file, and resumed,
// leaves the file as an uninterrupted run does: the session is rebuilt
// from the files as they were before the cells that are run again.
func TestResumedStepsRunAppendsOnce(t *testing.T) {
	t.Parallel()
	const appendCell = "with open('log.txt', 'a') as f:\n    f.write('entry\\n')\nprint('appended')\n"
	const readCell = "print('entries:', open('log.txt').read().count('entry'))\n"
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", appendCell),
				llmtest.Reply("never delivered").WithDelay(time.Minute))
			cmd := e.command("ask", "Append an entry to log.txt and count the entries.", "--model", e.model, "--mode", "steps")
			stderr, _ := cmd.StderrPipe()
			cmd.Stdin = strings.NewReader("")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, stderr, "[1] ok\n", 30*time.Second)
			for deadline := time.Now().Add(10 * time.Second); e.srv.Pending() > 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the second model call never started")
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			run := e.awaitLease(e.onlyRun().ID)

			e.srv.Push(llmtest.RunCode("c2", "python", readCell), llmtest.Reply("Done."), llmtest.Reply("There is 1 entry."))
			r := e.run("runs", "resume", run.ID)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "There is 1 entry." {
				t.Errorf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			st := e.store()
			steps, err := st.Steps(context.Background(), run.ID, agent.StepExecution)
			if err != nil || len(steps) != 2 {
				t.Fatalf("executions: %d %v", len(steps), err)
			}
			var ex agent.ExecutionRecord
			if err := steps[1].Decode(&ex); err != nil || ex.Stdout != "entries: 1\n" {
				t.Errorf("the cell after resume printed %q (%v), as an uninterrupted run would print \"entries: 1\\n\"", ex.Stdout, err)
			}
			files, err := st.Files(context.Background(), run.ID, store.RoleOutput)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if f.Path == "log.txt" && string(f.Content) != "entry\n" {
					t.Errorf("log.txt (step %d) holds %q, want %q", f.Step, f.Content, "entry\n")
				}
			}
		})
	}
}

// ask whose interpretation call fails exits 1 with the failure report,
// which says how to go on; runs resume writes the answer from the
// recorded output.
func TestInterpretationFailureResumes(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			fail := llmtest.Fail(500, "internal error").WithHeader("Retry-After-Ms", "10")
			e := newAskEnv(t, protocol, llmtest.RunCode("c1", "python", "print('product', 6 * 7)\n"), fail, fail, fail, fail)
			r := e.run("ask", "Multiply 6 by 7.", "--model", e.model)
			run := e.onlyRun()
			if r.code != exitNoAnswer {
				t.Fatalf("ask: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			mustHave(t, "ask's report", r.stdout, "server error", "coderun runs resume "+run.ID)
			mustHave(t, "runs show", e.run("runs", "show", run.ID).stdout, "interrupted: the interpretation failed")
			mustHave(t, "review list", e.run("review", "list").stdout, run.ID+"  interrupted")

			e.srv.Push(llmtest.Reply("6 times 7 is 42."))
			r = e.run("runs", "resume", run.ID)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "6 times 7 is 42." {
				t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if k := stepKinds(t, e.store(), run.ID); k != "start model_call code review execution classification model_call classification resume model_call answer" {
				t.Errorf("steps: %s", k)
			}
		})
	}
}

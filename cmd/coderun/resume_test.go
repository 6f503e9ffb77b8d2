package main

import (
	"strings"
	"testing"

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

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

// The cells of a steps-mode run whose failed cell changes the workspace
// between two successful ones: the failed cell is not replayed on resume,
// so only restoring the checkpoint's files brings back what it did.
const (
	wsCellFirst = `import os
with open('log.txt', 'a') as f:
    f.write('entry\n')
open('tmp.txt', 'w').write('temporary\n')
os.makedirs('keep/inner', exist_ok=True)
print('appended')
`
	wsCellFailing = `import os
with open('failed.txt', 'w') as f:
    f.write('written by a failed cell\n')
os.chmod('failed.txt', 0o600)
os.chmod('log.txt', 0o640)
os.remove('tmp.txt')
os.symlink('log.txt', 'link')
raise ValueError('this cell fails after writing')
`
	wsCellSecond = `with open('log.txt', 'a') as f:
    f.write('second\n')
print('appended again')
`
	// wsCellList prints every entry of the workspace: path, mode, and the
	// content of a file or the target of a link.
	wsCellList = `import os, json, stat
out = []
for root, dirs, files in os.walk('.'):
    dirs.sort()
    for n in sorted(dirs + files):
        p = os.path.join(root, n)[2:]
        st = os.lstat(p)
        e = [p, oct(stat.S_IMODE(st.st_mode))]
        if stat.S_ISLNK(st.st_mode):
            e.append('-> ' + os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            e.append(open(p).read())
        out.append(e)
print(json.dumps(out))
`
)

// A steps-mode run killed after a failed cell changed the workspace (wrote
// a file, removed one, changed modes, made a link) and a successful cell
// appended to a file, and resumed, has the workspace of its checkpoint
// exactly: the next cell lists the same entries, modes and contents as in
// the run that was never interrupted, and the appending cells ran once.
func TestResumedStepsRunRestoresCheckpointWorkspace(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			const task = "Keep a log, then list the workspace."
			// The run that is never interrupted.
			whole := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", wsCellFirst),
				llmtest.RunCode("c2", "python", wsCellFailing),
				llmtest.RunCode("c3", "python", wsCellSecond),
				llmtest.RunCode("c4", "python", wsCellList),
				llmtest.Reply("Done."), llmtest.Reply("The workspace was listed."))
			if r := whole.run("ask", task, "--model", whole.model, "--mode", "steps"); r.code != 0 {
				t.Fatalf("uninterrupted run: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			want := lastExecution(t, whole.store(), whole.onlyRun().ID, 4).Stdout

			// The same run, killed after its third cell and resumed.
			e := newAskEnv(t, protocol,
				llmtest.RunCode("c1", "python", wsCellFirst),
				llmtest.RunCode("c2", "python", wsCellFailing),
				llmtest.RunCode("c3", "python", wsCellSecond),
				llmtest.Reply("never delivered").WithDelay(time.Minute))
			cmd := e.command("ask", task, "--model", e.model, "--mode", "steps")
			stderr, _ := cmd.StderrPipe()
			cmd.Stdin = strings.NewReader("")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, stderr, "[3] ok\n", 60*time.Second)
			for deadline := time.Now().Add(10 * time.Second); e.srv.Pending() > 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the fourth model call never started")
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			run := e.awaitLease(e.onlyRun().ID)

			e.srv.Push(llmtest.RunCode("c4", "python", wsCellList), llmtest.Reply("Done."), llmtest.Reply("The workspace was listed."))
			if r := e.run("runs", "resume", run.ID); r.code != 0 {
				t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			got := lastExecution(t, e.store(), run.ID, 4).Stdout
			if got != want {
				t.Errorf("after resume the workspace is\n%s\nthe uninterrupted run's is\n%s", got, want)
			}
			// What the checkpoint holds, spelled out: the failed cell's
			// file and mode, its link, its removal; each append once.
			var entries [][]string
			if err := json.Unmarshal([]byte(got), &entries); err != nil {
				t.Fatalf("listing %q: %v", got, err)
			}
			byPath := map[string][]string{}
			for _, en := range entries {
				byPath[en[0]] = en[1:]
			}
			for path, w := range map[string][]string{
				"log.txt":    {"0o640", "entry\nsecond\n"},
				"failed.txt": {"0o600", "written by a failed cell\n"},
				"link":       {"0o777", "-> log.txt"},
				"keep/inner": {"0o755"},
			} {
				if g := byPath[path]; strings.Join(g, "|") != strings.Join(w, "|") {
					t.Errorf("%s after resume: %q, want %q", path, g, w)
				}
			}
			if g, ok := byPath["tmp.txt"]; ok {
				t.Errorf("tmp.txt, removed by the failed cell, is back after resume: %q", g)
			}
			mustHave(t, "resume step", stepNote(t, e.store(), run.ID), "set to the files of the checkpoint")
		})
	}
}

// lastExecution returns the execution record of the given attempt.
func lastExecution(t *testing.T, st store.Tenant, runID string, attempt int) agent.ExecutionRecord {
	t.Helper()
	steps, err := st.Steps(context.Background(), runID, agent.StepExecution)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Attempt == attempt {
			var ex agent.ExecutionRecord
			if err := s.Decode(&ex); err != nil {
				t.Fatal(err)
			}
			return ex
		}
	}
	t.Fatalf("run %s: no execution of attempt %d among %d", runID, attempt, len(steps))
	return agent.ExecutionRecord{}
}

// stepNote returns the notes of the run's resume steps.
func stepNote(t *testing.T, st store.Tenant, runID string) string {
	t.Helper()
	steps, err := st.Steps(context.Background(), runID, agent.StepResume)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, s := range steps {
		var r agent.Resume
		if err := s.Decode(&r); err != nil {
			t.Fatal(err)
		}
		notes = append(notes, r.Note)
	}
	return strings.Join(notes, "\n")
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm/llmtest"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// The agent commands are tested end to end: the real binary, a scripted
// model behind the real wire protocols (llmtest), real sandboxes, a store
// in a temporary data directory.

type askEnv struct {
	t       *testing.T
	srv     *llmtest.Server
	dataDir string
	model   string
	env     []string
}

func newAskEnv(t *testing.T, protocol string, turns ...llmtest.Turn) *askEnv {
	t.Helper()
	needSandbox(t)
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	e := &askEnv{t: t, srv: srv, dataDir: t.TempDir()}
	// A short lease: a killed process's run is free again after 2s.
	e.env = append(os.Environ(), "CODERUN_DATA_DIR="+e.dataDir, "CODERUN_LEASE=2s")
	if protocol == llmtest.OpenAI {
		e.model = "openai:test-model"
		e.env = append(e.env, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.BaseURL(protocol))
	} else {
		e.model = "anthropic:test-model"
		e.env = append(e.env, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+srv.BaseURL(protocol))
	}
	return e
}

func (e *askEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = e.env
	return cmd
}

func (e *askEnv) run(args ...string) cliResult {
	e.t.Helper()
	cmd := e.command(args...)
	cmd.Stdin = strings.NewReader("")
	return runCLI(e.t, cmd)
}

func (e *askEnv) store() store.Tenant {
	e.t.Helper()
	db, err := sqlite.Open(context.Background(), e.dataDir, sqlite.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	st, err := db.Tenant(store.DefaultTenant)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// awaitLease waits until the lease of the killed process that drove the
// run has expired, and returns the run then.
func (e *askEnv) awaitLease(id string) *store.Run {
	e.t.Helper()
	st := e.store()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		run, err := st.GetRun(context.Background(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if run.Owner == "" || time.Now().After(run.LeaseUntil) {
			return run
		}
	}
	e.t.Fatalf("the lease on run %s never expired", id)
	return nil
}

func (e *askEnv) onlyRun() *store.Run {
	e.t.Helper()
	runs, err := e.store().ListRuns(context.Background(), store.Filter{})
	if err != nil || len(runs) != 1 {
		e.t.Fatalf("runs: %v %v", runs, err)
	}
	return runs[0]
}

func stepKinds(t *testing.T, st store.Tenant, id string) string {
	t.Helper()
	steps, err := st.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range steps {
		kinds = append(kinds, string(s.Kind))
	}
	return strings.Join(kinds, " ")
}

func TestAskAnswersAndRecords(t *testing.T) {
	t.Parallel()
	e := newAskEnv(t, llmtest.OpenAI,
		llmtest.RunCode("c1", "python", "values = [120, 80, 200, 150]\nprint('mean:', sum(values) / len(values))\n").WithUsage(90, 30),
		llmtest.Reply("The mean is 137.5.").WithUsage(60, 8),
	)
	r := e.run("ask", "What is the mean of 120, 80, 200, 150?", "--model", e.model, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var res struct {
		RunID     string `json:"run_id"`
		Status    string
		Outcome   string
		Answer    *agent.Answer
		Scorecard store.Scorecard
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res.Answer == nil || res.Answer.Text != "The mean is 137.5." || !res.Answer.Grounded || res.Outcome != "answered" ||
		res.Scorecard.InputTokens != 150 || res.Scorecard.Attempts != 1 {
		t.Fatalf("result: %+v", res)
	}
	// Live progress went to stderr: the code, the output, the answer.
	mustHave(t, "progress", r.stderr, "sum(values) / len(values)", "mean: 137.5", "policy allow", "answer")

	list := e.run("runs", "list")
	mustHave(t, "runs list", list.stdout, res.RunID, "succeeded", "answered", e.model)
	show := e.run("runs", "show", res.RunID[:6])
	mustHave(t, "runs show", show.stdout, "What is the mean", "mean: 137.5", "The mean is 137.5.",
		"scorecard: 1 attempt, 0 retries, 2 model calls", "90+30")
	exp := e.run("runs", "export", res.RunID, "--format", "json")
	var x store.Export
	if err := json.Unmarshal([]byte(exp.stdout), &x); err != nil || len(x.Steps) != 8 || x.Run.ID != res.RunID {
		t.Fatalf("export: %v %d steps", err, len(x.Steps))
	}
	nbPath := filepath.Join(t.TempDir(), "run.ipynb")
	if r := e.run("runs", "export", res.RunID, "--format", "ipynb", "-o", nbPath); r.code != 0 {
		t.Fatalf("export ipynb: %s", r.stderr)
	}
	validateNotebook(t, nbPath)
	stats := e.run("runs", "stats", "--json")
	var s store.Stats
	if err := json.Unmarshal([]byte(stats.stdout), &s); err != nil || s.Runs != 1 || s.ByOutcome["answered"] != 1 || s.InputTokens != 150 {
		t.Fatalf("stats: %v %+v", err, s)
	}
}

// validateNotebook checks the file against nbformat's own schema when
// Debian's python3-nbformat is installed.
func validateNotebook(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.Command("/usr/bin/python3", "-c", "import nbformat").CombinedOutput(); err != nil {
		var nb map[string]any
		data, _ := os.ReadFile(path)
		if err := json.Unmarshal(data, &nb); err != nil || nb["nbformat"] != float64(4) {
			t.Fatalf("notebook: %v", err)
		}
		return
	}
	out, err := exec.Command("/usr/bin/python3", "-c",
		"import sys, nbformat; nb = nbformat.read(sys.argv[1], as_version=4); nbformat.validate(nb); print(len(nb.cells))", path).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat rejects the notebook: %v\n%s", err, out)
	}
}

func mustHave(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}

func TestAskPlotToOut(t *testing.T) {
	t.Parallel()
	code := `import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
df = pd.read_csv("sales.csv")
totals = df.groupby("region")["sales"].sum()
print(totals.to_string())
totals.plot(kind="bar")
plt.savefig("plots/by_region.png")
print("saved plots/by_region.png")
`
	e := newAskEnv(t, llmtest.Anthropic,
		llmtest.RunCode("c1", "python", "import os\nos.makedirs('plots', exist_ok=True)\n"+code),
		llmtest.Reply("North sold 320 and south 230; see plots/by_region.png."),
	)
	dir := t.TempDir()
	csv := filepath.Join(dir, "sales.csv")
	os.WriteFile(csv, []byte("month,region,sales\nJan,north,120\nJan,south,80\nFeb,north,200\nFeb,south,150\n"), 0o644)
	out := filepath.Join(dir, "out")
	r := e.run("ask", "Sales by region, with a bar chart.", "--file", csv, "--out", out, "--model", e.model)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if strings.TrimSpace(r.stdout) != "North sold 320 and south 230; see plots/by_region.png." {
		t.Errorf("stdout: %q", r.stdout)
	}
	f, err := os.Open(filepath.Join(out, "plots", "by_region.png"))
	if err != nil {
		t.Fatalf("no plot in --out: %v\n%s", err, r.stderr)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("the plot is not a PNG: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "sales.csv")); err == nil {
		t.Errorf("the input file was copied to --out as if the run produced it")
	}
}

func TestAskFailureIsHonestAndQueued(t *testing.T) {
	t.Parallel()
	e := newAskEnv(t, llmtest.OpenAI,
		llmtest.RunCode("c1", "python", "# compute the ratio\nprint('ratio', 1 / 0)\n"),
		llmtest.RunCode("c2", "python", "# compute the ratio\nprint('ratio', undefined)\n"),
	)
	r := e.run("ask", "Compute the ratio.", "--model", e.model, "--max-retries", "1")
	if r.code != exitNoAnswer {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	mustHave(t, "report", r.stdout, "No answer (retries_exhausted)", "compute the ratio", "NameError")
	run := e.onlyRun()
	list := e.run("review", "list")
	mustHave(t, "review list", list.stdout, run.ID, "failure", "retries_exhausted")
	show := e.run("review", "show", run.ID)
	mustHave(t, "review show", show.stdout, "print('ratio', undefined)", "What the code was trying to do: compute the ratio")
	items, _ := e.store().Reviews(context.Background(), run.ID, false)
	if len(items) != 1 {
		t.Fatalf("items: %+v", items)
	}
	if c := e.run("review", "close", fmt.Sprint(items[0].ID), "--note", "model too weak"); c.code != 0 {
		t.Fatalf("close: %s", c.stderr)
	}
	if l := e.run("review", "list"); strings.Contains(l.stdout, run.ID) {
		t.Errorf("closed item still listed:\n%s", l.stdout)
	}
}

// waitFor reads lines from r until one contains s, within d.
func waitFor(t *testing.T, r io.Reader, s string, d time.Duration) string {
	t.Helper()
	var mu sync.Mutex
	var seen strings.Builder
	found := make(chan struct{})
	go func() {
		br := bufio.NewReader(r)
		buf := make([]byte, 4096)
		done := false
		for {
			n, err := br.Read(buf)
			mu.Lock()
			seen.Write(buf[:n])
			if !done && strings.Contains(seen.String(), s) {
				done = true
				close(found)
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(d):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no %q within %s; saw:\n%s", s, d, seen.String())
	}
	mu.Lock()
	defer mu.Unlock()
	return seen.String()
}

// A process killed while waiting for the model leaves a consistent record:
// every step before the kill is stored, none after; the run shows as
// interrupted and resumes from its checkpoint without running the code
// again.
func TestAskKilledMidRunResumes(t *testing.T) {
	t.Parallel()
	e := newAskEnv(t, llmtest.OpenAI,
		llmtest.RunCode("c1", "python", "print('product', 6 * 7)\n"),
		llmtest.Reply("never delivered").WithDelay(time.Minute),
	)
	cmd := e.command("ask", "Multiply 6 by 7.", "--model", e.model)
	stderr, _ := cmd.StderrPipe()
	cmd.Stdin = strings.NewReader("")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, stderr, "[1] ok\n", 30*time.Second)
	// The interpretation call is in flight (held by the server): kill now.
	deadline := time.Now().Add(10 * time.Second)
	for len(e.srv.Requests()) < 1 || e.srv.Pending() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the interpretation call never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	st := e.store()
	run := e.onlyRun()
	// The dead process's lease runs out, then the run shows as interrupted.
	if run.Status != store.StatusRunning || run.Owner == "" {
		t.Fatalf("after the kill: status %s owner %q", run.Status, run.Owner)
	}
	run = e.awaitLease(run.ID)
	if run.Shown() != store.StatusInterrupted {
		t.Fatalf("after the lease: status %s shown %s", run.Status, run.Shown())
	}
	if k := stepKinds(t, st, run.ID); k != "start model_call code review execution classification" {
		t.Fatalf("steps after the kill: %s", k)
	}
	if run.Steps != 6 || run.Scorecard.Attempts != 1 {
		t.Errorf("run: steps %d scorecard %+v", run.Steps, run.Scorecard)
	}
	mustHave(t, "runs list", e.run("runs", "list").stdout, "interrupted")

	e.srv.Push(llmtest.Reply("6 times 7 is 42."))
	r := e.run("runs", "resume", run.ID)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "6 times 7 is 42." {
		t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if k := stepKinds(t, st, run.ID); k != "start model_call code review execution classification resume model_call answer" {
		t.Fatalf("steps after resume: %s", k)
	}
	run = e.onlyRun()
	// The call in flight at the kill never completed: it is not counted.
	if run.Status != store.StatusSucceeded || run.Scorecard.Attempts != 1 || run.Scorecard.ModelCalls != 2 || run.Owner != "" {
		t.Errorf("after resume: status %s owner %q scorecard %+v", run.Status, run.Owner, run.Scorecard)
	}
}

// openPTY returns a pseudo-terminal pair: the child gets the slave as its
// standard input, so it believes a person is at the terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

const childCode = "import subprocess\nout = subprocess.run(['echo', 'words:', '42'], capture_output=True, text=True).stdout\nprint('child said', out)\n"

// A process killed while a person is asked to approve leaves the run
// awaiting approval; approving it from the review queue, in another
// process, runs the code and finishes the run.
func TestAskKilledAtApprovalPromptThenApproved(t *testing.T) {
	t.Parallel()
	e := newAskEnv(t, llmtest.Anthropic, llmtest.RunCode("c1", "python", childCode))
	_, slave := openPTY(t)
	cmd := e.command("ask", "Run echo in a child process and report the number.", "--model", e.model, "--approve", "ask")
	cmd.Stdin = slave
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := waitFor(t, stderr, "Run it? [y]es / [n]o / [a]lways", 30*time.Second)
	mustHave(t, "prompt", seen, "subprocess.run", "process.spawn")
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	st := e.store()
	run := e.onlyRun()
	if run.Status != store.StatusAwaitingApproval || len(run.Pending) == 0 || run.Owner == "" {
		t.Fatalf("after the kill: status %s pending %s owner %q", run.Status, run.Pending, run.Owner)
	}
	e.awaitLease(run.ID)
	if k := stepKinds(t, st, run.ID); k != "start model_call code review approval" {
		t.Fatalf("steps after the kill: %s", k)
	}
	list := e.run("review", "list")
	mustHave(t, "review list", list.stdout, run.ID, "approval")
	show := e.run("review", "show", run.ID)
	mustHave(t, "review show", show.stdout, "subprocess.run", "process.spawn", "coderun review approve")

	e.srv.Push(llmtest.Reply("The child printed 42."))
	r := e.run("review", "approve", run.ID, "--note", "echo is harmless")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "The child printed 42." {
		t.Fatalf("approve: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if k := stepKinds(t, st, run.ID); k != "start model_call code review approval approval resume execution classification model_call answer" {
		t.Fatalf("steps after approval: %s", k)
	}
	run = e.onlyRun()
	if run.Status != store.StatusSucceeded || run.Scorecard.Approvals != 1 {
		t.Errorf("after approval: status %s scorecard %+v", run.Status, run.Scorecard)
	}
	if items, _ := st.Reviews(context.Background(), "", false); len(items) != 0 {
		t.Errorf("open review items: %+v", items)
	}
}

func TestAskDeferThenReject(t *testing.T) {
	t.Parallel()
	e := newAskEnv(t, llmtest.OpenAI, llmtest.RunCode("c1", "python", childCode))
	r := e.run("ask", "Run echo in a child process.", "--model", e.model, "--approve", "defer")
	if r.code != exitAwaiting {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	run := e.onlyRun()
	mustHave(t, "pause message", r.stderr, "awaiting approval", "coderun review approve "+run.ID)
	// The rejection goes back to the model, which rewrites the code.
	e.srv.Push(llmtest.RunCode("c2", "python", "print('words:', 42)\n"), llmtest.Reply("It printed 42."))
	rj := e.run("review", "reject", run.ID, "--note", "no child processes here")
	if rj.code != 0 || strings.TrimSpace(rj.stdout) != "It printed 42." {
		t.Fatalf("reject: exit %d\nstdout: %s\nstderr: %s", rj.code, rj.stdout, rj.stderr)
	}
	mustHave(t, "reject", rj.stderr, "rejected; the model is told")
	run = e.onlyRun()
	if run.Status != store.StatusSucceeded || run.Scorecard.Rejections != 1 || run.Scorecard.Retries != 1 {
		t.Errorf("after rejection: status %s outcome %s scorecard %+v", run.Status, run.Outcome, run.Scorecard)
	}
	// Non-interactive runs reject flagged code by default.
	e2 := newAskEnv(t, llmtest.OpenAI, llmtest.RunCode("c1", "python", childCode))
	r = e2.run("ask", "Run echo in a child process.", "--model", e2.model)
	if r.code != exitNoAnswer {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustHave(t, "report", r.stdout, "No answer (rejected)", "non-interactive")
}

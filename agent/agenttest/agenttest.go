// Package agenttest is a scripted code executor for tests of the agent
// loop: an [agent.Backend] whose executors run nothing and answer each
// execution from a script — exit status, stdout, stderr, a Python
// exception with its traceback, a limit that stopped the code (timeout,
// CPU, memory, output), files written, or code that runs until it is
// cancelled. With it, the loop's logic (classification, retries, budgets,
// approvals, resume, grounding, the failure report) is tested without
// root and without sandboxes; what only a real sandbox shows (state kept
// across cells, limits enforced, files really written) stays with the
// tests that use one.
//
//	b := agenttest.NewBackend(
//		agenttest.On("sum(valuez)", agenttest.Raise("NameError", "name 'valuez' is not defined")),
//		agenttest.On("sum(values)", agenttest.Print("total: 12\n")),
//	)
//	a, _ := agent.New(agent.Config{Backend: b, ...})
package agenttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// Result is the scripted outcome of one execution.
type Result struct {
	// ExitCode is the exit status; Reason says what stopped the code
	// (empty: it exited by itself).
	ExitCode int
	Reason   sandbox.Reason
	// Error is the runtime's message about a limit or a failure.
	Error          string
	Stdout, Stderr string
	// Exception is an error output as a session reports it (the ename,
	// evalue and traceback of a Python exception).
	Exception *Exception
	// Value is the text/plain of the cell's execute_result.
	Value string
	// Files are files the code wrote.
	Files []store.File
	// Duration is how long the execution says it took; zero means the
	// time the fake really took, at least a millisecond.
	Duration time.Duration
	// UntilCancelled makes the code run until its context is done (the
	// caller cancelled, or a budget ran out); it then ends killed, after
	// printing Stdout.
	UntilCancelled bool
	// Err is returned by Execute instead of a result: the executor could
	// not run the code at all.
	Err error
}

// Exception is a Python exception as a session reports it.
type Exception struct {
	Ename, Evalue string
	Traceback     []string
}

// Print is code that printed out and exited 0.
func Print(out string) Result { return Result{Stdout: out} }

// Raise is a Python program that died of an exception: exit status 1 and
// the traceback on stderr, as a one-shot sandbox reports it.
func Raise(ename, evalue string) Result {
	return Result{ExitCode: 1, Stderr: "Traceback (most recent call last):\n  File \"/work/main.py\", line 1, in <module>\n" +
		ename + ": " + evalue + "\n"}
}

// Printing is r after printing out first.
func (r Result) Printing(out string) Result {
	r.Stdout = out
	return r
}

// Stopped is code stopped by a limit (sandbox.ReasonTimeout,
// ReasonCPULimit, ...), after printing out.
func Stopped(reason sandbox.Reason, out string) Result {
	return Result{Reason: reason, ExitCode: -1, Stdout: out, Error: string(reason) + " reached"}
}

// Rule answers the code that contains Match (every code when empty) with
// Result.
type Rule struct {
	Match  string
	Result Result
}

// On is a rule.
func On(match string, r Result) Rule { return Rule{Match: match, Result: r} }

// Backend is an [agent.Backend] over a script of rules: each execution is
// answered by the first rule whose Match the code contains. It is safe
// for concurrent use and remembers what it was asked.
type Backend struct {
	// Session makes its executors persistent, as a notebook session is
	// (steps mode needs one); the fake keeps no variables, only counts
	// the cells.
	Session bool
	// OpenErr, if set, is returned by Open: the sandbox could not be set
	// up.
	OpenErr error

	rules []Rule
	mu    sync.Mutex
	runs  []agent.Code
	opens []agent.Workspace
}

// NewBackend returns a one-shot backend answering by rules.
func NewBackend(rules ...Rule) *Backend { return &Backend{rules: rules} }

// NewSession returns a persistent backend answering by rules.
func NewSession(rules ...Rule) *Backend { return &Backend{Session: true, rules: rules} }

// Persistent reports whether the executors are sessions.
func (b *Backend) Persistent() bool { return b.Session }

// Open returns an executor; it fails with OpenErr when that is set.
func (b *Backend) Open(ctx context.Context, ws agent.Workspace) (agent.Executor, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opens = append(b.opens, ws)
	if b.OpenErr != nil {
		return nil, b.OpenErr
	}
	return &executor{b: b}, nil
}

// Executed returns the code executed so far, in order (replays included).
func (b *Backend) Executed() []agent.Code {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]agent.Code(nil), b.runs...)
}

// Opened returns the workspaces executors were opened with, in order.
func (b *Backend) Opened() []agent.Workspace {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]agent.Workspace(nil), b.opens...)
}

func (b *Backend) answer(c agent.Code) (Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs = append(b.runs, c)
	for _, r := range b.rules {
		if strings.Contains(c.Code, r.Match) {
			return r.Result, nil
		}
	}
	return Result{}, fmt.Errorf("agenttest: no rule for the code %q", c.Code)
}

type executor struct {
	b      *Backend
	count  int
	closed bool
}

func (e *executor) Name() string {
	if e.b.Session {
		return "session"
	}
	return "sandbox:fake"
}

func (e *executor) Persistent() bool { return e.b.Session }

func (e *executor) Close() error {
	e.closed = true
	return nil
}

// Execute answers code from the script.
func (e *executor) Execute(ctx context.Context, code agent.Code) (*agent.Execution, error) {
	if e.closed {
		return nil, errors.New("agenttest: execute on a closed executor")
	}
	start := time.Now()
	r, err := e.b.answer(code)
	if err != nil {
		return nil, err
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if r.UntilCancelled {
		<-ctx.Done()
		r.Reason, r.ExitCode, r.Error = sandbox.ReasonKilled, -1, "killed: "+context.Cause(ctx).Error()
	}
	rec := agent.ExecutionRecord{Language: code.Language, Executor: e.Name(), Stdout: r.Stdout, Stderr: r.Stderr,
		ExitCode: r.ExitCode, Reason: r.Reason, Error: r.Error}
	if rec.Reason == "" {
		rec.Reason = sandbox.ReasonExited
	}
	if e.b.Session {
		e.count++
		rec.ExecutionCount = e.count
	}
	if r.Stdout != "" {
		rec.Outputs = append(rec.Outputs, agent.Output{OutputType: "stream", Name: "stdout", Text: r.Stdout})
	}
	if r.Stderr != "" {
		rec.Outputs = append(rec.Outputs, agent.Output{OutputType: "stream", Name: "stderr", Text: r.Stderr})
	}
	if r.Value != "" {
		rec.Outputs = append(rec.Outputs, agent.Output{OutputType: "execute_result", ExecutionCount: rec.ExecutionCount,
			Data: map[string]any{"text/plain": r.Value}})
	}
	if x := r.Exception; x != nil {
		rec.Outputs = append(rec.Outputs, agent.Output{OutputType: "error", Ename: x.Ename, Evalue: x.Evalue, Traceback: x.Traceback})
		if rec.ExitCode == 0 {
			rec.ExitCode = 1
		}
	}
	d := r.Duration
	if d == 0 {
		d = max(time.Since(start), time.Millisecond)
	}
	rec.DurationMS = d.Milliseconds()
	ex := &agent.Execution{Record: rec}
	for _, f := range r.Files {
		if f.Kind == "" {
			f.Kind = string(sandbox.KindFile)
		}
		if f.Size == 0 {
			f.Size = int64(len(f.Content))
		}
		ex.Files = append(ex.Files, f)
		ex.Record.Files = append(ex.Record.Files, agent.FileMeta{Path: f.Path, Kind: f.Kind, Size: f.Size})
	}
	return ex, nil
}

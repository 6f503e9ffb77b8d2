package agent

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
)

// Backend opens executors: one per run (or per resumed stretch of a run).
type Backend interface {
	Open(ctx context.Context, ws Workspace) (Executor, error)
	// Persistent reports whether its executors keep the interpreter's
	// state between executions, as steps mode needs.
	Persistent() bool
}

// Workspace is what an executor starts with.
type Workspace struct {
	// Files are placed in the workspace: the user's inputs, and on resume
	// the files earlier executions of the run produced.
	Files []sandbox.File
	// Limits bound each execution.
	Limits sandbox.Limits
	// MaxFileBytes bounds the content kept of each file the code produces.
	MaxFileBytes int64
}

// Executor runs a run's code in its workspace. Files persist from one
// Execute to the next; variables persist only when Persistent reports true
// (a live interpreter).
type Executor interface {
	// Name says what runs the code ("sandbox:linux", "session").
	Name() string
	// Persistent reports whether the interpreter's state (variables,
	// imports) carries over between executions.
	Persistent() bool
	// Execute runs code and reports what happened. An error means no
	// outcome could be had (the request was invalid, the executor is
	// broken); everything that happened to the code, limits included, is
	// an Execution.
	Execute(ctx context.Context, code Code) (*Execution, error)
	// Close releases the executor.
	Close() error
}

// Code is a program or cell to run.
type Code struct {
	Language language.Language
	Code     string
}

// Execution is the outcome of one Execute: the record to store and the
// files the code created or changed, with their contents.
type Execution struct {
	Record ExecutionRecord
	Files  []store.File
}

// RuntimeBackend runs each program in a fresh one-shot sandbox of
// Runtime. The workspace persists between executions by re-uploading: the
// files a run creates or changes (with content up to MaxFileBytes) are
// placed in the next run's workspace. Files a program deletes are not seen
// as deleted. Variables never persist: each program starts a new
// interpreter.
type RuntimeBackend struct {
	Runtime sandbox.Runtime
}

// Persistent reports false: only files carry over between programs.
func (RuntimeBackend) Persistent() bool { return false }

// Open returns an executor over the runtime.
func (b RuntimeBackend) Open(ctx context.Context, ws Workspace) (Executor, error) {
	if b.Runtime == nil {
		return nil, fmt.Errorf("agent: RuntimeBackend has no runtime")
	}
	e := &runtimeExecutor{rt: b.Runtime, lim: ws.Limits, maxFile: ws.MaxFileBytes, files: map[string]sandbox.File{}}
	if e.maxFile <= 0 {
		e.maxFile = DefaultMaxFileBytes
	}
	for _, f := range ws.Files {
		e.files[f.Path] = f
	}
	return e, nil
}

type runtimeExecutor struct {
	rt      sandbox.Runtime
	lim     sandbox.Limits
	maxFile int64
	files   map[string]sandbox.File
}

func (e *runtimeExecutor) Name() string     { return "sandbox:" + e.rt.Name() }
func (e *runtimeExecutor) Persistent() bool { return false }
func (e *runtimeExecutor) Close() error     { return nil }

func (e *runtimeExecutor) Execute(ctx context.Context, code Code) (*Execution, error) {
	paths := make([]string, 0, len(e.files))
	for p := range e.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	req := sandbox.Request{
		Language:     sandbox.Language(code.Language),
		Code:         code.Code,
		Limits:       e.lim,
		FileContents: e.maxFile,
	}
	for _, p := range paths {
		req.Files = append(req.Files, e.files[p])
	}
	start := time.Now()
	res, err := e.rt.Run(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("agent: run in %s: %w", e.Name(), err)
	}
	ex := &Execution{Record: ExecutionRecord{
		Language: code.Language, Executor: e.Name(),
		Stdout: res.Stdout, Stderr: res.Stderr,
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
		ExitCode: res.ExitCode, Signal: res.Signal, Reason: res.Reason, Error: res.Error,
		Usage: res.Usage, DurationMS: time.Since(start).Milliseconds(),
	}}
	if res.Stdout != "" {
		ex.Record.Outputs = append(ex.Record.Outputs, Output{OutputType: "stream", Name: "stdout", Text: res.Stdout})
	}
	if res.Stderr != "" {
		ex.Record.Outputs = append(ex.Record.Outputs, Output{OutputType: "stream", Name: "stderr", Text: res.Stderr})
	}
	for _, fi := range res.Files {
		f := fileFromSandbox(fi)
		ex.Files = append(ex.Files, f)
		ex.Record.Files = append(ex.Record.Files, FileMeta{Path: f.Path, Kind: f.Kind, Size: f.Size})
		// Carry complete regular files over to the next execution.
		if fi.Kind == sandbox.KindFile && !fi.ContentTruncated {
			e.files[fi.Path] = sandbox.File{Path: fi.Path, Content: fi.Content, Mode: fi.Mode.Perm()}
		}
	}
	return ex, nil
}

func fileFromSandbox(fi sandbox.FileInfo) store.File {
	return store.File{Path: fi.Path, Kind: string(fi.Kind), Size: fi.Size, Mode: fi.Mode,
		LinkTarget: fi.LinkTarget, Content: fi.Content, Truncated: fi.ContentTruncated}
}

// workspaceFiles turns stored files into files for a workspace: regular
// files with their complete content.
func workspaceFiles(files []store.File) []sandbox.File {
	var out []sandbox.File
	for _, f := range files {
		if f.Kind != string(sandbox.KindFile) || f.Truncated {
			continue
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		out = append(out, sandbox.File{Path: f.Path, Content: f.Content, Mode: fs.FileMode(mode)})
	}
	return out
}

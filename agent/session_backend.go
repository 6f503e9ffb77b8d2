package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"sort"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// SessionBackend runs the code of a run in one notebook session: a live
// IPython interpreter in a long-lived sandbox, so variables, imports and
// files carry over from one cell to the next. It is what steps mode needs.
//
// Each cell's limits come from the run's: the wall-time limit bounds each
// cell (past it the cell is interrupted, the interpreter keeps its state),
// memory, processes, open files and workspace size bound the whole session,
// and the output limit bounds what is kept of a cell's output. Bash and
// Node code runs as a %%bash or %%script node cell of the same session.
type SessionBackend struct {
	Runtime sandbox.Interactive
	// Preload lists Python modules imported when the interpreter starts.
	Preload []string
}

// Persistent reports true: a session keeps the interpreter's state.
func (SessionBackend) Persistent() bool { return true }

// Open starts a session with the workspace's files.
func (b SessionBackend) Open(ctx context.Context, ws Workspace) (Executor, error) {
	if b.Runtime == nil {
		return nil, fmt.Errorf("agent: SessionBackend has no runtime")
	}
	s, err := session.New(ctx, b.Runtime, session.Config{
		Language: sandbox.Python,
		Limits:   ws.Limits, // per cell: WallTime, CPUTime, OutputBytes
		Files:    ws.Files,
		Preload:  b.Preload,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: start session: %w", err)
	}
	e := &sessionExecutor{s: s, maxFile: ws.MaxFileBytes, seen: map[string][32]byte{}}
	if e.maxFile <= 0 {
		e.maxFile = DefaultMaxFileBytes
	}
	for _, f := range ws.Files {
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644 // as the sandbox writes it
		}
		e.seen[f.Path] = fileSum(mode, f.Content)
	}
	return e, nil
}

// fileSum identifies a regular file's content and permission bits, so that
// a cell that only changes a file's mode is seen to change it.
func fileSum(mode fs.FileMode, content []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%o\x00", mode.Perm())
	h.Write(content)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

type sessionExecutor struct {
	s       *session.Session
	maxFile int64
	// seen are the hashes of the workspace's entries after the last cell,
	// to tell what a cell created, changed or removed.
	seen map[string][32]byte
}

func (e *sessionExecutor) Name() string     { return "session" }
func (e *sessionExecutor) Persistent() bool { return true }
func (e *sessionExecutor) Close() error     { return e.s.Close() }

func (e *sessionExecutor) Execute(ctx context.Context, code Code) (*Execution, error) {
	src := code.Code
	switch code.Language {
	case sandbox.Bash:
		src = "%%bash\n" + src
	case sandbox.Node:
		src = "%%script node\n" + src
	}
	start := time.Now()
	c, err := e.s.Execute(ctx, session.Exec{Code: src})
	if err != nil {
		return nil, fmt.Errorf("agent: session cell: %w", err)
	}
	rec := ExecutionRecord{
		Language: code.Language, Executor: e.Name(),
		Stdout: c.Stdout(), Stderr: c.Stderr(),
		StdoutTruncated: c.OutputTruncated, StderrTruncated: c.OutputTruncated,
		Reason: sandbox.ReasonExited, ExecutionCount: c.ExecutionCount,
		DurationMS: max(c.Duration, time.Since(start)).Milliseconds(),
	}
	switch c.Status {
	case session.StatusOK:
	case session.StatusError:
		rec.ExitCode = 1
		if c.ExitStatus != 0 {
			rec.ExitCode = c.ExitStatus
		}
	case session.StatusTimeout:
		rec.Reason, rec.ExitCode = sandbox.ReasonTimeout, -1
		rec.Error = "the cell reached its time limit and was interrupted"
		if c.Limit == sandbox.ReasonCPULimit {
			rec.Reason = sandbox.ReasonCPULimit
			rec.Error = "the cell reached its CPU-time limit and was interrupted"
		}
	case session.StatusInterrupted:
		rec.Reason, rec.ExitCode = sandbox.ReasonKilled, -1
		rec.Error = "the cell was interrupted"
	case session.StatusDied:
		rec.ExitCode = -1
		if c.Ended != nil {
			rec.Reason, rec.ExitCode, rec.Signal = c.Ended.Reason, c.Ended.ExitCode, c.Ended.Signal
			rec.Error, rec.Usage = c.Ended.Message, c.Ended.Usage
			if rec.Reason == sandbox.ReasonExited && rec.ExitCode == 0 {
				rec.ExitCode = 1 // the interpreter ending is a failure of the cell
			}
		}
	}
	for _, o := range c.Outputs {
		rec.Outputs = append(rec.Outputs, Output{OutputType: o.Type, Name: o.Name, Text: o.Text,
			Data: map[string]any(o.Data), ExecutionCount: o.ExecutionCount, Ename: o.Ename, Evalue: o.Evalue,
			Traceback: o.Traceback})
	}
	ex := &Execution{Record: rec}
	if err := e.collect(ex); err != nil {
		return nil, err
	}
	return ex, nil
}

// collect adds the files the cell created or changed, and the paths it
// removed, to ex. Removals are told only from a complete listing.
func (e *sessionExecutor) collect(ex *Execution) error {
	infos, partial, err := e.s.Files()
	if err != nil {
		return fmt.Errorf("agent: list session files: %w", err)
	}
	if !partial {
		listed := make(map[string]bool, len(infos))
		for _, fi := range infos {
			listed[fi.Path] = true
		}
		for p := range e.seen {
			if !listed[p] {
				delete(e.seen, p)
				ex.Record.Removed = append(ex.Record.Removed, p)
			}
		}
		sort.Strings(ex.Record.Removed)
	}
	for _, fi := range infos {
		f := fileFromSandbox(fi)
		if fi.Kind == sandbox.KindFile {
			data, truncated, err := e.s.Download(fi.Path, e.maxFile)
			if err != nil {
				continue // vanished or unreadable: not reported
			}
			sum := fileSum(fi.Mode, data)
			if old, ok := e.seen[fi.Path]; ok && old == sum {
				continue
			}
			e.seen[fi.Path] = sum
			f.Content, f.Truncated = data, truncated
		} else {
			key := "\x00" + string(fi.Kind) + ":" + fi.LinkTarget
			sum := sha256.Sum256([]byte(key))
			if old, ok := e.seen[fi.Path]; ok && old == sum {
				continue
			}
			e.seen[fi.Path] = sum
		}
		ex.Files = append(ex.Files, f)
		ex.Record.Files = append(ex.Record.Files, FileMeta{Path: f.Path, Kind: f.Kind, Size: f.Size})
	}
	return nil
}

package sandbox

import (
	"context"
	"io"
	"os"
	"time"
)

// Interactive is implemented by runtimes that keep a sandbox alive across
// programs and let the caller talk to a program while it runs: what a
// notebook session needs. One-shot runs need only Runtime.Run.
type Interactive interface {
	// NewSandbox creates an empty sandbox with its workspace and limits.
	NewSandbox(ctx context.Context, spec Spec) (Sandbox, error)
}

// Spec describes a long-lived sandbox. Memory, Processes, OpenFiles and
// WorkspaceBytes apply as in a run (zero: the runtime's default); WallTime
// and CPUTime bound each program started in it, and zero means unbounded
// (the caller decides when a program has run too long).
// OutputBytes does not apply: a program's output is not captured but flows
// through its pipes, and the caller bounds what it keeps (a program whose
// reader does not read waits).
type Spec struct {
	Limits Limits `json:"limits"`
	Files  []File `json:"files,omitempty"`
}

// Program is what to start in a sandbox.
type Program struct {
	Language Language          `json:"language"`
	Code     string            `json:"code"`
	Env      map[string]string `json:"env,omitempty"`
	// Limits, when set, bound this program instead of the sandbox's
	// limits (zero fields take the sandbox's values; WorkspaceBytes is
	// the sandbox's whatever it says): a compile step and the program it
	// makes run in one sandbox under limits of their own.
	Limits *Limits `json:"limits,omitempty"`
}

// Sandbox is a workspace with its limits, in which one program at a time
// runs. Each program gets fresh namespaces and a fresh process tree; only
// the workspace (/work, /tmp, /dev/shm) carries over from one to the next,
// which is how a session restarts its interpreter and keeps its files.
type Sandbox interface {
	// ID identifies the sandbox.
	ID() string
	// Start starts prog. It fails if a program is still running.
	Start(ctx context.Context, prog Program) (Process, error)
	// WriteFile places a file in the workspace (path as in File.Path).
	WriteFile(path string, data []byte, mode os.FileMode) error
	// ReadFile reads a regular file of the workspace, at most max bytes;
	// truncated is set when it is longer. Links are never followed.
	ReadFile(path string, max int64) (data []byte, truncated bool, err error)
	// Files lists the workspace (as Result.Files, every entry "created").
	Files() ([]FileInfo, bool, error)
	// Close kills any running program (its Wait reports ReasonKilled) and
	// removes the sandbox and its files; later calls fail with an error.
	Close() error
}

// SideBySide is implemented by a Sandbox that also runs programs beside
// the one Start runs, and beside each other: what an E2B sandbox needs,
// whose commands run while its code does. Each program started so runs in
// a box of its own (fresh namespaces and process tree, prog's limits or
// the sandbox's, its own to use: the limits are per program, not shared),
// and all of them share the sandbox's workspace (/work, /tmp, /dev/shm).
// Close ends them all.
type SideBySide interface {
	// StartBeside starts prog whatever else runs in the sandbox.
	StartBeside(ctx context.Context, prog Program) (Process, error)
}

// Process is a program running in a Sandbox. Its standard streams are
// pipes the caller must drain (a full pipe blocks the program).
type Process interface {
	Stdin() io.WriteCloser
	Stdout() io.Reader
	Stderr() io.Reader
	// Signal sends sig to the program's process group (as Ctrl-C in a
	// terminal would reach the foreground job). A program a signal ends
	// reports ReasonExited with that Signal, as for any signal it gets; it
	// is an error to signal a program that has ended.
	Signal(sig os.Signal) error
	// Wait blocks until the program ends, is stopped by a limit, or ctx is
	// done (then it is killed), and reports how it ended and what it used;
	// Stdout, Stderr and Files are left empty. Every process of the program
	// is gone when Wait returns.
	Wait(ctx context.Context) *Result
	// Kill stops the program and every process it started, at once; Wait
	// then reports ReasonKilled (as it does for a program its sandbox's
	// Close ended).
	Kill()
	// AwaitingInput reports whether the program's main thread is, at this
	// moment, blocked reading its standard input (the pipe Stdin writes
	// to), as the host's kernel sees it from outside the sandbox. Nothing
	// the program writes can make it true: only the program really waiting
	// for its input can. A session ends a cell on it rather than on the
	// interpreter's word. A runtime that cannot observe it returns an error
	// wrapping errors.ErrUnsupported.
	AwaitingInput() (bool, error)
	// CPUTime is the CPU time (user and system) the program and every
	// process it started have used so far, as the host accounts it; a
	// session bounds a cell's CPU time with it. A runtime that cannot
	// measure it returns an error wrapping errors.ErrUnsupported.
	CPUTime() (time.Duration, error)
}

// Archiver is implemented by a Sandbox that moves files in and out of its
// workspace as tar streams (archive/tar): the way to transfer a tree of
// files, and the only way for a runtime whose workspace the host cannot
// open as a directory. Paths in the stream are relative to the workspace,
// as in File.Path.
type Archiver interface {
	// PutArchive unpacks the tar stream r into the workspace. Only regular
	// files and directories are unpacked: the first entry that is anything
	// else (a link, a device, a FIFO), whose path is absolute or has "..",
	// or that would take what is unpacked past the workspace's size (a
	// sparse file counting at its apparent size) ends it with an error
	// wrapping ErrInvalid; the entries before it stay.
	PutArchive(ctx context.Context, r io.Reader) error
	// GetArchive packs the given paths of the workspace (files, or
	// directories with all they hold; none: the whole workspace) as a tar
	// stream of regular files and directories: links are neither followed
	// nor packed, a file with several names is packed once (its other
	// names are hard-link entries), and all content is at most the
	// workspace's size. A path that does not exist is an error at once;
	// other failures end the stream with an error. The caller closes it.
	GetArchive(ctx context.Context, paths []string) (io.ReadCloser, error)
}

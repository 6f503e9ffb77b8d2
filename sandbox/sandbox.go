// Package sandbox defines what it means to run untrusted code and say exactly
// what happened.
//
// A Request names a language, the code, its standard input, the files to place
// in the run's workspace, environment variables and Limits. A Runtime runs it
// in isolation and returns a Result: the captured output (each stream capped,
// with a truncation flag), the exit code or signal, one Reason from a closed
// set that says why the run ended, the resources it used, and the files it
// created or changed in its workspace.
//
// Runtimes live in sub-packages: sandbox/linux is the embedded default built
// on Linux namespaces, cgroups and seccomp. Every runtime passes the same
// conformance and security suite (sandbox/sandboxtest), one-shot runs and,
// for a runtime that keeps sandboxes alive (Interactive), long-lived ones.
// Helpers that only some runtimes need live beside it: sandbox/hostdir for a
// runtime whose workspace is a host directory (files in and out, tar
// streams), sandbox/bootstrap for one that starts interpreters itself and
// hands them the code over a pipe.
//
// Nothing here knows about models, sessions or cells: the sandbox only runs
// "this code, with these limits" and reports the outcome.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Runtime runs requests in isolated sandboxes. Implementations are safe for
// concurrent use; each Run gets a fresh sandbox that no other run can see.
type Runtime interface {
	// Name identifies the runtime ("linux", "gvisor", "docker").
	Name() string
	// Run validates req, runs it in a fresh sandbox and reports the outcome.
	// Invalid requests are rejected with an error wrapping ErrInvalid before
	// anything runs. Failures to set up the sandbox are reported as a Result
	// with Reason ReasonSetupError and a nil error, so that callers record them
	// like any other outcome; a non-nil error means no result could be made.
	Run(ctx context.Context, req Request) (*Result, error)
	// Close stops background work (pools) and releases resources.
	Close() error
}

// ErrInvalid is wrapped by every error that rejects a request as malformed.
var ErrInvalid = errors.New("invalid request")

// ErrUnavailable is wrapped by the error that refuses a request in a
// language whose toolchain this host lacks (with ErrInvalid: the request
// cannot be run here); the error says what is missing.
var ErrUnavailable = errors.New("language unavailable")

// ErrFileKind is wrapped by the error that refuses a workspace file
// operation because of what is at the path: reading a directory as a file,
// writing over a directory, making a directory where a file is. The
// request, not the sandbox, is at fault (the HTTP API answers 409).
var ErrFileKind = errors.New("wrong kind of file")

// Request is one program to run.
type Request struct {
	// Language selects the interpreter: see Languages.
	Language Language `json:"language"`
	// Code is the program text.
	Code string `json:"code"`
	// Name is the file name the code runs as, for the program's own name
	// (sys.argv[0], $0) and its error messages and tracebacks: a plain file
	// name such as "analysis.py", which runs as /work/analysis.py. Empty means
	// the interpreter's default (Interpreter.Script: /work/main.py, ...). The
	// code is not written to the workspace under this name.
	Name string `json:"name,omitempty"`
	// Stdin is fed to the program's standard input, which is then closed.
	Stdin []byte `json:"stdin,omitempty"`
	// Files are placed in the workspace (the program's working directory)
	// before it starts.
	Files []File `json:"files,omitempty"`
	// Env adds environment variables to the sandbox's clean environment.
	Env map[string]string `json:"env,omitempty"`
	// Limits bound the run; zero fields take DefaultLimits' values.
	Limits Limits `json:"limits"`
	// FileContents asks for the content of output files up to this many bytes
	// each (0: metadata only). All files' content together is at most the
	// workspace's size, and a file with several names is read once (see
	// FileInfo.SameFileAs), so that sparse files and hard links cannot amplify it.
	FileContents int64 `json:"file_contents,omitempty"`
	// CompileArgs are extra arguments for a compiled language's compiler
	// (such as "-std=c++20" or "-lcrypto"); a language without a compile
	// step refuses them.
	CompileArgs []string `json:"compile_args,omitempty"`
	// CompileLimits bound a compiled language's compile step; zero fields
	// take DefaultCompileLimits' values. Limits bound the run step.
	CompileLimits Limits `json:"compile_limits,omitzero"`
}

// File is an input file for the workspace.
type File struct {
	// Path is relative to the workspace, with '/' separators; no "..", not absolute.
	Path string `json:"path"`
	// Content is the file's bytes.
	Content []byte `json:"content"`
	// Mode is the permission bits; zero means 0644.
	Mode fs.FileMode `json:"mode,omitempty"`
}

// Limits bound the resources of one run. A zero field means "the default".
// In JSON, durations are strings such as "10s" (see json.go).
type Limits struct {
	WallTime       time.Duration // elapsed time from start to end
	CPUTime        time.Duration // user+system CPU of all processes
	Memory         int64         // bytes of memory (RSS, page cache, tmpfs) for all processes
	Processes      int           // processes and threads alive at once
	OutputBytes    int64         // bytes captured per stream before the run is stopped
	WorkspaceBytes int64         // bytes writable in /work, /tmp and /dev/shm together
	OpenFiles      int           // file descriptors per process
}

// Usage is what a run consumed. In JSON, times are in milliseconds.
type Usage struct {
	Wall       time.Duration
	CPUUser    time.Duration
	CPUSystem  time.Duration
	PeakMemory int64 // bytes, of the whole sandbox (the interpreter included)
}

// CPU is user plus system time.
func (u Usage) CPU() time.Duration { return u.CPUUser + u.CPUSystem }

// Reason says why a run ended. The set is closed: callers may switch on it.
type Reason string

const (
	ReasonExited      Reason = "exited"       // the program ended by itself (any exit code) or by its own signal
	ReasonTimeout     Reason = "timeout"      // the wall-time limit was reached
	ReasonCPULimit    Reason = "cpu_limit"    // the CPU-time limit was reached
	ReasonMemoryLimit Reason = "memory_limit" // the kernel killed a process for exceeding the memory limit
	ReasonOutputLimit Reason = "output_limit" // a stream exceeded the output limit
	ReasonKilled      Reason = "killed"       // stopped from outside: context cancelled or runtime closed
	ReasonSetupError  Reason = "setup_error"  // the sandbox could not be prepared; the code did not run
	// ReasonCompileError: a compiled language's compile step did not make
	// a program (the compiler failed, or reached a limit: see
	// Result.Compile); the program did not run.
	ReasonCompileError Reason = "compile_error"
)

// Result is exactly what happened to a run.
type Result struct {
	// Stdout and Stderr hold the bytes the program wrote (in JSON, invalid
	// UTF-8 is replaced).
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	// ExitCode is the program's exit status, or -1 when a signal ended it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the program ("SIGKILL"), if any.
	Signal string `json:"signal,omitempty"`
	Reason Reason `json:"reason"`
	// Error explains a setup error, or adds detail to another reason.
	Error string `json:"error,omitempty"`
	Usage Usage  `json:"usage"`
	// Files lists what the run created or changed in its workspace.
	Files []FileInfo `json:"files,omitempty"`
	// FilesTruncated is set when there were more changed files than reported.
	FilesTruncated bool `json:"files_truncated,omitempty"`
	// Removed lists, in path order, the input files (Request.Files, as
	// cleaned by CleanPath) the run removed: no longer in the workspace
	// under their path. An input replaced by another kind of entry is in
	// Files instead.
	Removed []string `json:"removed,omitempty"`
	// Compile is the compile step's own result, for a compiled language
	// (its Stdout and Stderr hold the compiler's diagnostics).
	Compile *Result `json:"compile,omitempty"`
	// Runtime names the runtime that ran the request; Pooled tells whether a
	// pre-started sandbox served it.
	Runtime string `json:"runtime"`
	Pooled  bool   `json:"pooled"`
}

// OK reports whether the program ran to completion with exit code 0.
func (r *Result) OK() bool { return r.Reason == ReasonExited && r.ExitCode == 0 }

// Summary is a one-line human description of the outcome.
func (r *Result) Summary() string {
	switch r.Reason {
	case ReasonExited:
		if r.Signal != "" {
			return "terminated by " + r.Signal
		}
		return fmt.Sprintf("exited with code %d", r.ExitCode)
	case ReasonSetupError:
		return "sandbox setup failed: " + r.Error
	default:
		s := string(r.Reason)
		if r.Error != "" {
			s += ": " + r.Error
		}
		return s
	}
}

// FileKind is the type of a workspace entry.
type FileKind string

const (
	KindFile    FileKind = "file"
	KindDir     FileKind = "dir"
	KindSymlink FileKind = "symlink"
	KindOther   FileKind = "other" // fifo, socket, device
)

// FileInfo describes a file the run created or changed. Symbolic links are
// reported as links (with their target), never followed.
type FileInfo struct {
	Path       string      `json:"path"` // relative to the workspace, '/'-separated
	Kind       FileKind    `json:"kind"`
	Size       int64       `json:"size"` // apparent size: a sparse file's holes count
	Mode       fs.FileMode `json:"mode"`
	LinkTarget string      `json:"link_target,omitempty"`
	Created    bool        `json:"created"` // false: an input file that changed
	// SameFileAs names the entry, earlier in path order, that is the same
	// regular file under another name (a hard link): its content is given
	// there only, once.
	SameFileAs string `json:"same_file_as,omitempty"`
	// Content holds up to Request.FileContents bytes of a regular file, and
	// all files' content together is at most the workspace's size;
	// ContentTruncated is set when the file is larger than it was given.
	Content          []byte `json:"content,omitempty"`
	ContentTruncated bool   `json:"content_truncated,omitempty"`
}

// MaxReportedFiles bounds Result.Files; FilesTruncated tells when more changed.
const MaxReportedFiles = 1000

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

type execFlags struct {
	lang        string
	compileArgs []string
	code        string
	stdin       string
	files       []string
	env         []string
	out         string
	outLimit    string
	json        bool
	wall        time.Duration
	cpu         time.Duration
	memory      string
	procs       int
	output      string
	workspace   string
	openFiles   int
}

// limitFlags are exec's limit flags: they override the configuration's
// limits (limits.*).
func (f *execFlags) limitFlags() []binding {
	return []binding{
		{"timeout", "limits.timeout", &f.wall},
		{"cpu-time", "limits.cpu_time", &f.cpu},
		{"memory", "limits.memory", &f.memory},
		{"processes", "limits.processes", &f.procs},
		{"output-limit", "limits.output_limit", &f.output},
		{"workspace-size", "limits.workspace_size", &f.workspace},
		{"open-files", "limits.open_files", &f.openFiles},
	}
}

func newExecCmd(g *globalFlags) *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "exec [FILE | -]",
		Short: "Run a program once in a fresh sandbox",
		Long: `Run a program once in a fresh sandbox and report what happened.

The code comes from -c, from FILE, or from standard input ("-" or no argument).
The language is --lang, or guessed from FILE's extension (.py, .sh, .js, .c,
.cpp, .go, .java, .rs, .ts, .rb, .php, .pl, .lua, .R). A compiled language
is compiled, then run, in the same sandbox; --compile-arg passes the compiler
more arguments (C++ is -std=c++17 unless one names another standard).
The program's standard input is --stdin FILE ("-" for this command's own, when
the code does not come from it).

Files: --file LOCAL[:REMOTE] uploads a regular file. A FIFO, a device or a
directory is refused, and so is a symbolic link that leads out of the
directory it is in (a link to /etc/passwd that an earlier run left behind):
to upload the file a link points to, name that file. All uploads together
must fit in the workspace.

--out DIR saves the files the run created or changed; DIR is made if missing,
and checked before the run (a file, or a directory that cannot be written,
stops coderun before anything runs). Only regular files and directories are
saved: symbolic links, FIFOs, sockets and devices are listed as skipped,
never recreated on this host. A file with several names (hard links) is
saved once, its other names made hard links to it; sparse files stay sparse.
At most --out-limit bytes are saved (default: the workspace size), each file
and all together; a file beyond it, or one that came back cut short, is not
saved and the command fails, naming it.

Exit status: the program's own; 128+N if signal N ended it; 124 for a time
or CPU limit; 137 for the memory limit; 141 for the output limit; 125 if the
sandbox could not be set up; 126 if the program did not compile (the
compiler's diagnostics are on standard error); 2 for bad input (nothing ran); 1 if the program
succeeded but some of its files could not be saved under --out.`,
		Example: `  coderun exec -c 'print(sum([120, 80, 200, 150]) / 4)'
  coderun exec --lang bash -c 'ls -la; df -h /work'
  coderun exec analysis.py --file data.csv --out results/ --memory 256MiB --timeout 10s
  echo 'console.log(6*7)' | coderun exec --lang node --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load(g.runtimeFlags(), f.limitFlags())
			if err != nil {
				return err
			}
			return runExec(cmd.Context(), cfg, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.lang, "lang", "l", "", "language: "+strings.Join(language.Names(), ", ")+" (default: from FILE's extension, else python)")
	fl.StringArrayVar(&f.compileArgs, "compile-arg", nil, "extra argument for a compiled language's compiler, such as -std=c++20 (repeatable)")
	fl.StringVarP(&f.code, "code", "c", "", "the program's code")
	fl.StringVar(&f.stdin, "stdin", "", "file fed to the program's standard input (- for this command's own)")
	fl.StringArrayVarP(&f.files, "file", "f", nil, "upload a file: LOCAL[:REMOTE], REMOTE relative to the workspace (repeatable)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	fl.StringVar(&f.out, "out", "", "save files the run created or changed into this directory (regular files and directories only)")
	fl.StringVar(&f.outLimit, "out-limit", "", "most bytes --out saves, each file and all together (default: the workspace size)")
	fl.BoolVar(&f.json, "json", false, "print the full result as JSON")
	d := sandbox.DefaultLimits
	fl.DurationVarP(&f.wall, "timeout", "t", d.WallTime, "wall-time limit")
	fl.DurationVar(&f.cpu, "cpu-time", d.CPUTime, "CPU-time limit (all processes)")
	fl.StringVarP(&f.memory, "memory", "m", sandbox.FormatBytes(d.Memory), "memory limit (e.g. 256MiB, 1GB)")
	fl.IntVar(&f.procs, "processes", d.Processes, "processes and threads alive at once")
	fl.StringVar(&f.output, "output-limit", sandbox.FormatBytes(d.OutputBytes), "bytes captured per output stream; more stops the run")
	fl.StringVar(&f.workspace, "workspace-size", sandbox.FormatBytes(d.WorkspaceBytes), "bytes writable in /work, /tmp and /dev/shm together")
	fl.IntVar(&f.openFiles, "open-files", d.OpenFiles, "open file descriptors per process")
	return cmd
}

// request turns the flags into a sandbox.Request with limits l, reading
// code, stdin and uploads. Errors here mean nothing ran.
func (f *execFlags) request(args []string, stdin io.Reader, l sandbox.Limits) (sandbox.Request, error) {
	var req sandbox.Request
	codeFromStdin := false
	switch {
	case f.code != "" && len(args) > 0:
		return req, usagef("give the code with -c or as FILE, not both")
	case f.code != "":
		req.Code = f.code
	case len(args) == 1 && args[0] != "-":
		code, err := readProgram(args[0])
		if err != nil {
			return req, usagef("read program: %v", err)
		}
		req.Code = code
		// Tracebacks and $0 name the user's file (run as /work/NAME), unless
		// its name cannot be a program's name.
		if name := filepath.Base(args[0]); sandbox.ValidateName(name) == nil {
			req.Name = name
		}
	default:
		if isTerminal(os.Stdin) {
			return req, usagef("no code: give -c CODE, a FILE, or pipe the code to standard input")
		}
		data, err := io.ReadAll(io.LimitReader(stdin, sandbox.MaxCodeBytes+1))
		if err != nil {
			return req, fmt.Errorf("read code from standard input: %w", err)
		}
		req.Code, codeFromStdin = string(data), true
	}
	req.Language = sandbox.Language(f.lang)
	if l, ok := language.Parse(f.lang); ok {
		req.Language = l
	}
	req.CompileArgs = f.compileArgs
	if f.lang == "" {
		req.Language = sandbox.Python
		if len(args) == 1 && args[0] != "-" {
			lang, err := languageOf(args[0], req.Code)
			if err != nil {
				return req, err
			}
			req.Language = lang
		}
	}
	if l.WallTime <= 0 || l.CPUTime <= 0 || l.Processes <= 0 || l.OpenFiles <= 0 || l.Memory <= 0 || l.OutputBytes <= 0 || l.WorkspaceBytes <= 0 {
		return req, usagef("limits must be positive")
	}
	req.Limits = l
	var err error
	switch f.stdin {
	case "":
	case "-":
		if codeFromStdin {
			return req, usagef("--stdin -: standard input already carries the code")
		}
		if req.Stdin, err = readBounded(stdin, l.WorkspaceBytes); err != nil {
			return req, usagef("--stdin -: %v", err)
		}
	default:
		in, err := os.Open(f.stdin)
		if err != nil {
			return req, usagef("--stdin: %v", unwrapPath(err))
		}
		defer in.Close()
		if fi, err := in.Stat(); err == nil && fi.IsDir() {
			return req, usagef("--stdin %s: is a directory", f.stdin)
		}
		if req.Stdin, err = readBounded(in, l.WorkspaceBytes); err != nil {
			return req, usagef("--stdin %s: %v", f.stdin, err)
		}
	}
	if req.Files, err = readUploads(f.files, l.WorkspaceBytes); err != nil {
		return req, err
	}
	if req.Env, err = parseKV(f.env, "--env"); err != nil {
		return req, err
	}
	if f.out != "" {
		if req.FileContents, err = f.outBytes(l); err != nil {
			return req, err
		}
	}
	return req, nil
}

// outBytes is the most --out saves, each file and all together: --out-limit,
// or the workspace's size (all a run could honestly have written).
func (f *execFlags) outBytes(l sandbox.Limits) (int64, error) {
	if f.outLimit == "" {
		return l.WorkspaceBytes, nil
	}
	n, err := sandbox.ParseBytes(f.outLimit)
	if err != nil {
		return 0, usagef("--out-limit: %v", err)
	}
	if n <= 0 {
		return 0, usagef("--out-limit must be positive")
	}
	return n, nil
}

func runExec(ctx context.Context, cfg *app.Config, f *execFlags, args []string, stdout, stderr io.Writer) error {
	req, err := f.request(args, os.Stdin, cfg.Limits)
	if err != nil {
		return err
	}
	if err := toolchain.Validate(&req); err != nil {
		return err
	}
	if f.out != "" {
		if err := checkOutDir(f.out); err != nil {
			return err
		}
	}
	rt, err := openRuntime(cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := rt.Run(ctx, req)
	if err != nil {
		return err
	}
	var lost error
	if f.out != "" {
		if err := saveOut(f.out, res.Files, req.FileContents, stderr); err != nil {
			lost = fmt.Errorf("--out %s: files not saved:\n%w", f.out, err)
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		io.WriteString(stdout, res.Stdout)
		io.WriteString(stderr, res.Stderr)
		for _, s := range []struct {
			name string
			on   bool
		}{{"stdout", res.StdoutTruncated}, {"stderr", res.StderrTruncated}} {
			if s.on {
				fmt.Fprintf(stderr, "coderun: %s truncated at %s\n", s.name, sandbox.FormatBytes(req.Limits.OutputBytes))
			}
		}
		if !(res.Reason == sandbox.ReasonExited && res.Signal == "") {
			fmt.Fprintln(stderr, "coderun:", res.Summary())
		}
	}
	if code := exitCode(res); code != 0 {
		if lost != nil {
			fmt.Fprintln(stderr, "coderun:", lost)
		}
		return exitError{code}
	}
	return lost
}

// exitCode mirrors the run's outcome as a process exit status.
func exitCode(res *sandbox.Result) int {
	switch res.Reason {
	case sandbox.ReasonExited:
		if res.Signal != "" {
			return 128 + int(unix.SignalNum(res.Signal))
		}
		return res.ExitCode
	case sandbox.ReasonTimeout, sandbox.ReasonCPULimit:
		return exitTimeout
	case sandbox.ReasonMemoryLimit:
		return exitMemory
	case sandbox.ReasonOutputLimit:
		return exitOutput
	case sandbox.ReasonKilled:
		return exitKilled
	case sandbox.ReasonCompileError:
		return exitCompile
	default:
		return exitSetup
	}
}

// saveFiles saves files (a run's, read back from the store) under dir as
// exec --out does, at most a default workspace's size; entries left out
// (links, special files) are named in the error with those not saved.
func saveFiles(dir string, files []sandbox.FileInfo) error {
	var notes strings.Builder
	err := saveOut(dir, files, sandbox.DefaultLimits.WorkspaceBytes, &notes)
	if notes.Len() > 0 {
		err = errors.Join(errors.New(strings.TrimSpace(notes.String())), err)
	}
	return err
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// languageOf picks a program file's language by its extension, or by its
// #! line when it has none; an extension that names no language coderun runs
// is refused rather than run as Python.
func languageOf(path, code string) (sandbox.Language, error) {
	lang, ok := language.OfFile(path, code)
	if !ok {
		return "", usagef("%s: coderun does not know what language %q files are in; name it with --lang (%s)",
			path, strings.ToLower(filepath.Ext(path)), strings.Join(languageNames(), ", "))
	}
	return lang, nil
}

// languageNames lists the languages --lang takes.
func languageNames() []string {
	var names []string
	return append(names, language.Names()...)
}

// readBounded reads r to its end, refusing more than max bytes (stdin fed to
// a program is held in memory until it is written to the sandbox).
func readBounded(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("more than %s (the workspace size; raise it with --workspace-size)", sandbox.FormatBytes(max))
	}
	return data, nil
}

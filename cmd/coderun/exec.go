package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

type execFlags struct {
	lang      string
	code      string
	stdin     string
	files     []string
	env       []string
	out       string
	json      bool
	wall      time.Duration
	cpu       time.Duration
	memory    string
	procs     int
	output    string
	workspace string
	openFiles int
}

func newExecCmd(g *globalFlags) *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "exec [FILE | -]",
		Short: "Run a program once in a fresh sandbox",
		Long: `Run a program once in a fresh sandbox and report what happened.

The code comes from -c, from FILE, or from standard input ("-" or no argument).
The language is --lang, or guessed from FILE's extension (.py, .sh, .js).
The program's standard input is --stdin FILE ("-" for this command's own, when
the code does not come from it).

Exit status: the program's own; 128+N if signal N ended it; 124 for a time
or CPU limit; 137 for the memory limit; 141 for the output limit; 125 if the
sandbox could not be set up; 2 for bad input (nothing ran).`,
		Example: `  coderun exec -c 'print(sum([120, 80, 200, 150]) / 4)'
  coderun exec --lang bash -c 'ls -la; df -h /work'
  coderun exec analysis.py --file data.csv --out results/ --memory 256MiB --timeout 10s
  echo 'console.log(6*7)' | coderun exec --lang node --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd.Context(), g, f, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.lang, "lang", "l", "", "language: python, bash, node (default: from FILE's extension, else python)")
	fl.StringVarP(&f.code, "code", "c", "", "the program's code")
	fl.StringVar(&f.stdin, "stdin", "", "file fed to the program's standard input (- for this command's own)")
	fl.StringArrayVarP(&f.files, "file", "f", nil, "upload a file: LOCAL[:REMOTE], REMOTE relative to the workspace (repeatable)")
	fl.StringArrayVarP(&f.env, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	fl.StringVarP(&f.out, "out", "o", "", "copy files the run created or changed into this directory")
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

// request turns the flags into a sandbox.Request, reading code, stdin and
// uploads. Errors here mean nothing ran.
func (f *execFlags) request(args []string, stdin io.Reader) (sandbox.Request, error) {
	var req sandbox.Request
	codeFromStdin := false
	switch {
	case f.code != "" && len(args) > 0:
		return req, usagef("give the code with -c or as FILE, not both")
	case f.code != "":
		req.Code = f.code
	case len(args) == 1 && args[0] != "-":
		data, err := os.ReadFile(args[0])
		if err != nil {
			return req, usagef("read program: %v", err)
		}
		req.Code = string(data)
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
	if f.lang == "" {
		req.Language = sandbox.Python
		if len(args) == 1 {
			switch strings.ToLower(filepath.Ext(args[0])) {
			case ".sh", ".bash":
				req.Language = sandbox.Bash
			case ".js", ".cjs":
				req.Language = sandbox.Node
			}
		}
	}
	switch f.stdin {
	case "":
	case "-":
		if codeFromStdin {
			return req, usagef("--stdin -: standard input already carries the code")
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return req, fmt.Errorf("read standard input: %w", err)
		}
		req.Stdin = data
	default:
		data, err := os.ReadFile(f.stdin)
		if err != nil {
			return req, usagef("--stdin: %v", err)
		}
		req.Stdin = data
	}
	var err error
	if req.Files, err = readUploads(f.files); err != nil {
		return req, err
	}
	if req.Env, err = parseKV(f.env, "--env"); err != nil {
		return req, err
	}
	l := sandbox.Limits{WallTime: f.wall, CPUTime: f.cpu, Processes: f.procs, OpenFiles: f.openFiles}
	for _, s := range []struct {
		flag, value string
		dst         *int64
	}{{"--memory", f.memory, &l.Memory}, {"--output-limit", f.output, &l.OutputBytes}, {"--workspace-size", f.workspace, &l.WorkspaceBytes}} {
		n, err := sandbox.ParseBytes(s.value)
		if err != nil {
			return req, usagef("%s: %v", s.flag, err)
		}
		*s.dst = n
	}
	if l.WallTime <= 0 || l.CPUTime <= 0 || l.Processes <= 0 || l.OpenFiles <= 0 || l.Memory <= 0 || l.OutputBytes <= 0 || l.WorkspaceBytes <= 0 {
		return req, usagef("limits must be positive")
	}
	req.Limits = l
	if f.out != "" {
		req.FileContents = l.WorkspaceBytes
	}
	return req, nil
}

func runExec(ctx context.Context, g *globalFlags, f *execFlags, args []string, stdout, stderr io.Writer) error {
	req, err := f.request(args, os.Stdin)
	if err != nil {
		return err
	}
	if _, err := req.Validate(sandbox.DefaultLimits); err != nil {
		return err
	}
	rt, err := g.open()
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
	if f.out != "" {
		if err := saveFiles(f.out, res.Files); err != nil {
			fmt.Fprintln(stderr, "coderun: --out:", err)
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
		return exitError{code}
	}
	return nil
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
	default:
		return exitSetup
	}
}

// saveFiles writes the run's files under dir. Paths come from the sandbox,
// so they are checked again and written through an os.Root; links are
// recreated as links only when they stay inside dir, never followed.
func saveFiles(dir string, files []sandbox.FileInfo) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []string
	for _, fi := range files {
		p, err := sandbox.CleanPath(fi.Path)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if d := filepath.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		switch fi.Kind {
		case sandbox.KindDir:
			err = root.MkdirAll(p, 0o755)
		case sandbox.KindFile:
			if fi.ContentTruncated {
				errs = append(errs, p+": larger than the workspace limit, saved truncated")
			}
			err = root.WriteFile(p, fi.Content, fi.Mode.Perm()|0o200)
		case sandbox.KindSymlink:
			_ = root.Remove(p)
			err = root.Symlink(fi.LinkTarget, p)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

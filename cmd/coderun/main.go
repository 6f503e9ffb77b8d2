// Command coderun runs untrusted, model-written code in a sandbox and says
// exactly what happened.
//
// The command is a thin layer over the library: flags override the
// configuration (package app: file < environment < flags), app's
// constructors build the runtime, the store, the model and the agent, and
// what they return is rendered.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/store"
	"github.com/spf13/cobra"
)

// Exit codes: one table for every command. A command that runs a program
// (exec) mirrors the program's own status; the others are coderun's:
//
//	0    success
//	1    the command ran and its answer is no: ask ended without an answer,
//	     doctor found a required layer missing, a notebook cell failed
//	2    bad flags, arguments, input or configuration (an unknown flag or
//	     subcommand, a missing argument, an unknown run id, no model or API
//	     key, a bad configuration file): nothing ran
//	3    ask: the run is paused, awaiting a person's approval
//	124  a wall-time or CPU-time limit (as timeout(1))
//	125  the sandbox could not be set up (not root, an isolation layer
//	     missing, the runtime failed to start)
//	130  cancelled (Ctrl-C)
//	137  the memory limit (the OOM killer's SIGKILL)
//	141  the output limit (as a broken pipe)
//	128+N  exec: the program was killed by signal N
const (
	exitFailure = 1
	exitUsage   = 2   // bad flags or input: nothing ran
	exitSetup   = 125 // the sandbox could not be set up
	exitTimeout = 124 // wall or CPU time limit, as timeout(1)
	exitMemory  = 137 // memory limit (the OOM killer's SIGKILL)
	exitOutput  = 141 // output limit, as a broken pipe
	exitKilled  = 130 // cancelled (Ctrl-C)
	exitCompile = 126 // the program did not compile
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// exitError carries an exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func run(args []string) int {
	root := newRootCmd()
	if c, _, err := root.Find(args); err == nil && oneShot[c.CommandPath()] {
		tuneForOneShot(os.Getenv)
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "coderun:", err)
	return errorExitCode(err)
}

// oneShot are the commands that run one program and exit.
var oneShot = map[string]bool{"coderun exec": true}

// tuneForOneShot sets the Go runtime up for a command that runs one
// program and exits, whose own work is waiting on the sandbox's pipes:
//
//   - one P: with one per CPU, every goroutine woken by a pipe or a timer
//     could wake another thread, which spun looking for work before it
//     slept again, each a context switch, dear in a paravirtualized guest;
//   - the collector's first cycle at three times the live heap, not twice:
//     the package initialisers leave about 2 MiB, the default target of
//     4 MiB was passed once per exec, and that cycle (two mark workers,
//     the whole heap scanned) bought nothing before the process exits.
//     A large upload, held in memory for the run, grows the heap to three
//     times itself at most.
//
// `coderun exec -c 'print(1)'`, 30 runs interleaved with the default and
// with python3 -c: 61.7 → 56.6 ms of CPU per run, all its processes
// (python3 -c: 19.9 ms), median, on a loaded 2-CPU PVM guest. GOMAXPROCS
// or GOGC in the environment win.
func tuneForOneShot(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
}

// errorExitCode is the status for an error a command returned (see the table).
func errorExitCode(err error) int {
	switch {
	case errors.Is(err, sandbox.ErrInvalid), isUsage(err), errors.Is(err, llm.ErrAuth), errors.Is(err, store.ErrNotFound),
		errors.Is(err, app.ErrConfig):
		return exitUsage
	case isSetup(err):
		return exitSetup
	case errors.Is(err, context.Canceled):
		return exitKilled
	}
	return exitFailure
}

// usageError marks errors in how the command was called.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// setupError marks a runtime that could not be started.
type setupError struct{ error }

func (e setupError) Unwrap() error { return e.error }

func isSetup(err error) bool {
	var s setupError
	return errors.As(err, &s)
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "coderun",
		Short:         "Run untrusted, model-written code in a sandbox",
		Long:          "coderun runs code in an isolated sandbox (Linux namespaces, seccomp, cgroups) and reports\nits output, exit status, resource usage and files, so that an agent can act on real results.",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.SetVersionTemplate("coderun {{.Version}}\n")
	root.AddCommand(newExecCmd(g), newDoctorCmd(g), newBenchCmd())
	root.AddCommand(newEvalCmd(g))
	root.AddCommand(newAskCmd(g), newRunsCmd(g), newReviewCmd(g))
	root.AddCommand(newReplCmd(g), newNotebookCmd(g))
	root.AddCommand(newMCPCmd(g))
	root.AddCommand(newVersionCmd(), newConfigCmd(g))
	root.AddCommand(newServeCmd(g))
	root.AddCommand(newImageCmd())
	g.registerConfig(root)
	// The runtime's flags belong to the commands that start sandboxes, and
	// only their help shows them.
	for _, path := range runtimeCommands {
		c, _, err := root.Find(path)
		if err != nil || c.Name() != path[len(path)-1] {
			panic(fmt.Sprintf("coderun: no command %v", path))
		}
		g.register(c)
	}
	usageErrors(root)
	return root
}

// runtimeCommands are the commands that start sandboxes.
var runtimeCommands = [][]string{
	{"exec"}, {"doctor"}, {"eval"}, {"ask"}, {"repl"}, {"notebook", "run"},
	{"runs", "resume"}, {"review", "approve"}, {"review", "reject"},
	{"mcp"}, {"serve"},
}

// usageErrors makes every way of calling a command wrongly a usage error
// (exit 2): wrong arguments, and an unknown or missing subcommand of a
// group, which cobra would otherwise answer with its help and status 0.
func usageErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		usageErrors(sub)
	}
	if c.HasAvailableSubCommands() && !c.Runnable() {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			cmd.SuggestionsMinimumDistance = 2
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", s[0])
			}
			return usageError{fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath())}
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		}
		return
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{fmt.Errorf("%s: %w (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath())}
			}
			return nil
		}
	}
}

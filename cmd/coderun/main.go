// Command coderun runs untrusted, model-written code in a sandbox and says
// exactly what happened.
//
// The command is a thin layer over the library: flags become a
// sandbox.Request, the runtime runs it, and the Result is rendered.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/coderun/coderun/sandbox"
	"github.com/spf13/cobra"
)

// Exit codes of coderun itself (a run's own exit code is mirrored otherwise).
const (
	exitUsage   = 2   // bad flags or input: nothing ran
	exitSetup   = 125 // the sandbox could not be set up
	exitTimeout = 124 // wall or CPU time limit, as timeout(1)
	exitMemory  = 137 // memory limit (the OOM killer's SIGKILL)
	exitOutput  = 141 // output limit, as a broken pipe
	exitKilled  = 130 // cancelled (Ctrl-C)
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// exitError carries an exit code out of a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, sandbox.ErrInvalid), isUsage(err):
		fmt.Fprintln(os.Stderr, "coderun:", err)
		return exitUsage
	default:
		fmt.Fprintln(os.Stderr, "coderun:", err)
		return 1
	}
}

// usageError marks errors in how the command was called.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "coderun",
		Short:         "Run untrusted, model-written code in a sandbox",
		Long:          "coderun runs code in an isolated sandbox (Linux namespaces, seccomp, cgroups) and reports\nits output, exit status, resource usage and files, so that an agent can act on real results.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	g.register(root)
	root.AddCommand(newExecCmd(g), newDoctorCmd(g), newBenchCmd())
	root.AddCommand(newEvalCmd(g))
	root.AddCommand(newAskCmd(g), newRunsCmd(g), newReviewCmd(g))
	root.AddCommand(newReplCmd(g), newNotebookCmd(g))
	return root
}

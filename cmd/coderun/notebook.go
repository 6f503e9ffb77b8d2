package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coderun/coderun/internal/plural"
	"github.com/coderun/coderun/jupyter"
	"github.com/coderun/coderun/session"
	"github.com/spf13/cobra"
)

type notebookFlags struct {
	sessionFlags
	out         string
	stopOnError bool
	skipRetried bool
	quiet       bool
}

func newNotebookCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notebook",
		Short: "Work with Jupyter notebooks",
	}
	f := &notebookFlags{}
	runCmd := &cobra.Command{
		Use:   "run FILE.ipynb",
		Short: "Execute a notebook in a sandboxed session and write the executed notebook",
		Long: `Execute the code cells of a Jupyter notebook (nbformat 4), in order, in one
sandboxed session, and write the notebook with their outputs. Markdown and raw
cells and all metadata are kept. The language comes from the notebook's
kernelspec (python or bash) unless --lang says otherwise.

Every cell runs, failed or not, unless --stop-on-error. The output goes to -o
(default: FILE with .ipynb replaced by .out.ipynb; "-" for standard output);
progress goes to standard error. Exit status: 0 when every cell ended ok, 1 when
one did not (the notebook is written either way), 130 when interrupted.`,
		Example: `  coderun notebook run analysis.ipynb -o analysis.out.ipynb
  coderun notebook run report.ipynb --file data.csv --timeout 2m --memory 1GiB`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNotebook(cmd.Context(), g, f, args[0], cmd.ErrOrStderr())
		},
	}
	f.register(runCmd, "language (default: the notebook's kernel language)")
	fl := runCmd.Flags()
	fl.StringVarP(&f.out, "output", "o", "", "where to write the executed notebook")
	fl.BoolVar(&f.stopOnError, "stop-on-error", false, "stop at the first cell that does not end ok")
	fl.BoolVar(&f.skipRetried, "skip-retried", false, "skip cells that a later cell retried (notebooks exported by coderun)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress on standard error")
	cmd.AddCommand(runCmd)
	return cmd
}

func runNotebook(ctx context.Context, g *globalFlags, f *notebookFlags, path string, stderr io.Writer) error {
	in, err := os.Open(path)
	if err != nil {
		return usagef("%v", err)
	}
	nb, err := jupyter.Read(in)
	in.Close()
	if err != nil {
		// "nb.ipynb: line 4, column 1: ...": where, and what was expected.
		return fmt.Errorf("%s: %w", path, err)
	}
	c, err := g.load(g.runtimeFlags(), f.flags())
	if err != nil {
		return err
	}
	cfg, err := f.config(c, nb.Language())
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = strings.TrimSuffix(path, ".ipynb") + ".out.ipynb"
	}
	if err := checkOutputFile("--output", out); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, closeAll, err := openSession(ctx, c, cfg)
	if err != nil {
		return err
	}
	defer closeAll()

	code := 0
	for _, c := range nb.Cells {
		if c.Type == "code" {
			code++
		}
	}
	done, failed := 0, 0
	start := time.Now()
	executed, err := session.Replay(ctx, s, nb, session.ReplayOptions{
		StopOnError: f.stopOnError,
		SkipRetried: f.skipRetried,
		OnCell: func(i int, c *session.Cell) {
			done++
			if c.Status != session.StatusOK {
				failed++
			}
			if f.quiet {
				return
			}
			line := fmt.Sprintf("cell %d (%d/%d): %s in %s", i+1, done, code, c.Status, c.Duration.Round(time.Millisecond))
			if e := c.Error(); e != nil {
				line += ": " + e.Ename + ": " + firstLine(e.Evalue)
			}
			if c.Restarted {
				line += " (interpreter restarted)"
			}
			fmt.Fprintln(stderr, line)
		},
	})
	if executed != nil {
		if werr := saveNotebook(executed, out); werr != nil {
			return errOutputLost("--output", out, werr)
		}
		if !f.quiet && out != "-" {
			fmt.Fprintf(stderr, "wrote %s: %s executed, %d not ok, in %s\n", out, plural.Count(done, "cell"), failed, time.Since(start).Round(time.Millisecond))
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return exitError{exitKilled}
	case err != nil:
		return err
	case failed > 0:
		return exitError{1}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

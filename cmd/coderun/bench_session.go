package main

import (
	"github.com/coderun/coderun/bench"
	"github.com/spf13/cobra"
)

// newBenchSessionCmd is "coderun bench session".
func newBenchSessionCmd() *cobra.Command {
	cfg := bench.DefaultSessionConfig
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Sessions: cell round trip vs a plain interpreter, cold vs pooled start, memory per idle session",
		Long: `Measure, in one run and side by side:
  - the round trip of a trivial cell (1+1) through a Python session against the same
    statement sent to a plain python3 over a pipe (and the same for bash);
  - the time to a ready session, cold and from a warm pool (with and without preloads);
  - the memory held per idle Python session, with --idle sessions held at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := bench.Session(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rep.Print(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Cells, "cells", cfg.Cells, "round trips per cell-latency row")
	f.IntVar(&cfg.Cold, "cold", cfg.Cold, "cold starts per row")
	f.IntVar(&cfg.Pooled, "pooled", cfg.Pooled, "sessions taken from the pool per row")
	f.IntVar(&cfg.Idle, "idle", cfg.Idle, "idle sessions held at once for the memory figures (0: skip)")
	f.IntVar(&cfg.PoolSize, "pool", cfg.PoolSize, "pool size")
	f.StringSliceVar(&cfg.Preload, "preload", cfg.Preload, "modules of the preload rows (empty: skip them)")
	return cmd
}

package main

import (
	"github.com/coderun/coderun/bench"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure coderun on this host against baselines run side by side",
	}
	cfg := bench.DefaultSandboxConfig
	sb := &cobra.Command{
		Use:   "sandbox",
		Short: "Latency, CPU per run and throughput of a trivial program: bare python3 vs each coderun configuration, and the CLI one-shot",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := bench.Sandbox(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rep.Print(cmd.OutOrStdout())
			return nil
		},
	}
	f := sb.Flags()
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "sequential runs per latency row")
	f.IntSliceVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "throughput concurrency levels")
	f.DurationVar(&cfg.ThroughputFor, "duration", cfg.ThroughputFor, "time per throughput level")
	f.IntVar(&cfg.CLIRuns, "cli-runs", cfg.CLIRuns, "runs of each command-line one-shot row (0: skip them)")
	f.IntVar(&cfg.Pool, "pool", cfg.Pool, "pre-started sandboxes for the pooled rows")
	f.StringVar(&cfg.Code, "code", cfg.Code, "Python program to run")
	cmd.AddCommand(sb, newBenchSessionCmd(), newBenchSandboxFusionCmd(), newBenchLanguagesCmd())
	return cmd
}

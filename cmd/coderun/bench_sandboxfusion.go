package main

import (
	"github.com/coderun/coderun/bench"
	"github.com/spf13/cobra"
)

// newBenchSandboxFusionCmd is "coderun bench sandboxfusion".
func newBenchSandboxFusionCmd() *cobra.Command {
	cfg := bench.DefaultSandboxFusionConfig
	cmd := &cobra.Command{
		Use:   "sandboxfusion",
		Short: "SandboxFusion's /run_code over loopback HTTP vs the same run in-process vs coderun exec",
		Long: `Measure, in one run and side by side, a trivial Python program:
  - posted to SandboxFusion's /run_code (as verl posts it) on a loopback server;
  - run in-process through the same runtime (a pool of pre-started sandboxes, the zygote);
  - run by coderun exec -c (a fresh process and sandbox, what a shell user gets).
Latency one request at a time (p50, p95), and runs per second at a concurrency,
with the targets (p50 at most 10 ms; at least 150 runs/s at concurrency 8).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := bench.SandboxFusion(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rep.Print(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "sequential runs per latency row")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "requests at once for the throughput rows")
	f.DurationVar(&cfg.ThroughputFor, "duration", cfg.ThroughputFor, "time per throughput row")
	f.IntVar(&cfg.Pool, "pool", cfg.Pool, "pre-started sandboxes of the runtime")
	f.IntVar(&cfg.CLIRuns, "cli-runs", cfg.CLIRuns, "runs of each command-line row (0: skip them)")
	f.StringVar(&cfg.Code, "code", cfg.Code, "Python program to run")
	return cmd
}

package main

import (
	"github.com/coderun/coderun/bench"
	"github.com/coderun/coderun/sandbox/docker"
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
	f.StringVar(&cfg.BaselineExe, "cli-baseline", "", "another coderun binary whose exec -c and version rows are interleaved with this one's (an older build, to compare)")
	f.IntVar(&cfg.Pool, "pool", cfg.Pool, "pre-started sandboxes for the pooled rows")
	f.StringVar(&cfg.Code, "code", cfg.Code, "Python program to run")
	cmd.AddCommand(sb, newBenchSessionCmd(), newBenchSandboxFusionCmd(), newBenchLanguagesCmd(), newBenchRuntimesCmd())
	return cmd
}

// newBenchRuntimesCmd is "coderun bench runtimes".
func newBenchRuntimesCmd() *cobra.Command {
	cfg := bench.DefaultRuntimesConfig
	cmd := &cobra.Command{
		Use:   "runtimes",
		Short: "p50/p95 of a trivial Python one-shot and of a 1+1 session cell on each runtime, cold and warm, against bare python3",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := bench.Runtimes(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			rep.Print(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "sequential runs per row")
	f.IntVar(&cfg.Pool, "pool", cfg.Pool, "pre-started sandboxes of the warm rows")
	f.StringVar(&cfg.Code, "code", cfg.Code, "Python program to run")
	f.IntVar(&cfg.SessionCold, "session-cold", cfg.SessionCold, "session starts + first cell per runtime (0: skip those rows)")
	f.IntVar(&cfg.SessionCells, "session-cells", cfg.SessionCells, "cells in a running session per runtime (0: skip those rows)")
	f.StringVar(&cfg.Docker.Host, "docker-host", "", "the Docker Engine's address (default: DOCKER_HOST's)")
	f.StringVar(&cfg.Docker.Image, "docker-image", docker.DefaultImage, "the docker runtime's image")
	return cmd
}

package main

import (
	"fmt"

	"github.com/coderun/coderun/bench"
	"github.com/coderun/coderun/language"
	"github.com/spf13/cobra"
)

// newBenchLanguagesCmd is "coderun bench languages".
func newBenchLanguagesCmd() *cobra.Command {
	cfg := bench.DefaultLanguagesConfig
	var langs []string
	cmd := &cobra.Command{
		Use:   "languages",
		Short: "Languages: hello world compiled and run through coderun vs the toolchain on the host; HumanEval-X items/s",
		Long: `Measure, in one run and side by side, for each language with a toolchain step
(C, C++, Go, Java, Rust, TypeScript, Ruby, PHP, Perl, Lua, R; those installed):
  - a hello world compiled (where compiled) and run through coderun, a fresh sandbox
    each time, against the same compile and run commands on the host (p50, p95,
    interleaved), and through a toolchain pool's sandbox (--pool; compiled languages:
    the pool keeps sandboxes ready, their driver started, and is full before each run);
  - HumanEval-X canonical solutions per second through eval.Run (C++, Go, Java,
    JavaScript, Rust), --items of each.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, n := range langs {
				l, ok := language.Parse(n)
				if !ok {
					return usagef("--lang %q: not a language coderun runs", n)
				}
				cfg.Languages = append(cfg.Languages, l)
			}
			rep, err := bench.Languages(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("bench languages: %w", err)
			}
			rep.Print(cmd.OutOrStdout())
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", cfg.Runs, "hello-world runs per row")
	f.StringSliceVar(&langs, "lang", nil, "languages to measure (default: every installed one)")
	f.StringVar(&cfg.HumanEvalX, "humaneval-x", cfg.HumanEvalX, "directory of the HumanEval-X files (empty: skip the items/s rows)")
	f.IntVar(&cfg.Items, "items", cfg.Items, "HumanEval-X canonical solutions per language (0: all 164)")
	f.IntVar(&cfg.Pool, "pool", cfg.Pool, "sandboxes the toolchain pool keeps ready for the pool row (0: no pool row)")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "HumanEval-X items at once (0: the number of CPUs)")
	return cmd
}

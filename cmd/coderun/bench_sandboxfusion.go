package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/coderun/coderun/app"
	"github.com/coderun/coderun/bench"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server/sandboxfusion"
	"github.com/spf13/cobra"
)

// newBenchSandboxFusionCmd is "coderun bench sandboxfusion".
func newBenchSandboxFusionCmd() *cobra.Command {
	cfg := bench.DefaultSandboxFusionConfig
	cmd := &cobra.Command{
		Use:   "sandboxfusion",
		Short: "SandboxFusion's /run_code through coderun serve's server vs the same run in-process vs coderun exec",
		Long: `Measure, in one run and side by side, a trivial Python program:
  - run in-process by the runtime alone (a pool of pre-started sandboxes, the zygote), with
    its default limits, then with the limits /run_code's request asks for;
  - posted to SandboxFusion's /run_code (as verl posts it) of coderun serve's server, as the
    composition root builds it (every surface, the tenants' limits, metrics, the request
    log), first handed to its handler without a network, then over loopback HTTP;
  - run by coderun exec -c (a fresh process and sandbox, what a shell user gets).
Latency one request at a time (p50, p95), and runs per second at a concurrency,
with the targets (p50 at most 10 ms; at least 150 runs/s at concurrency 8). The server is
coderun serve's defaults with --insecure-local, in a scratch data directory, without its
session pool.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, closeServer, err := benchServer(cfg.Pool)
			if err != nil {
				return err
			}
			defer closeServer()
			rep, err := bench.SandboxFusion(cmd.Context(), cfg, srv, cmd.ErrOrStderr())
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

// benchServer builds coderun serve's server with its defaults (insecure
// local mode, a scratch data directory, no session pool, pool pre-started
// sandboxes), and returns it with a function that closes it.
func benchServer(pool int) (*bench.SandboxFusionServer, func(), error) {
	dir, err := os.MkdirTemp("", "coderun-bench-")
	if err != nil {
		return nil, nil, err
	}
	cfg := app.Defaults(os.Getenv)
	for key, value := range map[string]string{"server.insecure_local": "true", "server.addr": "127.0.0.1:0",
		"store.data_dir": dir, "server.session_pool": "0", "runtime.linux.pool": strconv.Itoa(pool)} {
		if err := cfg.Set(key, value, app.Flag("bench")); err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
	}
	if err := cfg.SetServeDefaults(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	served, err := cfg.NewServer(app.ServeOptions{Version: version()})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	closeServer := func() {
		_ = served.Close()
		os.RemoveAll(dir)
	}
	srv := &bench.SandboxFusionServer{Handler: served.Server.Handler()}
	for _, sf := range served.Surfaces {
		if h, ok := sf.Handler.(*sandboxfusion.Handler); ok {
			srv.SandboxFusion = h
		}
	}
	rt := served.Services.Runtime
	for srv.Runtime == nil {
		if l, ok := rt.(*linux.Runtime); ok {
			srv.Runtime = l
			break
		}
		u, ok := rt.(interface{ Unwrap() sandbox.Runtime })
		if !ok {
			closeServer()
			return nil, nil, fmt.Errorf("the server's runtime is %s: the benchmark measures the linux runtime", served.Services.Runtime.Name())
		}
		rt = u.Unwrap()
	}
	if srv.SandboxFusion == nil {
		closeServer()
		return nil, nil, errors.New("the server mounts no SandboxFusion surface")
	}
	return srv, closeServer, nil
}

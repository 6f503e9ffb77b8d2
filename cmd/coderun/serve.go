package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coderun/coderun/app"
	"github.com/spf13/cobra"
)

// serveFlags are serve's own flags, each overriding a server.* setting.
type serveFlags struct {
	addr          string
	insecureLocal bool
	maxBody       string
	grace         time.Duration
	sessions      int
	executions    int
	rate          int
	burst         int
	pool          int
	sessionPool   int
	compiledPool  int
	logLevel      string
	sfTenant      string
}

func (f *serveFlags) bindings() []binding {
	return []binding{
		{"addr", "server.addr", &f.addr},
		{"insecure-local", "server.insecure_local", &f.insecureLocal},
		{"max-body", "server.max_body", &f.maxBody},
		{"grace", "server.grace", &f.grace},
		{"tenant-sessions", "server.tenant_sessions", &f.sessions},
		{"tenant-executions", "server.tenant_executions", &f.executions},
		{"tenant-rate", "server.tenant_rate", &f.rate},
		{"tenant-burst", "server.tenant_burst", &f.burst},
		{"pool", "runtime.linux.pool", &f.pool},
		{"session-pool", "server.session_pool", &f.sessionPool},
		{"compiled-pool", "runtime.compiled_pool", &f.compiledPool},
		{"sandboxfusion-tenant", "server.sandboxfusion_tenant", &f.sfTenant},
	}
}

func newServeCmd(g *globalFlags) *cobra.Command {
	f := &serveFlags{}
	d := &dataFlags{g: g}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve coderun over HTTP: its own API, for agents and pipelines, with tenants",
		Long: `Serve coderun over HTTP on one listener: coderun's own JSON API under /v1 (one-shot
executions; sessions with cells streamed as Server-Sent Events, files and notebooks), described
by the OpenAPI 3.1 document at /openapi.json, and /healthz, /readyz and Prometheus /metrics.
SandboxFusion's POST /run_code, POST /run_jupyter and GET /v1/ping are served too, for RL
reward sandboxes (verl): point sandbox_fusion.url at http://HOST:PORT/run_code.

API keys. Every request presents a key (Authorization: Bearer KEY, or X-API-Key: KEY), and each
key belongs to a tenant: a tenant sees only its own sessions (another's id answers 404). Keys
are set by the operator, never on the command line:
  server.api_keys in the configuration file, a list of "TENANT:KEY" entries, or of
      "TENANT:sha256:HEX" with the hex SHA-256 of the key, so that the file holds no key;
  $CODERUN_API_KEYS, the same entries comma-separated (it overrides the file).
Keys are kept in memory as hashes only, and 'coderun config' shows them hashed. Without keys
the server refuses to start, unless --insecure-local: then it listens on a loopback address
only and a request without a key is the "default" tenant's (the CLI's records).

Every setting (flag, configuration key, default):
  --addr               server.addr               127.0.0.1:8080 ($CODERUN_ADDR)
  --insecure-local     server.insecure_local     false
  --max-body           server.max_body           32MiB: a larger request body answers 413 (a file
                                                 uploaded is bounded by its workspace's size instead)
  --grace              server.grace              30s: on SIGINT/SIGTERM, running cells may finish
                                                 this long before they are cut off
  (none)               server.read_header_timeout  10s: a client sending its request's headers
                                                 slower is cut off
  (none)               server.max_connections    4096 connections open at once per listener; one
                                                 beyond is closed at once
  (none)               server.max_header_bytes   64KiB: larger request headers answer 431
  (none)               server.body_timeout       30s: the longest a request's body may pause
  (none)               server.body_min_rate      1KiB: bytes per second a body must average after
                                                 its first body_timeout (0: none); a slower body
                                                 is cut off (408). Neither bounds a long cell or
                                                 a stream of events: they bound sending a request
  (none)               server.idle_timeout       2m: a kept-alive connection idle this long is closed
  (none)               server.write_timeout      1m: a client that leaves its answer unread this long
                                                 (a stream it asked for and never reads) is cut
                                                 off, its cell interrupted; a slow reader is not
  --tenant-sessions    server.tenant_sessions    20 sessions open at once per tenant (0: no bound)
  --tenant-executions  server.tenant_executions  8 executions running at once per tenant
  --tenant-rate        server.tenant_rate        1000 requests per second per tenant
  --tenant-burst       server.tenant_burst       requests at once above the rate (default: the rate)
  --sandboxfusion-tenant server.sandboxfusion_tenant  the tenant of SandboxFusion requests
                                                 without a key (verl sends none); empty: refused
                                                 ($CODERUN_SANDBOXFUSION_TENANT)
  (none)               server.api_keys           see above ($CODERUN_API_KEYS)
  (none)               server.e2b_debug_interpreter, server.e2b_debug_envd
                                                 127.0.0.1:49999 and 127.0.0.1:49983: E2B's code
                                                 interpreter and envd for the E2B SDK's debug mode
                                                 (loopback only; "off": not served)
  (none)               server.mcp_origins        origins (https://app.example.com) whose pages may
                                                 call /mcp from a browser, besides the server's own
  (none)               server.runtimes           runtimes a request or session may name in its
                                                 "runtime" (linux, gvisor, docker), opened at the
                                                 start; default: runtime.name's alone
  --pool               runtime.linux.pool        4 pre-started Python sandboxes for one-shot runs
  (none)               runtime.linux.zygote      sandboxes forked from a started Python: true here
                                                 when the server runs one tenant's code, false for
                                                 several (forks share ASLR and the hash secret)
  --session-pool       server.session_pool       2 Python sessions kept started for new sessions
                                                 with the server's session defaults
  --compiled-pool      runtime.compiled_pool     2 sandboxes kept ready, their compiler's driver
                                                 started, for compiled languages (C, C++, Go,
                                                 Java, Rust); 0: none
  (none)               limits.*                  the defaults of one-shot runs' limits
  (none)               server.max_limits.*       the most a request may ask for, each of
                                                 server.max_limits.timeout, server.max_limits.cpu_time
                                                 (1h), server.max_limits.memory (4GiB),
                                                 server.max_limits.processes (1024),
                                                 server.max_limits.output_limit (16MiB),
                                                 server.max_limits.workspace_size (1GiB),
                                                 server.max_limits.open_files (65536); past it: 400
  (none)               session.*                 the defaults of sessions (limits, preload,
                                                 max_sessions across tenants, idle_timeout)
Beyond a tenant's limits the answer is 429 with Retry-After (SandboxFusion's routes wait their turn
instead: its clients count any other answer as a failed run). Each request is logged as one JSON
line on standard error, with its request id (X-Request-Id).`,
		Example: `  coderun serve --insecure-local
  CODERUN_API_KEYS=alice:$(openssl rand -hex 24) coderun serve --addr 0.0.0.0:8080
  curl -s localhost:8080/v1/exec --json '{"language":"python","code":"print(6*7)"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load(g.runtimeFlags(), d.flags(), f.bindings())
			if err != nil {
				return err
			}
			// Pools, and the zygote for one tenant (unless the file, env
			// or flags say else).
			if err := cfg.SetServeDefaults(); err != nil {
				return err
			}
			level, err := parseLevel(f.logLevel)
			if err != nil {
				return err
			}
			return runServe(cmd.Context(), cfg, level, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "", "address to listen on, host:port (default 127.0.0.1:8080, or $CODERUN_ADDR)")
	fl.BoolVar(&f.insecureLocal, "insecure-local", false, "serve without API keys, on a loopback address only: requests without a key are the default tenant's")
	fl.StringVar(&f.maxBody, "max-body", "", "largest request body, such as 32MiB (default 32MiB)")
	fl.DurationVar(&f.grace, "grace", 0, "how long a shutdown lets running requests finish (default 30s)")
	fl.IntVar(&f.sessions, "tenant-sessions", 0, "sessions open at once per tenant; 0 with the flag given: no bound (default 20)")
	fl.IntVar(&f.executions, "tenant-executions", 0, "executions running at once per tenant; 0 with the flag given: no bound (default 8)")
	fl.IntVar(&f.rate, "tenant-rate", 0, "requests per second per tenant; 0 with the flag given: no bound (default 1000)")
	fl.IntVar(&f.burst, "tenant-burst", 0, "requests at once above the rate (default: the rate)")
	fl.IntVar(&f.pool, "pool", 0, "pre-started Python sandboxes kept ready for one-shot runs (default 4)")
	fl.IntVar(&f.sessionPool, "session-pool", 0, "Python sessions kept started, for sessions created with the server's session defaults (default 2)")
	fl.IntVar(&f.compiledPool, "compiled-pool", 0, "sandboxes kept ready for compiled languages; 0 with the flag given: none (default 2)")
	fl.StringVar(&f.logLevel, "log-level", "info", "least level logged: debug, info, warn, error")
	fl.StringVar(&f.sfTenant, "sandboxfusion-tenant", "", "tenant of SandboxFusion requests (/run_code) that present no key, as verl sends them (default: refused)")
	d.register(cmd)
	return cmd
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, usagef("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// runServe builds the server from the configuration and serves until
// SIGINT or SIGTERM, then shuts down gracefully.
func runServe(ctx context.Context, cfg *app.Config, level slog.Level, stderr io.Writer) error {
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv, err := cfg.NewServer(app.ServeOptions{Logger: logger, Version: version()})
	if err != nil {
		var re *app.RuntimeError
		if errors.As(err, &re) {
			return setupError{err}
		}
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

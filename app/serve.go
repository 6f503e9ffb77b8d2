package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// ServerConfig configures `coderun serve`.
type ServerConfig struct {
	// Addr is the address the server listens on (host:port).
	Addr string
	// APIKeys are "TENANT:KEY" or "TENANT:sha256:HEX" (see
	// server.ParseKeys); `coderun config` shows them hashed.
	APIKeys []string
	// InsecureLocal serves without keys, on a loopback address only: every
	// request without a key is server.DefaultTenant's.
	InsecureLocal bool
	// MaxBody caps a request's body.
	MaxBody int64
	// Grace is how long a shutdown lets running requests finish.
	Grace time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send a
	// request's headers; IdleTimeout how long a kept-alive connection
	// waits for its next request.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// MaxHeaderBytes bounds a request's headers (431 beyond).
	MaxHeaderBytes int64
	// MaxConnections bounds the connections open at once, per listener.
	MaxConnections int
	// BodyTimeout is the longest a request's body may pause; BodyMinRate
	// the fewest bytes per second it must average after its first
	// BodyTimeout (0: no minimum). Both bound sending a request only,
	// never a long cell or a stream of events (see server.BodyRules).
	BodyTimeout time.Duration
	BodyMinRate int64
	// WriteTimeout is the longest a client may leave an answer unread
	// before its connection is cut (a stream nobody reads).
	WriteTimeout time.Duration
	// TenantSessions, TenantExecutions and TenantRate bound each tenant:
	// sessions open at once, executions running at once, requests per
	// second (with bursts of TenantBurst). 0: no bound.
	TenantSessions   int
	TenantExecutions int
	TenantRate       int
	TenantBurst      int
	// SandboxFusionTenant is the tenant of SandboxFusion requests that
	// present no key (verl sends none); empty refuses them (see
	// server/sandboxfusion).
	SandboxFusionTenant string
	// E2BDebugInterpreter and E2BDebugEnvd are the loopback addresses of
	// E2B's code interpreter and envd for the E2B SDK's debug mode
	// (E2B_DEBUG=true talks to localhost:49999 and localhost:49983);
	// "off" turns them off.
	E2BDebugInterpreter string
	E2BDebugEnvd        string
	// SessionPool is how many Python sessions are kept started (IPython
	// up, the preloaded modules imported) for requests that create one
	// with the server's session defaults; 0: none.
	SessionPool int
	// MCPOrigins are the origins ("https://app.example.com") whose pages
	// may call the MCP endpoint from a browser, besides the server's own.
	MCPOrigins []string
	// Runtimes are the runtimes a request may name (its "runtime"), besides
	// the configured one (runtime.name), which serves requests that name
	// none; each is opened at the start, with its runtime.NAME.* settings.
	Runtimes []string
	// MaxLimits are the most a request may ask for (server.max_limits.*):
	// the limits of limits.* and session.* are defaults a request may
	// raise, up to these; a zero field bounds nothing beyond
	// sandbox.MaxLimits (far more than a shared host gives one tenant).
	MaxLimits sandbox.Limits
}

// DefaultMaxLimits are ServerConfig.MaxLimits' defaults: well above the
// defaults of runs, sessions and compile steps, well below what would let
// one request take a host's memory.
var DefaultMaxLimits = sandbox.Limits{WallTime: time.Hour, CPUTime: time.Hour, Memory: 4 << 30, Processes: 1024,
	OutputBytes: 16 << 20, WorkspaceBytes: 1 << 30, OpenFiles: 65536}

// SetServeDefaults gives `coderun serve` its defaults where the file, the
// environment and the flags say nothing: one-shot runs from 4 pre-started
// sandboxes, 2 Python sessions kept started, DefaultServeCompiledPool
// sandboxes ready for compiled languages, and sandboxes forked from a
// zygote when the server runs one tenant's code only (--insecure-local,
// or keys of one tenant): forks of one zygote share its address-space
// layout, stack canary and string-hash secret, which a server must not
// share between tenants (README, "How a run is isolated").
func (c *Config) SetServeDefaults() error {
	for key, value := range map[string]string{"runtime.linux.pool": "4", "server.session_pool": "2", "runtime.compiled_pool": strconv.Itoa(DefaultServeCompiledPool)} {
		if err := c.SetDefault(key, value); err != nil {
			return err
		}
	}
	tenants, err := c.servedTenants()
	if err != nil {
		return err
	}
	return c.SetDefault("runtime.linux.zygote", strconv.FormatBool(len(tenants) <= 1))
}

// DefaultServeCompiledPool is how many sandboxes coderun serve keeps ready
// for compiled languages (runtime.compiled_pool): a pooled run skips a
// sandbox's set-up (C's hello world: about 14 ms of CPU of 50, README
// "Benchmarks"), and each waiting sandbox holds one idle shell and an
// empty workspace. Two: the runs a 2-core host compiles at once.
const DefaultServeCompiledPool = 2

// servedTenants are the tenants whose code the server runs: the keys'
// tenants, SandboxFusion's keyless tenant, and the default tenant with
// --insecure-local.
func (c *Config) servedTenants() ([]string, error) {
	sc := c.Server
	keys, err := server.ParseKeys(sc.APIKeys)
	if err != nil {
		return nil, &SettingError{Key: "server.api_keys", Source: c.Source("server.api_keys"), Err: err}
	}
	tenants := keys.Tenants()
	if sc.SandboxFusionTenant != "" {
		tenants = append(tenants, sc.SandboxFusionTenant)
	}
	if sc.InsecureLocal {
		tenants = append(tenants, server.DefaultTenant)
	}
	slices.Sort(tenants)
	return slices.Compact(tenants), nil
}

// Environment variables of the server's settings.
const (
	EnvAddr    = "CODERUN_ADDR"     // server.addr
	EnvAPIKeys = "CODERUN_API_KEYS" // server.api_keys, comma-separated
	// EnvSandboxFusionTenant is server.sandboxfusion_tenant.
	EnvSandboxFusionTenant = "CODERUN_SANDBOXFUSION_TENANT"
)

// TenantLimits are the limits each tenant is held to.
func (sc ServerConfig) TenantLimits() server.TenantLimits {
	return server.TenantLimits{Sessions: sc.TenantSessions, Executions: sc.TenantExecutions,
		Rate: float64(sc.TenantRate), Burst: sc.TenantBurst}
}

// DefaultTenantRate is server.tenant_rate's default: requests per second
// per tenant. It guards the server against a flood of cheap requests (the
// tenant's executions at once bound the work it asks for); at 100, as it
// was, it held one tenant's SandboxFusion /run_code (verl's reward sandbox,
// which waits for its turn rather than fail) to 100 runs a second, below
// what one server runs.
const DefaultTenantRate = 1000

func defaultServerConfig() ServerConfig {
	return ServerConfig{Addr: "127.0.0.1:8080", MaxBody: server.DefaultMaxBody, Grace: server.DefaultGrace,
		ReadHeaderTimeout: server.DefaultReadHeaderTimeout, IdleTimeout: server.DefaultIdleTimeout, MaxHeaderBytes: server.DefaultMaxHeaderBytes,
		MaxConnections: server.DefaultMaxConnections,
		BodyTimeout:    server.DefaultBodyTimeout, BodyMinRate: server.DefaultBodyMinRate, WriteTimeout: server.DefaultWriteTimeout,
		TenantSessions: 20, TenantExecutions: 8, TenantRate: DefaultTenantRate,
		E2BDebugInterpreter: "127.0.0.1:49999", E2BDebugEnvd: "127.0.0.1:49983", MaxLimits: DefaultMaxLimits}
}

// bindServer adds the server's settings.
func (c *Config) bindServer(add func(key, env string, ptr any, check func(any) error) *setting, size func(string, string, *int64, func(any) error)) {
	s := &c.Server
	add("server.addr", EnvAddr, &s.Addr, func(v any) error {
		_, _, err := net.SplitHostPort(v.(string))
		return err
	})
	add("server.api_keys", EnvAPIKeys, &s.APIKeys, func(v any) error {
		_, err := server.ParseKeys(v.([]string))
		return err
	}).secret = true
	add("server.insecure_local", "", &s.InsecureLocal, nil)
	size("server.max_body", "", &s.MaxBody, positive)
	add("server.grace", "", &s.Grace, positive)
	add("server.read_header_timeout", "", &s.ReadHeaderTimeout, positive)
	add("server.idle_timeout", "", &s.IdleTimeout, positive)
	add("server.max_connections", "", &s.MaxConnections, positive)
	size("server.max_header_bytes", "", &s.MaxHeaderBytes, func(v any) error {
		if n := v.(int64); n < 4<<10 || n > 16<<20 {
			return errors.New("must be between 4KiB and 16MiB")
		}
		return nil
	})
	add("server.body_timeout", "", &s.BodyTimeout, positive)
	size("server.body_min_rate", "", &s.BodyMinRate, notNegative)
	add("server.write_timeout", "", &s.WriteTimeout, positive)
	add("server.tenant_sessions", "", &s.TenantSessions, notNegative)
	add("server.tenant_executions", "", &s.TenantExecutions, notNegative)
	add("server.tenant_rate", "", &s.TenantRate, notNegative)
	add("server.tenant_burst", "", &s.TenantBurst, notNegative)
	add("server.session_pool", "", &s.SessionPool, notNegative)
	add("server.sandboxfusion_tenant", EnvSandboxFusionTenant, &s.SandboxFusionTenant, func(v any) error {
		if t := v.(string); t != "" && !server.ValidTenant(t) {
			return fmt.Errorf("%q is not a tenant name (1 to 64 letters, digits, '.', '_', '-')", t)
		}
		return nil
	})
	add("server.e2b_debug_interpreter", "", &s.E2BDebugInterpreter, checkExtraListener)
	add("server.e2b_debug_envd", "", &s.E2BDebugEnvd, checkExtraListener)
	add("server.mcp_origins", "", &s.MCPOrigins, checkOrigins)
	add("server.runtimes", "", &s.Runtimes, checkServerRuntimes)
	m := &s.MaxLimits
	add("server.max_limits.timeout", "", &m.WallTime, notNegative)
	add("server.max_limits.cpu_time", "", &m.CPUTime, notNegative)
	size("server.max_limits.memory", "", &m.Memory, notNegative)
	add("server.max_limits.processes", "", &m.Processes, notNegative)
	size("server.max_limits.output_limit", "", &m.OutputBytes, notNegative)
	size("server.max_limits.workspace_size", "", &m.WorkspaceBytes, notNegative)
	add("server.max_limits.open_files", "", &m.OpenFiles, notNegative)
}

// checkMaxLimits refuses defaults (limits.*, session.*) past the most a
// request may ask for (server.max_limits.*), naming both settings.
func (c *Config) checkMaxLimits() error {
	m := c.Server.MaxLimits
	for _, d := range []struct {
		section string
		l       sandbox.Limits
	}{{"limits", c.Limits}, {"session", c.Session.Limits}} {
		for _, f := range []struct {
			name   string
			v, max int64
		}{
			{"timeout", int64(d.l.WallTime), int64(m.WallTime)}, {"cpu_time", int64(d.l.CPUTime), int64(m.CPUTime)},
			{"memory", d.l.Memory, m.Memory}, {"processes", int64(d.l.Processes), int64(m.Processes)},
			{"output_limit", d.l.OutputBytes, m.OutputBytes}, {"workspace_size", d.l.WorkspaceBytes, m.WorkspaceBytes},
			{"open_files", int64(d.l.OpenFiles), int64(m.OpenFiles)},
		} {
			if d.section == "session" && (f.name == "timeout" || f.name == "cpu_time") {
				continue // a cell's time is the session's to bound
			}
			if f.max > 0 && f.v > f.max {
				key := d.section + "." + f.name
				return &SettingError{Key: key, Source: c.Source(key),
					Err: fmt.Errorf("more than server.max_limits.%s allows (the most a request may ask for): raise that, or lower this", f.name)}
			}
		}
	}
	return nil
}

// Services are what the server's surfaces are built from, shared by all
// of them: one runtime, one session manager, the tenants' limits, the
// metrics and the log.
type Services struct {
	Config *Config
	// Runtime runs one-shot executions; Sessions keeps every tenant's
	// sessions (use Sessions.Tenant(name)).
	Runtime  sandbox.Runtime
	Sessions *session.Manager
	// Runtimes are the runtimes a request may name, by name: Runtime and
	// those server.runtimes enables (closed with the server).
	Runtimes map[string]sandbox.Runtime
	// Auth authenticates requests for a surface with OwnAuth; Tenants
	// enforces the per-tenant limits.
	Auth    server.Auth
	Tenants *server.Tenants
	Metrics *server.Metrics
	Logger  *slog.Logger
	// Version is the program's version, for documents and banners.
	Version string

	closers     []func() error
	shutdown    []func()
	sessionPool *session.Pool
	listeners   []extraListener // see AddListener
}

// OnShutdown has f called as a shutdown begins, while requests in flight
// still run (see server.Options.OnShutdown): a surface ends there what
// would not end by itself (streams following runs), so that the shutdown
// need not wait out its grace period.
func (s *Services) OnShutdown(f func()) { s.shutdown = append(s.shutdown, f) }

// OnClose has f called when the server has shut down, before the sessions
// and the runtime are closed: a surface's background work stops there.
func (s *Services) OnClose(f func() error) { s.closers = append(s.closers, f) }

// surfaceFunc builds one surface of the server.
type surfaceFunc func(*Services) (server.Surface, error)

// Surfaces lists what `coderun serve` mounts, one line per surface: a
// new surface is one line here and a function beside this file
// (app/serve_NAME.go) that builds it from the Services.
func Surfaces() []surfaceFunc {
	return []surfaceFunc{
		coderunAPI,    // coderun's own API under /v1 (server/api)
		sandboxFusion, // SandboxFusion's /run_code, /run_jupyter, /v1/ping (server/sandboxfusion)
		agentRuns,     // agent runs, the review queue and stats under /v1 (server/runs)
		evalJobs,      // batch eval jobs under /v1/jobs (server/jobs)
		webView,       // the web view at / (web)
		mcpSurface,    // MCP over Streamable HTTP at /mcp (package mcp)
		e2bSurface,    // E2B's control plane, interpreter and envd (server/e2b)
	}
}

// ServeOptions are what a server is built with besides the configuration.
type ServeOptions struct {
	Logger  *slog.Logger
	Version string
}

// Served is a server built from the configuration, with what it owns.
type Served struct {
	Server   *server.Server
	Services *Services
	// Surfaces are the surfaces mounted, in the order of Surfaces().
	Surfaces []server.Surface
	addr     string
	close    sync.Once
	closeErr error
}

// NewServer builds `coderun serve` from the configuration: it checks the
// keys (none is refused, unless insecure local mode on loopback), opens
// the runtime and the session manager, builds every surface of
// Surfaces and mounts them. Configuration problems match ErrConfig; a
// runtime that cannot start is a *RuntimeError.
func (c *Config) NewServer(opts ServeOptions) (*Served, error) {
	sc := c.Server
	keys, err := server.ParseKeys(sc.APIKeys)
	if err != nil {
		return nil, &SettingError{Key: "server.api_keys", Source: c.Source("server.api_keys"), Err: err}
	}
	if keys.Len() == 0 && !sc.InsecureLocal {
		return nil, configError{fmt.Errorf("%w: set server.api_keys (or $%s) to TENANT:KEY entries, or serve this machine only with --insecure-local", server.ErrNoKeys, EnvAPIKeys)}
	}
	if sc.InsecureLocal {
		if err := loopbackOnly(sc.Addr); err != nil {
			return nil, &SettingError{Key: "server.addr", Value: sc.Addr, Source: c.Source("server.addr"), Err: err}
		}
	}
	if err := c.checkMaxLimits(); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rt, err := c.OpenRuntime()
	if err != nil {
		return nil, err
	}
	// Every surface's requests and sessions, within the operator's maximum.
	rt = sandbox.Capped(rt, sc.MaxLimits)
	runtimes, err := c.openServerRuntimes(rt)
	if err != nil {
		rt.Close()
		return nil, err
	}
	mgr, pool, err := c.serverSessions(rt, logger)
	if err != nil {
		_ = closeRuntimes(runtimes, nil)
		return nil, err
	}
	svc := &Services{Config: c, Runtime: rt, Runtimes: runtimes, Sessions: mgr, sessionPool: pool, Auth: server.Auth{Keys: keys, InsecureLocal: sc.InsecureLocal},
		Tenants: server.NewTenants(sc.TenantLimits()),
		Metrics: server.NewMetrics(), Logger: logger, Version: opts.Version}
	fail := func(err error) (*Served, error) {
		_ = svc.close()
		return nil, err
	}
	if err := poolGauges(svc); err != nil {
		return fail(err)
	}
	if pool != nil {
		if err := svc.Metrics.AddGauge("coderun_session_pool_ready", "Python sessions started and waiting to be handed out.", nil,
			func() float64 { return float64(pool.Ready()) }); err != nil {
			return fail(err)
		}
	}
	var surfaces []server.Surface
	for _, build := range Surfaces() {
		sf, err := build(svc)
		if err != nil {
			return fail(fmt.Errorf("build the server's surfaces: %w", err))
		}
		surfaces = append(surfaces, sf)
	}
	srv, err := server.New(server.Options{Keys: keys, InsecureLocal: sc.InsecureLocal, Surfaces: surfaces, Tenants: svc.Tenants,
		MaxBody: sc.MaxBody, Grace: sc.Grace, ReadHeaderTimeout: sc.ReadHeaderTimeout, IdleTimeout: sc.IdleTimeout, MaxHeaderBytes: int(sc.MaxHeaderBytes), MaxConnections: sc.MaxConnections,
		BodyTimeout: sc.BodyTimeout, BodyMinRate: sc.BodyMinRate, WriteTimeout: sc.WriteTimeout, Metrics: svc.Metrics, Logger: logger, OnShutdown: svc.shutdown,
		Info: server.APIInfo{Title: "coderun", Version: opts.Version}})
	if err != nil {
		return fail(err)
	}
	return &Served{Server: srv, Services: svc, Surfaces: surfaces, addr: sc.Addr}, nil
}

// poolGauges exports the sizes of the runtime's pools of pre-started
// sandboxes, where it has them.
func poolGauges(svc *Services) error {
	type pooled interface{ PoolReady(sandbox.Language) int }
	type compiledPool interface{ PoolReady() int } // sandbox/toolchain's
	rt := svc.Runtime
	pr, ok := rt.(pooled)
	for !ok {
		if cp, isToolchain := rt.(compiledPool); isToolchain {
			if err := svc.Metrics.AddGauge("coderun_compiled_pool_ready", "Sandboxes waiting for a compiled language's run (runtime.compiled_pool).",
				nil, func() float64 { return float64(cp.PoolReady()) }); err != nil {
				return fmt.Errorf("metrics: %w", err)
			}
		}
		// Through the wrappers (the toolchain of compiled languages).
		u, wraps := rt.(interface{ Unwrap() sandbox.Runtime })
		if !wraps {
			return nil
		}
		rt = u.Unwrap()
		pr, ok = rt.(pooled)
	}
	for _, lang := range sandbox.Languages() {
		if err := svc.Metrics.AddGauge("coderun_pool_ready", "Pre-started sandboxes waiting, by language.",
			map[string]string{"language": string(lang)}, func() float64 { return float64(pr.PoolReady(lang)) }); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// loopbackOnly refuses an address that is not a loopback one.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("--insecure-local serves this machine only: listen on a loopback address (127.0.0.1, ::1, localhost)")
}

// Addr is the address the server listens on.
func (s *Served) Addr() string { return s.addr }

// Run serves until ctx is done, then shuts down gracefully (see
// server.Server.Serve) and closes the sessions and the runtime.
func (s *Served) Run(ctx context.Context) error {
	stop := s.Services.serveListeners(ctx, s.Services.Config.Server.Grace)
	err := s.Server.ListenAndServe(ctx, s.addr)
	stop()
	return errors.Join(err, s.Close())
}

// Serve is Run on a listener the caller made.
func (s *Served) Serve(ctx context.Context, ln net.Listener) error {
	err := s.Server.Serve(ctx, ln)
	return errors.Join(err, s.Close())
}

// Close closes the sessions and the runtime.
func (s *Served) Close() error {
	s.close.Do(func() { s.closeErr = s.Services.close() })
	return s.closeErr
}

// close stops the surfaces' work, then closes the sessions and the runtime.
func (s *Services) close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	errs = append(errs, s.Sessions.Close())
	if s.sessionPool != nil {
		s.sessionPool.Close()
	}
	return errors.Join(append(errs, s.Runtime.Close(), closeRuntimes(s.Runtimes, s.Runtime))...)
}

// serverSessions is the server's session manager, with a pool of started
// Python sessions when server.session_pool asks for one, and evictions
// logged.
func (c *Config) serverSessions(rt sandbox.Runtime, logger *slog.Logger) (*session.Manager, *session.Pool, error) {
	irt, err := Interactive(rt)
	if err != nil {
		return nil, nil, err
	}
	var pool *session.Pool
	if n := c.Server.SessionPool; n > 0 {
		if pool, err = session.NewPool(irt, c.SessionConfig(sandbox.Python), session.PoolOptions{Size: n,
			Logf: func(format string, args ...any) { logger.Warn(fmt.Sprintf(format, args...)) }}); err != nil {
			return nil, nil, configError{fmt.Errorf("server.session_pool: %w", err)}
		}
	}
	mgr := session.NewManager(irt, session.ManagerOptions{MaxSessions: c.Session.MaxSessions, IdleTimeout: c.Session.IdleTimeout,
		Pool: pool, OnEvict: func(e session.Eviction) {
			logger.Info("session evicted", "session", e.ID, "tenant", e.Tenant, "reason", e.Reason, "cells", e.Cells)
		}})
	return mgr, pool, nil
}

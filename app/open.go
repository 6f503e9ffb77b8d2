package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/llm"
	"github.com/coderun/coderun/llm/provider"
	"github.com/coderun/coderun/policy"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
	"github.com/coderun/coderun/session"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
	"go.opentelemetry.io/otel/trace"

	// The runtimes a program built on this package can choose by name
	// (runtime.name): each registers itself. A new runtime is one more
	// import here.
	_ "github.com/coderun/coderun/sandbox/docker"
	_ "github.com/coderun/coderun/sandbox/gvisor"
	_ "github.com/coderun/coderun/sandbox/linux"
)

// RuntimeError is a runtime that could not be started: a required
// isolation layer missing, no permission, its setup failing. It is not a
// configuration error: the configuration was fine, the host was not.
type RuntimeError struct {
	Runtime string
	Err     error
}

func (e *RuntimeError) Error() string { return e.Err.Error() }
func (e *RuntimeError) Unwrap() error { return e.Err }

// OpenRuntime builds the runtime that Runtime.Name names, from its options
// in Runtime.Options, able to run every language (sandbox/toolchain runs
// those the runtime does not start itself, with Runtime.CompiledPool
// sandboxes kept ready for compiled ones). A failure to start is a
// *RuntimeError.
func (c *Config) OpenRuntime() (sandbox.Runtime, error) {
	if _, ok := sandbox.Lookup(c.Runtime.Name); !ok {
		return nil, &SettingError{Key: "runtime.name", Value: c.Runtime.Name, Source: c.Source("runtime.name"),
			Err: oneOf(sandbox.Drivers()...)(c.Runtime.Name)}
	}
	return c.openRuntime(c.Runtime.Name, toolchain.Options{Pool: c.Runtime.CompiledPool})
}

// RuntimeOptions are the options of the runtime that Runtime.Name names
// (for the linux runtime, a *linux.Settings).
func (c *Config) RuntimeOptions() any { return c.Runtime.Options[c.Runtime.Name] }

// Store is one tenant's records in the store of the data directory, with
// the database to close.
type Store struct {
	store.Tenant
	db *sqlite.DB
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// OpenStore opens (creating if need be) the store in Store.DataDir, with
// the lease of Store.Lease, and returns the records of tenant.
func (c *Config) OpenStore(ctx context.Context, tenant string) (*Store, error) {
	dir, err := c.dataDir()
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, dir, sqlite.Options{Lease: c.Store.Lease})
	if err != nil {
		return nil, err
	}
	return openTenant(db, tenant)
}

// ViewStore opens the store for reading only: where there is no database
// yet, it reads an empty one instead of creating the data directory.
func (c *Config) ViewStore(ctx context.Context, tenant string) (*Store, error) {
	dir, err := c.dataDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, sqlite.FileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		path = ":memory:"
	}
	db, err := sqlite.OpenFile(ctx, path, sqlite.Options{Lease: c.Store.Lease})
	if err != nil {
		return nil, err
	}
	return openTenant(db, tenant)
}

func (c *Config) dataDir() (string, error) {
	if c.Store.DataDir != "" {
		return c.Store.DataDir, nil
	}
	// Nothing placed it: let the store say why (no HOME, say).
	return sqlite.DefaultDir(func(string) string { return "" })
}

func openTenant(db *sqlite.DB, tenant string) (*Store, error) {
	tn, err := db.Tenant(tenant)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{Tenant: tn, db: db}, nil
}

// OpenModel builds the model spec names ("provider:model"; empty means
// Model.Spec), its keys and endpoints read from the environment through
// getenv as llm.ConfigFromEnv does. No model, or no key for it, matches
// ErrConfig.
func (c *Config) OpenModel(spec string, getenv func(string) string) (llm.Provider, string, error) {
	if spec == "" {
		spec = c.Model.Spec
	}
	if spec == "" {
		// llm.ConfigFromEnv explains how to name a model.
		getenv = hide(getenv, EnvModel)
	}
	lcfg, err := llm.ConfigFromEnv(spec, getenv)
	if err != nil {
		return nil, "", configError{err}
	}
	p, err := provider.New(lcfg)
	if err != nil {
		return nil, "", err
	}
	return p, lcfg.Spec(), nil
}

// hide is getenv without the variable name.
func hide(getenv func(string) string, name string) func(string) string {
	return func(k string) string {
		if k == name {
			return ""
		}
		return getenv(k)
	}
}

// SessionConfig is a session's configuration from Session: its limits,
// grace period and preloaded modules, in lang.
func (c *Config) SessionConfig(lang sandbox.Language) session.Config {
	return session.Config{Language: lang, Limits: c.Session.Limits, Grace: c.Session.Grace,
		Preload: append([]string(nil), c.Session.Preload...)}
}

// Interactive is rt as a runtime of long-lived sandboxes, which sessions
// need; an error if it is not one.
func Interactive(rt sandbox.Runtime) (sandbox.Interactive, error) {
	irt, ok := rt.(sandbox.Interactive)
	if !ok {
		return nil, fmt.Errorf("the %s runtime has no long-lived sandboxes for sessions", rt.Name())
	}
	return irt, nil
}

// NewManager is a session manager over rt with Session's bounds.
func (c *Config) NewManager(rt sandbox.Runtime) (*session.Manager, error) {
	irt, err := Interactive(rt)
	if err != nil {
		return nil, err
	}
	return session.NewManager(irt, session.ManagerOptions{MaxSessions: c.Session.MaxSessions, IdleTimeout: c.Session.IdleTimeout}), nil
}

// Reviewer is the pre-flight review of Agent.Policy: nil (the default
// policy) when no policy file is set. A policy file that cannot be read
// matches ErrConfig.
func (c *Config) Reviewer() (*policy.Reviewer, error) {
	if c.Agent.Policy == "" {
		return nil, nil
	}
	pol, err := policy.LoadPolicy(c.Agent.Policy)
	if err != nil {
		return nil, &SettingError{Key: "agent.policy", Value: c.Agent.Policy, Source: c.Source("agent.policy"), Err: err}
	}
	// Sandboxes have no network (see agent.Config.Reviewer).
	return &policy.Reviewer{Policy: pol, Offline: true}, nil
}

// AgentParts are what an agent is built from besides the configuration.
type AgentParts struct {
	// Model and ModelSpec write the code (see Config.OpenModel).
	Model     llm.Provider
	ModelSpec string
	// Mode is the run's mode; empty means Agent.Mode.
	Mode agent.Mode
	// Runtime runs the code; steps mode needs an interactive one.
	Runtime sandbox.Runtime
	// Store keeps the records.
	Store agent.Store
	// Approver is asked about flagged code under ApproveAsk; without one
	// such code is rejected.
	Approver agent.Approver
	// Reviewer is the pre-flight review; nil means Config.Reviewer's.
	Reviewer *policy.Reviewer
	// Tracer and Observer are passed on to the agent.
	Tracer   trace.TracerProvider
	Observer func(agent.Event)
}

// NewAgent builds the agent from Agent and Limits and the parts given.
// A configuration it cannot use (a bad policy file, an unknown mode or
// format) matches ErrConfig.
func (c *Config) NewAgent(p AgentParts) (*agent.Agent, error) {
	a := c.Agent
	mode := p.Mode
	if mode == "" {
		mode = a.Mode
	}
	mode, err := agent.ParseMode(string(mode))
	if err != nil {
		return nil, configError{err}
	}
	cfg := agent.Config{Model: p.Model, ModelSpec: p.ModelSpec, Store: p.Store, Mode: mode, Format: a.Format,
		MaxRetries: a.MaxRetries, MaxSteps: a.MaxSteps, MaxTokens: a.MaxTokens, MaxWall: a.MaxTime,
		Limits: c.Limits, Tracer: p.Tracer, Observer: p.Observer}
	if a.MaxRetries == 0 {
		cfg.MaxRetries = -1 // the setting's 0 means no retries
	}
	if cfg.TimeoutRetries = a.TimeoutRetries; a.TimeoutRetries == 0 {
		cfg.TimeoutRetries = -1
	}
	switch a.Approve {
	case ApproveAsk:
		cfg.Approval, cfg.Approver = agent.ApproveAsk, p.Approver
		if p.Approver == nil {
			cfg.Approval = agent.ApproveNone // no one to ask: rejected
		}
	case ApproveAll:
		cfg.Approval = agent.ApproveAll
	case ApproveNone:
		cfg.Approval = agent.ApproveNone
	case ApproveDefer:
		cfg.Approval = agent.ApproveAsk // no approver: the run pauses
	default:
		return nil, &SettingError{Key: "agent.approve", Value: a.Approve, Source: c.Source("agent.approve"),
			Err: oneOf(ApproveAsk, ApproveAll, ApproveNone, ApproveDefer)(a.Approve)}
	}
	if cfg.Reviewer = p.Reviewer; cfg.Reviewer == nil {
		if cfg.Reviewer, err = c.Reviewer(); err != nil {
			return nil, err
		}
	}
	cfg.Backend = agent.RuntimeBackend{Runtime: p.Runtime}
	if mode == agent.ModeSteps {
		irt, err := Interactive(p.Runtime)
		if err != nil {
			return nil, configError{fmt.Errorf("steps mode: %w", err)}
		}
		cfg.Backend = agent.SessionBackend{Runtime: irt}
	}
	if p.Runtime != nil {
		// The model is told what the sandbox really has.
		cfg.Packages = PythonPackages(context.Background(), p.Runtime)
	}
	ag, err := agent.New(cfg)
	if err != nil {
		return nil, configError{err}
	}
	return ag, nil
}

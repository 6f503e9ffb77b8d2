package app

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server/runs"
	"github.com/coderun/coderun/store"
	"github.com/coderun/coderun/store/sqlite"
)

// RunAgents builds the agents of the server's runs API (package
// server/runs): the configuration's agent settings with the run's own
// over them, the model the run names (its keys and endpoints read through
// Getenv), code run in Runtime.
type RunAgents struct {
	Config  *Config
	Runtime sandbox.Runtime
	// Getenv reads the model's keys; nil means none.
	Getenv func(string) string
	// Tracer receives the runs' spans; nil means none.
	Tracer trace.TracerProvider
}

// Agent builds the agent of one run of st's tenant. Settings it cannot
// use are a *runs.SettingsError.
func (a RunAgents) Agent(ctx context.Context, st store.Tenant, s runs.Settings, observe func(agent.Event)) (*agent.Agent, error) {
	c := *a.Config // the settings below are the run's; the rest is shared and only read
	if s.Mode != "" {
		c.Agent.Mode = s.Mode
	}
	if s.Format != "" {
		c.Agent.Format = s.Format
	}
	switch s.Approve {
	case "", runs.ApproveDefer:
		c.Agent.Approve = ApproveDefer
	case runs.ApproveAll:
		c.Agent.Approve = ApproveAll
	case runs.ApproveNone:
		c.Agent.Approve = ApproveNone
	default:
		return nil, &runs.SettingsError{Err: fmt.Errorf("approve %q: want defer, all or none", s.Approve)}
	}
	if s.MaxRetries != nil {
		c.Agent.MaxRetries = *s.MaxRetries
	}
	if s.TimeoutRetries != nil {
		c.Agent.TimeoutRetries = *s.TimeoutRetries
	}
	if s.MaxSteps != 0 {
		c.Agent.MaxSteps = s.MaxSteps
	}
	if s.MaxTokens != 0 {
		c.Agent.MaxTokens = s.MaxTokens
	}
	if s.MaxTime != 0 {
		c.Agent.MaxTime = s.MaxTime
	}
	c.Limits = s.Limits.WithDefaults(c.Limits)
	getenv := a.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	model, spec, err := c.OpenModel(s.Model, getenv)
	if err != nil {
		return nil, &runs.SettingsError{Err: err}
	}
	ag, err := c.NewAgent(AgentParts{Model: model, ModelSpec: spec, Runtime: a.Runtime, Store: st,
		Tracer: a.Tracer, Observer: observe})
	if errors.Is(err, ErrConfig) {
		return nil, &runs.SettingsError{Err: err}
	}
	return ag, err
}

// OpenRecords opens (creating if need be) the store in Store.DataDir with
// every tenant's records, as a server needs it.
func (c *Config) OpenRecords(ctx context.Context) (*sqlite.DB, error) {
	dir, err := c.dataDir()
	if err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, dir, sqlite.Options{Lease: c.Store.Lease})
}

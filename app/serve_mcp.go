package app

import (
	"context"
	"fmt"
	"os"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/mcp"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
	"github.com/coderun/coderun/store"
)

// mcpSurface is the MCP endpoint at /mcp (package mcp): the tools of
// `coderun mcp` over Streamable HTTP, for each request's tenant, within
// the tenants' limits; ask's runs are recorded in the data directory's
// store, each tenant's own.
func mcpSurface(s *Services) (server.Surface, error) {
	c := s.Config
	db, err := c.OpenRecords(context.Background())
	if err != nil {
		return server.Surface{}, fmt.Errorf("mcp: %w", err)
	}
	s.OnClose(db.Close)
	opts := c.MCPOptions(s.Runtime, s.Sessions, func(_ context.Context, tenant string) (store.Tenant, error) {
		return db.Tenant(tenant)
	}, s.Version)
	opts.Quota, opts.Logger = s.Tenants, s.Logger
	svc, err := mcp.New(opts)
	if err != nil {
		return server.Surface{}, err
	}
	return svc.Surface(mcp.HTTPOptions{AllowedOrigins: c.Server.MCPOrigins, SessionTimeout: c.Session.IdleTimeout}), nil
}

// checkOrigins checks server.mcp_origins: each an http or https origin.
func checkOrigins(v any) error {
	for _, o := range v.([]string) {
		if err := mcp.CheckOrigin(o); err != nil {
			return err
		}
	}
	return nil
}

// MCPOptions are the MCP server's options from the configuration: one-shot
// runs with Limits, sessions with Session's defaults, ask's agent with the
// configured model (keys from the environment), policy and budgets.
func (c *Config) MCPOptions(rt sandbox.Runtime, sessions *session.Manager,
	records func(context.Context, string) (store.Tenant, error), version string) mcp.Options {
	return mcp.Options{
		Runtime: rt, Limits: c.Limits, Sessions: sessions, Records: records, Version: version,
		SessionConfig: func(lang sandbox.Language) session.Config {
			cfg := c.SessionConfig(lang)
			if lang != sandbox.Python {
				cfg.Preload = nil // preloaded modules are Python's
			}
			return cfg
		},
		Agents: func(st store.Tenant, ap agent.Approver, mode agent.Mode, observe func(agent.Event)) (*agent.Agent, error) {
			m, spec, err := c.OpenModel("", os.Getenv)
			if err != nil {
				return nil, err
			}
			return c.NewAgent(AgentParts{Model: m, ModelSpec: spec, Mode: mode, Runtime: rt, Store: st, Approver: ap, Observer: observe})
		},
	}
}

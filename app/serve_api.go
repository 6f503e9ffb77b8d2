package app

import (
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/api"
	"github.com/coderun/coderun/session"
)

// coderunAPI is coderun's own API under /v1: one-shot executions with the
// configuration's limits, sessions with its session defaults.
func coderunAPI(s *Services) (server.Surface, error) {
	c := s.Config
	a, err := api.New(api.Options{
		Runtime: s.Runtime, Runtimes: s.Runtimes, Sessions: s.Sessions, Limits: c.Limits, MaxLimits: c.Server.MaxLimits,
		Session: func(lang sandbox.Language) session.Config {
			cfg := c.SessionConfig(lang)
			if lang != sandbox.Python {
				cfg.Preload = nil // preloaded modules are Python's
			}
			return cfg
		},
		MaxIdle: c.Session.IdleTimeout, Tenants: s.Tenants, Metrics: s.Metrics, Logger: s.Logger,
	})
	if err != nil {
		return server.Surface{}, err
	}
	s.OnClose(a.Close)
	return a.Surface(), nil
}

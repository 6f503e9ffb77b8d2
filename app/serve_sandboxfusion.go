package app

import (
	"os"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/sandboxfusion"
)

// sandboxFusion is SandboxFusion's /run_code, /run_jupyter and /v1/ping
// (server/sandboxfusion): one-shot runs with the configuration's limits,
// Jupyter cells in a fresh Python session with its session defaults; it
// authenticates on its own, with the server's keys and the keyless tenant
// of server.sandboxfusion_tenant, and waits for its tenants' limits (their
// executions, their request rate, and for /run_jupyter their sessions)
// rather than answer 429.
func sandboxFusion(s *Services) (server.Surface, error) {
	c := s.Config
	h, err := sandboxfusion.New(sandboxfusion.Options{
		Runtime: s.Runtime, Sessions: s.Sessions, Session: c.SessionConfig(sandbox.Python), Limits: c.Limits,
		Keys: s.Auth.Keys, InsecureLocal: s.Auth.InsecureLocal, KeylessTenant: c.Server.SandboxFusionTenant,
		Admit:          sandboxfusion.TenantAdmit(s.Tenants),
		ReserveSession: sandboxfusion.TenantSessions(s.Tenants),
		PodName:        os.Getenv("MY_POD_NAME"), // as SandboxFusion reports it
	})
	if err != nil {
		return server.Surface{}, err
	}
	return h.Surface(), nil
}

package app

import (
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/server/e2b"
)

// e2bSurface is E2B compatibility (server/e2b): E2B's control plane, code
// interpreter and envd on the main listener, and the interpreter and envd
// on the loopback ports of the SDK's debug mode (server.e2b_debug_*).
func e2bSurface(s *Services) (server.Surface, error) {
	svc, err := e2b.New(e2b.Options{Manager: s.Sessions, Keys: s.Auth.Keys, InsecureLocal: s.Auth.InsecureLocal,
		Session: s.Config.SessionConfig(sandbox.Python), Tenants: s.Tenants})
	if err != nil {
		return server.Surface{}, err
	}
	s.OnClose(svc.Close)
	sc := s.Config.Server
	s.AddListener("e2b interpreter (debug mode)", sc.E2BDebugInterpreter, svc.Interpreter())
	s.AddListener("e2b envd (debug mode)", sc.E2BDebugEnvd, svc.Envd())
	return svc.Surface(), nil
}

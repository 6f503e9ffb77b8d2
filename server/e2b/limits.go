package e2b

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/coderun/coderun/server"
)

// The tenants' limits (Options.Tenants) apply as on coderun's own API:
// each request counts against the tenant's rate, each session (a sandbox,
// or one of its further contexts) against its sessions, each execution or
// command against its executions. Beyond them: 429 with Retry-After.

func noop() {}

// allow counts a request of tenant; beyond its rate it answers 429 and
// returns false. rpc answers in Connect's shape.
func (s *Service) allow(w http.ResponseWriter, tenant string, rpc bool) bool {
	if s.opts.Tenants == nil {
		return true
	}
	err := s.opts.Tenants.Allow(tenant)
	if err == nil {
		return true
	}
	writeLimit(w, err, rpc)
	return false
}

// reserveSession counts one more session of tenant.
func (s *Service) reserveSession(tenant string) (func(), error) {
	if s.opts.Tenants == nil {
		return noop, nil
	}
	return s.opts.Tenants.ReserveSession(tenant)
}

// startExecution counts one more running execution of tenant.
func (s *Service) startExecution(tenant string) (func(), error) {
	if s.opts.Tenants == nil {
		return noop, nil
	}
	return s.opts.Tenants.StartExecution(tenant)
}

// writeLimit answers a request beyond a limit: 429 with Retry-After.
func writeLimit(w http.ResponseWriter, err error, rpc bool) {
	var le *server.LimitError
	if errors.As(err, &le) {
		secs := int(le.RetryAfter.Seconds())
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	if rpc {
		writeRPCError(w, &rpcError{Code: "resource_exhausted", Message: err.Error()})
		return
	}
	writeJSONError(w, http.StatusTooManyRequests, err.Error())
}

// isLimit reports whether err is a tenant's limit.
func isLimit(err error) bool {
	var le *server.LimitError
	return errors.As(err, &le)
}

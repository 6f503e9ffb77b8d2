// Package api is coderun's own HTTP API, mounted by package server under
// /v1: one-shot executions and notebook sessions (create, list, get,
// delete; execute a cell, its outputs streamed as Server-Sent Events or
// answered at once; interrupt; restart; files in and out; the notebook),
// every session its tenant's. Its routes are described by the OpenAPI
// document it contributes (Doc), which the tests hold it to.
package api

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// Options are what the API is built from.
type Options struct {
	// Runtime runs one-shot executions and (through Sessions) sessions
	// whose request names no runtime.
	Runtime sandbox.Runtime
	// Runtimes are the runtimes a request may name in its "runtime", by
	// name (Runtime's may be among them); nil: Runtime alone. A session
	// on one of them is created in its sandbox by Sessions.CreateOn.
	Runtimes map[string]sandbox.Runtime
	// Sessions keeps the sessions of every tenant.
	Sessions *session.Manager
	// Limits are the defaults of a one-shot execution's limits (the
	// request's zero fields).
	Limits sandbox.Limits
	// MaxLimits are the most a session's limits and a cell's timeout may
	// be (a zero field: sandbox.MaxLimits); the runtime bounds the rest.
	MaxLimits sandbox.Limits
	// Session makes a session's configuration in lang from the server's
	// defaults; the request's limits and files are laid over it.
	Session func(lang sandbox.Language) session.Config
	// MaxIdle bounds a session's idle timeout (the Manager's own);
	// a request may ask for a shorter one. Zero: 30 minutes.
	MaxIdle time.Duration
	// Tenants enforces the per-tenant limits on executions and sessions.
	Tenants *server.Tenants
	// Metrics count executions and sandbox starts; nil: none.
	Metrics *server.Metrics
	// Logger logs what happens besides requests; nil discards.
	Logger *slog.Logger
}

// API serves coderun's own routes. Build it with New.
type API struct {
	opts Options
	mux  *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*tracked // open sessions made through the API, by id

	stop chan struct{}
	wg   sync.WaitGroup
}

// tracked is what the API keeps of a session: the tenant's place it holds
// and its own idle timeout.
type tracked struct {
	tenant  string
	release func()
	idle    time.Duration
}

// route is one of the API's routes.
type route struct {
	pattern string
	handle  http.HandlerFunc
}

// New builds the API. Close stops its background work.
func New(opts Options) (*API, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Tenants == nil {
		opts.Tenants = server.NewTenants(server.TenantLimits{})
	}
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = 30 * time.Minute
	}
	if opts.Session == nil {
		opts.Session = func(lang sandbox.Language) session.Config { return session.Config{Language: lang} }
	}
	a := &API{opts: opts, mux: http.NewServeMux(), sessions: map[string]*tracked{}, stop: make(chan struct{})}
	for _, r := range a.routes() {
		a.mux.HandleFunc(r.pattern, r.handle)
	}
	if opts.Metrics != nil {
		if err := opts.Metrics.AddGauge("coderun_sessions_open", "Sessions open through coderun's API.", nil, func() float64 {
			a.mu.Lock()
			defer a.mu.Unlock()
			return float64(len(a.sessions))
		}); err != nil {
			return nil, err
		}
	}
	a.wg.Add(1)
	go a.reap()
	return a, nil
}

// routes is every route of the API; Doc documents each of them.
func (a *API) routes() []route {
	return []route{
		{"POST /v1/exec", a.exec},
		{"POST /v1/sessions", a.createSession},
		{"GET /v1/sessions", a.listSessions},
		{"GET /v1/sessions/{id}", a.getSession},
		{"DELETE /v1/sessions/{id}", a.deleteSession},
		{"POST /v1/sessions/{id}/execute", a.execute},
		{"POST /v1/sessions/{id}/interrupt", a.interrupt},
		{"POST /v1/sessions/{id}/restart", a.restart},
		{"GET /v1/sessions/{id}/cells", a.cells},
		{"GET /v1/sessions/{id}/files", a.listFiles},
		{"GET /v1/sessions/{id}/files/{path...}", a.download},
		{"PUT /v1/sessions/{id}/files/{path...}", a.upload},
		{"GET /v1/sessions/{id}/notebook", a.notebook},
	}
}

// Surface is the API as the server mounts it.
func (a *API) Surface() server.Surface {
	var patterns []string
	for _, r := range a.routes() {
		patterns = append(patterns, r.pattern)
	}
	return server.Surface{Name: "api", Patterns: patterns, Handler: a.mux, OpenAPI: Doc()}
}

// ServeHTTP serves the API's routes (the server authenticates first).
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Close stops the API's reaper of idle sessions. The sessions themselves
// are the Manager's to close.
func (a *API) Close() error {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	a.wg.Wait()
	return nil
}

// tenant is the request's tenant, set by the server's authentication.
func tenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	t, ok := server.TenantFrom(r.Context())
	if !ok {
		server.WriteError(w, http.StatusUnauthorized, server.CodeAuth, "the request was not authenticated")
	}
	return t, ok
}

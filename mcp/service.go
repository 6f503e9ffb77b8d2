package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/coderun/coderun/agent"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
	"github.com/coderun/coderun/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options are what a [Service] is built from. Runtime and Sessions are
// required; the agent's tools need Records and Agents.
type Options struct {
	// Runtime runs run_code's one-shot programs, each in a fresh sandbox.
	Runtime sandbox.Runtime
	// Limits bound a one-shot run; zero fields take sandbox.DefaultLimits'.
	Limits sandbox.Limits
	// Sessions keeps the sessions of every tenant.
	Sessions *session.Manager
	// SessionConfig is the configuration of a new session in a language;
	// nil means session.Config{Language: lang}.
	SessionConfig func(lang sandbox.Language) session.Config
	// Records opens a tenant's run records, for the agent's tools and the
	// run resources; nil leaves them out. The Service does not close them.
	Records func(ctx context.Context, tenant string) (store.Tenant, error)
	// Agents builds an agent that records into records, asks approver
	// about flagged code, runs in mode ("" the configured one) and tells
	// observer of each step. An error (no model configured, say) is shown
	// to the client as the result of ask. Nil leaves ask out.
	Agents func(records store.Tenant, approver agent.Approver, mode agent.Mode, observer func(agent.Event)) (*agent.Agent, error)
	// Quota, if set, bounds each tenant's use: a program, a cell or an
	// agent run starts only with its leave (StartExecution), and a session
	// is created only with a place (ReserveSession), given back when the
	// session is closed or gone. *server.Tenants is one.
	Quota Quota
	// Version is the server's version, as told to clients.
	Version string
	// Logger logs the SDK's and the Service's troubles; nil: none.
	Logger *slog.Logger
}

// Quota bounds what a tenant may use at once; a refusal's error says so
// (and when to retry).
type Quota interface {
	StartExecution(tenant string) (release func(), err error)
	ReserveSession(tenant string) (release func(), err error)
}

// Service is coderun's MCP server: one SDK server per tenant, sharing the
// runtime, the session manager and the records. It is safe for concurrent
// use.
type Service struct {
	opts Options

	hangups *hangups // the HTTP requests calls arrived on

	mu      sync.Mutex
	tenants map[string]*tenant
}

// tenant is one tenant's MCP server and state.
type tenant struct {
	name     string
	sessions *session.Sessions
	names    *names
	server   *sdk.Server
	svc      *Service

	listed listed // what resources/list shows (listed.go)

	mu     sync.Mutex
	places map[string]func() // session id -> its place in the Quota
}

// startExecution asks the Quota for leave to run; release ends it.
func (t *tenant) startExecution() (release func(), err error) {
	if t.svc.opts.Quota == nil {
		return func() {}, nil
	}
	return t.svc.opts.Quota.StartExecution(t.name)
}

// reserveSession asks the Quota for a place for a new session, first giving
// back the places of sessions that are gone (closed, evicted).
func (t *tenant) reserveSession() (release func(), err error) {
	if t.svc.opts.Quota == nil {
		return func() {}, nil
	}
	open := map[string]bool{}
	for _, in := range t.sessions.List() {
		open[in.ID] = true
	}
	t.mu.Lock()
	for id, release := range t.places {
		if !open[id] {
			release()
			delete(t.places, id)
		}
	}
	t.mu.Unlock()
	return t.svc.opts.Quota.ReserveSession(t.name)
}

// hold keeps a session's place until it is released (closeSession).
func (t *tenant) hold(id string, release func()) {
	t.mu.Lock()
	t.places[id] = release
	t.mu.Unlock()
}

// releaseSession gives back a closed session's place.
func (t *tenant) releaseSession(id string) {
	t.mu.Lock()
	release := t.places[id]
	delete(t.places, id)
	t.mu.Unlock()
	if release != nil {
		release()
	}
}

// New checks opts and returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Runtime == nil {
		return nil, errors.New("mcp: no runtime for one-shot runs")
	}
	if opts.Sessions == nil {
		return nil, errors.New("mcp: no session manager")
	}
	if opts.SessionConfig == nil {
		opts.SessionConfig = func(lang sandbox.Language) session.Config { return session.Config{Language: lang} }
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{opts: opts, hangups: newHangups(), tenants: map[string]*tenant{}}, nil
}

// Server returns the MCP server of tenant (made on first use): its tools
// and resources act on that tenant's sessions and records only.
func (s *Service) Server(name string) (*sdk.Server, error) {
	t, err := s.tenant(name)
	if err != nil {
		return nil, err
	}
	return t.server, nil
}

func (s *Service) tenant(name string) (*tenant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tenants[name]; ok {
		return t, nil
	}
	sess, err := s.opts.Sessions.Tenant(name)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	t := &tenant{name: name, sessions: sess, names: newNames(), svc: s, places: map[string]func(){},
		listed: listed{uris: map[string]sdk.Resource{}}}
	t.server = sdk.NewServer(&sdk.Implementation{Name: "coderun", Title: "coderun code interpreter", Version: s.opts.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: s.opts.Logger, PageSize: listPageSize})
	t.server.AddReceivingMiddleware(s.hangups.middleware, t.listedMiddleware)
	t.addCodeTools()
	t.addSessionTools()
	t.addFileTools()
	if s.opts.Records != nil {
		t.addRunTools()
	}
	t.addResources()
	s.tenants[name] = t
	return t, nil
}

// Run serves tenant's MCP server over transport (&mcp.StdioTransport{}
// for `coderun mcp`) until the client disconnects or ctx is done.
func (s *Service) Run(ctx context.Context, tenant string, transport sdk.Transport) error {
	srv, err := s.Server(tenant)
	if err != nil {
		return err
	}
	if err := srv.Run(ctx, transport); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// instructions tell the client's model how the tools fit together.
const instructions = `coderun runs code in isolated sandboxes (no network) and reports exactly what happened.
- run_code: a program once, in a fresh sandbox; nothing is kept.
- session_run: a cell in a named session (created on first use): variables, imports and files persist between calls, as in a notebook. Plots (matplotlib) come back as PNG images.
- session_create, session_list, session_restart, session_close manage sessions; files_upload, files_list, files_read move files in and out of a session's workspace (/work).
- ask hands a whole task to coderun's agent, which writes and runs code itself; run_list lists recent runs (by status), run_get reads a run's result; run_decide approves or rejects code a run awaits approval for.
A failed program (an exception, a time limit) is a tool result marked as an error with the traceback: read it and fix the code.`

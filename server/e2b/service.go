package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// E2B's ports, as the SDK names them in the E2b-Sandbox-Port header.
const (
	InterpreterPort = "49999"
	EnvdPort        = "49983"
)

// EnvdVersion is the envd version sandboxes report: recent enough that the
// SDK uses no legacy path (user names, basic auth), and below the versions
// of features not served (file metadata, watch events with entries).
const EnvdVersion = "0.5.7"

// Options configure a Service.
type Options struct {
	// Manager keeps the sessions every sandbox and context is made of.
	Manager *session.Manager
	// Keys maps API keys to tenants; nil when the server has none.
	Keys server.Keys
	// InsecureLocal serves requests that carry no credentials as
	// server.DefaultTenant (coderun serve --insecure-local).
	InsecureLocal bool
	// Session is the configuration every session starts from (limits,
	// preloaded modules); its Language is set per context.
	Session session.Config
	// Tenants, if set, enforces the tenants' limits (requests per second,
	// sessions and executions at once), as on coderun's own API.
	Tenants *server.Tenants
	// MaxCommands bounds the commands running at once in one sandbox,
	// each a program with the sandbox's limits of its own (default
	// DefaultMaxCommands); beyond it, starting one answers
	// resource_exhausted.
	MaxCommands int
}

// DefaultMaxCommands is Options.MaxCommands' default.
const DefaultMaxCommands = 32

// Service serves E2B's control plane, code interpreter and envd. It is
// safe for concurrent use.
type Service struct {
	opts        Options
	reg         *registry
	control     http.Handler
	interpreter http.Handler
	envd        http.Handler
}

// New returns a Service over opts.Manager.
func New(opts Options) (*Service, error) {
	if opts.Manager == nil {
		return nil, errors.New("e2b: a session manager is required")
	}
	if opts.Keys == nil && !opts.InsecureLocal {
		return nil, errors.New("e2b: without API keys the service serves only an insecure local server")
	}
	if opts.MaxCommands <= 0 {
		opts.MaxCommands = DefaultMaxCommands
	}
	s := &Service{opts: opts, reg: newRegistry()}
	s.control = s.controlRoutes()
	s.interpreter = finalAnswer(s.sandboxAuth(s.interpreterRoutes(), false))
	s.envd = finalAnswer(s.sandboxAuth(s.envdRoutes(), true))
	return s, nil
}

// Surface is the service as mounted on coderun's main listener: the control
// plane, and the interpreter and envd routes that E2B_SANDBOX_URL reaches.
// It authenticates requests itself, in E2B's ways.
func (s *Service) Surface() server.Surface {
	return server.Surface{
		Name: "e2b",
		Patterns: []string{
			"/v2/sandboxes", "/v2/sandboxes/", "/sandboxes", "/sandboxes/",
			"/execute", "/contexts", "/contexts/", "/health",
			"/files", "/filesystem.Filesystem/", "/process.Process/",
		},
		Handler: http.HandlerFunc(s.serveMain),
		OwnAuth: true,
	}
}

// Interpreter is the handler of the debug-mode interpreter listener
// (E2B's port 49999).
func (s *Service) Interpreter() http.Handler { return s.interpreter }

// Envd is the handler of the debug-mode envd listener (E2B's port 49983).
func (s *Service) Envd() http.Handler { return s.envd }

// Close stops every sandbox.
func (s *Service) Close() error {
	s.closeAll()
	return nil
}

// serveMain tells the three surfaces apart on one listener: by the
// E2b-Sandbox-Port header, and without it by the path.
func (s *Service) serveMain(w http.ResponseWriter, r *http.Request) {
	switch r.Header.Get("E2b-Sandbox-Port") {
	case InterpreterPort:
		s.interpreter.ServeHTTP(w, r)
		return
	case EnvdPort:
		s.envd.ServeHTTP(w, r)
		return
	case "":
	default:
		writeJSONError(w, http.StatusBadGateway, fmt.Sprintf("port %s of the sandbox serves nothing: coderun serves the interpreter (%s) and envd (%s)", r.Header.Get("E2b-Sandbox-Port"), InterpreterPort, EnvdPort))
		return
	}
	p := r.URL.Path
	switch {
	case p == "/execute" || p == "/contexts" || strings.HasPrefix(p, "/contexts/"):
		s.interpreter.ServeHTTP(w, r)
	case p == "/files" || strings.HasPrefix(p, "/filesystem.Filesystem/") || strings.HasPrefix(p, "/process.Process/"):
		s.envd.ServeHTTP(w, r)
	case p == "/health":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`"OK"`))
	default:
		s.control.ServeHTTP(w, r)
	}
}

// writeJSONError answers with E2B's error body {"code", "message"}.
func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{status, msg})
}

// keyTenant is the tenant of the API key a request presents (X-API-Key, or
// a bearer token), or the default tenant for a request without any on an
// insecure local server (see server.Auth.Request: an unknown or malformed
// key is refused whatever the mode).
func (s *Service) keyTenant(r *http.Request) (string, bool) {
	t, err := server.Auth{Keys: s.opts.Keys, InsecureLocal: s.opts.InsecureLocal}.Request(r)
	return t, err == nil
}

type boxCtxKey struct{}

// boxFrom returns the sandbox sandboxAuth found for the request.
func boxFrom(ctx context.Context) *box {
	b, _ := ctx.Value(boxCtxKey{}).(*box)
	return b
}

// sandboxAuth finds the sandbox a request is for (E2b-Sandbox-Id; the
// debug sandbox without it) and checks the request may use it: its envd
// access token (X-Access-Token, which the SDK sends to envd and on
// /execute) or its interpreter's (E2B-Traffic-Access-Token, which the SDK
// sends on every interpreter call), or an API key of its tenant, or no
// credentials on an insecure local server. rpc says the handler answers
// Connect calls, whose errors have Connect's shape.
func (s *Service) sandboxAuth(next http.Handler, rpc bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(status int, code, msg string) {
			if rpc && (strings.HasPrefix(r.URL.Path, "/filesystem.") || strings.HasPrefix(r.URL.Path, "/process.")) {
				writeRPCError(w, &rpcError{Code: code, Message: msg})
				return
			}
			writeJSONError(w, status, msg)
		}
		id := r.Header.Get("E2b-Sandbox-Id")
		if id == "" {
			id = DebugSandboxID
		}
		var b *box
		tok, traffic := r.Header.Get("X-Access-Token"), false
		if tok == "" {
			tok, traffic = r.Header.Get("E2B-Traffic-Access-Token"), true
		}
		if tok != "" {
			b = s.byToken(id, tok, traffic)
			if b == nil {
				// As E2B's proxy answers for a sandbox that is not there
				// (the SDK's isRunning takes 502 for "not running").
				fail(http.StatusBadGateway, codeUnavailable, fmt.Sprintf("sandbox %s not found (or the access token is not its)", id))
				return
			}
		} else {
			tenant, ok := s.keyTenant(r)
			if !ok {
				fail(http.StatusUnauthorized, codeUnauthenticated, "missing or unknown API key or access token")
				return
			}
			var err error
			if b, err = s.lookupOrMake(r.Context(), tenant, id); err != nil {
				if errors.Is(err, errSandboxNotFound) {
					fail(http.StatusNotFound, codeNotFound, err.Error())
				} else {
					fail(http.StatusServiceUnavailable, codeUnavailable, "the sandbox could not be started: "+err.Error())
				}
				return
			}
		}
		if !s.allow(w, b.tenant, rpc && (strings.HasPrefix(r.URL.Path, "/filesystem.") || strings.HasPrefix(r.URL.Path, "/process."))) {
			return
		}
		ctx := server.WithTenant(r.Context(), b.tenant)
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, boxCtxKey{}, b)))
	})
}

// byToken finds the live sandbox id whose envd (or, with traffic, its
// interpreter's) access token is tok.
func (s *Service) byToken(id, tok string, traffic bool) *box {
	s.reg.mu.Lock()
	var found *box
	for k, b := range s.reg.boxes {
		if k.id == id && b.tokenMatches(tok, traffic) {
			found = b
			break
		}
	}
	s.reg.mu.Unlock()
	if found == nil {
		return nil
	}
	if b, err := s.lookup(found.tenant, found.id); err == nil {
		return b
	}
	return nil
}

// finalAnswer answers a request that its handler left unanswered because
// the server shut down (server.ShuttingDown): 503, in Connect's shape for
// a Connect call, else in E2B's. Debug-mode listeners have no server core
// around them to do it.
func finalAnswer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &answerWriter{ResponseWriter: w}
		next.ServeHTTP(aw, r)
		if aw.wrote || !server.ShuttingDown(r.Context()) {
			return
		}
		msg := server.ErrShutdown.Error() + ": the request was stopped"
		if strings.HasPrefix(r.URL.Path, "/filesystem.") || strings.HasPrefix(r.URL.Path, "/process.") {
			writeRPCError(w, &rpcError{Code: codeUnavailable, Message: msg})
			return
		}
		writeJSONError(w, http.StatusServiceUnavailable, msg)
	})
}

// answerWriter records whether an answer was begun.
type answerWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *answerWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *answerWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

package sandboxfusion

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
)

// Options configure the surface.
type Options struct {
	// Runtime runs /run_code's programs, one fresh sandbox each.
	Runtime sandbox.Runtime
	// Sessions runs /run_jupyter's cells, one fresh session per request
	// in the tenant's name; nil answers /run_jupyter with a SandboxError.
	Sessions *session.Manager
	// Session is the base configuration of /run_jupyter's sessions (its
	// Preload, interpreter); the request sets its limits and files.
	Session session.Config
	// Limits are the limits of a run the request does not set: all but the
	// wall time and memory SandboxFusion's requests give.
	Limits sandbox.Limits
	// MaxFileBytes bounds each fetched file (default 16 MiB): a larger one
	// is a SandboxError saying so.
	MaxFileBytes int64

	// Keys resolve the API key a request presents to its tenant.
	Keys server.Keys
	// KeylessTenant is the tenant of a request that presents no key (as
	// SandboxFusion's clients send none); empty refuses such requests
	// unless InsecureLocal.
	KeylessTenant string
	// InsecureLocal lets a request without a key in as
	// server.DefaultTenant (a server opened with --insecure-local).
	InsecureLocal bool
	// Admit, when set, is called for each run once its tenant is known,
	// and may wait (the tenant's request rate and executions at once); its
	// release is called when the run is over. An error refuses the request
	// (the client has gone, or the tenant may not run at all).
	Admit func(ctx context.Context, tenant string) (release func(), err error)
	// ReserveSession, when set, is called for each /run_jupyter request
	// once it is admitted, and may wait for a place among its tenant's
	// sessions open at once (the session it starts is one); its release
	// is called when the session is closed. An error refuses the request.
	ReserveSession func(ctx context.Context, tenant string) (release func(), err error)

	// MaxConcurrent bounds the runs at once over all tenants (default
	// four times the CPUs, at least 8: a run waiting on I/O holds no
	// CPU); runs beyond it wait their turn in the order they came.
	MaxConcurrent int
	// PodName is answered as executor_pod_name (SandboxFusion answers its
	// MY_POD_NAME); empty answers null.
	PodName string
}

// DefaultMaxFileBytes is the default bound of a fetched file.
const DefaultMaxFileBytes = 16 << 20

// Handler serves SandboxFusion's API.
type Handler struct {
	opts  Options
	mux   *http.ServeMux
	slots chan struct{}
}

// Routes are the patterns the surface serves.
var Routes = []string{"POST /run_code", "POST /run_jupyter", "GET /v1/ping"}

// New returns the surface's handler.
func New(opts Options) (*Handler, error) {
	if opts.Runtime == nil {
		return nil, errors.New("sandboxfusion: no runtime")
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = max(8, 4*runtime.NumCPU())
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	h := &Handler{opts: opts, mux: http.NewServeMux(), slots: make(chan struct{}, opts.MaxConcurrent)}
	h.mux.HandleFunc("POST /run_code", h.authenticated(h.runCode))
	h.mux.HandleFunc("POST /run_jupyter", h.authenticated(h.runJupyter))
	h.mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, "pong") })
	return h, nil
}

// ServeHTTP serves the routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Surface is the handler as a surface of the server: it authenticates in
// its own way (see the package doc).
func (h *Handler) Surface() server.Surface {
	return server.Surface{Name: "sandboxfusion", Patterns: Routes, Handler: h, OwnAuth: true, OpenAPI: Doc()}
}

// credentials returns the key a request presents: a bearer token, an
// X-API-Key header, or the password of HTTP Basic authentication (what
// Python's requests sends for a URL with user:password@).
func credentials(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, rest, _ := strings.Cut(a, " ")
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			return strings.TrimSpace(rest)
		case strings.EqualFold(scheme, "Basic"):
			if _, pass, ok := r.BasicAuth(); ok {
				return pass
			}
		}
		return ""
	}
	return r.Header.Get("X-API-Key")
}

// tenant authenticates a request: a key names its tenant; no key is the
// keyless tenant's, or refused.
func (h *Handler) tenant(r *http.Request) (string, error) {
	key := credentials(r)
	if key == "" && (r.Header.Get("Authorization") != "" || r.Header.Get("X-API-Key") != "") {
		// Credentials it cannot read are not none: never the keyless tenant's.
		return "", errors.New("malformed credentials: send Authorization: Bearer KEY, or Basic with the key as password")
	}
	if key == "" {
		switch {
		case h.opts.KeylessTenant != "":
			return h.opts.KeylessTenant, nil
		case h.opts.InsecureLocal:
			return server.DefaultTenant, nil
		}
		return "", errors.New("missing API key: send Authorization: Bearer KEY, or put the key in the URL (http://sf:KEY@host/run_code); or have the operator set a tenant for keyless SandboxFusion clients (server.sandboxfusion_tenant)")
	}
	if h.opts.Keys != nil {
		if t, ok := h.opts.Keys.Tenant(key); ok {
			return t, nil
		}
	}
	return "", errors.New("unknown API key")
}

// authenticated runs next with the request's tenant in its context.
func (h *Handler) authenticated(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, err := h.tenant(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="coderun", Basic realm="coderun"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": err.Error()})
			return
		}
		next(w, r.WithContext(server.WithTenant(r.Context(), tenant)))
	}
}

// admit waits for the run's turn: a place among MaxConcurrent, then the
// tenant's own limits (Admit). release gives both back.
func (h *Handler) admit(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a free sandbox: %w", ctx.Err())
	}
	free := func() { <-h.slots }
	if h.opts.Admit == nil {
		return free, nil
	}
	tenant, _ := server.TenantFrom(ctx)
	done, err := h.opts.Admit(ctx, tenant)
	if err != nil {
		free()
		return nil, err
	}
	return func() { done(); free() }, nil
}

// inputFiles decodes a request's files: base64 content under clean
// workspace paths; null content (and SandboxFusion's IGNORE_THIS_FILE
// names) are skipped, as SandboxFusion skips them.
func inputFiles(files map[string]*string) ([]sandbox.File, error) {
	var out []sandbox.File
	for name, content := range files {
		if content == nil || strings.Contains(name, "IGNORE_THIS_FILE") {
			continue
		}
		p, err := sandbox.CleanPath(name)
		if err != nil {
			return nil, invalid("value_error", "files", err.Error(), name)
		}
		data, err := base64.StdEncoding.DecodeString(*content)
		if err != nil {
			return nil, invalid("value_error", "files", fmt.Sprintf("the content of %s is not base64: %v", name, err), name)
		}
		out = append(out, sandbox.File{Path: p, Content: data})
	}
	return out, nil
}

// seconds is d as SandboxFusion's execution_time.
func seconds(s float64) *float64 { return &s }

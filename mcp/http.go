package mcp

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coderun/coderun/server"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure [Service.Handler].
type HTTPOptions struct {
	// AllowedOrigins are the origins ("https://app.example.com") whose
	// pages may call the endpoint from a browser, besides the server's
	// own origin. A request with any other Origin header is refused (403),
	// so that a page the user happens to visit cannot drive the server
	// (DNS rebinding, cross-site requests). Requests without an Origin
	// header (programs, not browsers) are not affected.
	AllowedOrigins []string
	// SessionTimeout closes MCP sessions idle for this long. Default 30
	// minutes; negative: never.
	SessionTimeout time.Duration
}

// Handler is the MCP endpoint over Streamable HTTP. It must be mounted
// behind the server's authentication: each request's tenant is
// [server.TenantFrom] of its context (a request without one is refused),
// and an MCP session opened by one tenant is not found by another.
// Requests arriving on a loopback address must name a loopback host, and
// an Origin header must be the server's own or an allowed one.
func (s *Service) Handler(opts HTTPOptions) http.Handler {
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 30 * time.Minute
	}
	allowed := map[string]bool{}
	for _, o := range opts.AllowedOrigins {
		allowed[normalOrigin(o)] = true
	}
	h := &httpHandler{svc: s, opts: opts, allowed: allowed, tenants: map[string]http.Handler{}}
	return h
}

// Surface is the MCP endpoint as a surface of coderun's server, at /mcp,
// authenticated by the server.
func (s *Service) Surface(opts HTTPOptions) server.Surface {
	return server.Surface{Name: "mcp", Patterns: []string{"/mcp"}, Handler: s.Handler(opts)}
}

type httpHandler struct {
	svc     *Service
	opts    HTTPOptions
	allowed map[string]bool

	mu      sync.Mutex
	tenants map[string]http.Handler // one SDK handler per tenant: sessions never cross
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if o := r.Header.Get("Origin"); o != "" && !h.originOK(o, r) {
		http.Error(w, "Forbidden: origin "+o+" is not allowed to call this MCP endpoint", http.StatusForbidden)
		return
	}
	tenant, ok := server.TenantFrom(r.Context())
	if !ok {
		http.Error(w, "Unauthorized: the MCP endpoint needs an authenticated tenant", http.StatusUnauthorized)
		return
	}
	sh, err := h.tenantHandler(tenant)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	done := h.svc.hangups.track(r)
	defer done()
	sh.ServeHTTP(w, r)
}

func (h *httpHandler) tenantHandler(tenant string) (http.Handler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sh, ok := h.tenants[tenant]; ok {
		return sh, nil
	}
	srv, err := h.svc.Server(tenant)
	if err != nil {
		return nil, err
	}
	timeout := max(h.opts.SessionTimeout, 0) // the SDK's zero is never
	sh := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{SessionTimeout: timeout, Logger: h.svc.opts.Logger})
	h.tenants[tenant] = sh
	return sh, nil
}

// originOK reports whether a browser page of origin o may call: the
// server's own origin (the host the request was sent to) or an allowed one.
func (h *httpHandler) originOK(o string, r *http.Request) bool {
	n := normalOrigin(o)
	if h.allowed[n] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return n == normalOrigin(scheme+"://"+r.Host)
}

// CheckOrigin checks an origin for HTTPOptions.AllowedOrigins:
// "http(s)://host[:port]", without a path, query or user.
func CheckOrigin(o string) error {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("origin %q: want http://host[:port] or https://host[:port]", o)
	}
	return nil
}

// normalOrigin lowercases an origin and drops a default port and a
// trailing slash.
func normalOrigin(o string) string {
	o = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
	switch {
	case strings.HasPrefix(o, "http://"):
		o = strings.TrimSuffix(o, ":80")
	case strings.HasPrefix(o, "https://"):
		o = strings.TrimSuffix(o, ":443")
	}
	return o
}

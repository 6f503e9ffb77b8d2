package server

import (
	"context"
	"net/http"
)

// DefaultTenant is the tenant of a server opened without keys
// (`coderun serve --insecure-local`): the same records the CLI writes.
const DefaultTenant = "default"

type tenantKey struct{}

// WithTenant returns a context that carries the tenant a request was
// authenticated as. The server's authentication sets it; the surfaces
// mounted on the server (coderun's API, E2B, SandboxFusion, MCP, the web
// view) read it with [TenantFrom] and never take a tenant from the request.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant ctx was authenticated as, and false when no
// authentication ran (a handler mounted without it must refuse to serve).
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok && t != ""
}

// Keys resolves an API key (as presented by a client: a bearer token,
// E2B's X-API-Key, ...) to the tenant it belongs to.
type Keys interface {
	Tenant(key string) (tenant string, ok bool)
}

// Surface is an HTTP surface mounted on the server: coderun's own API,
// the E2B and SandboxFusion compatibility endpoints, MCP, the web view.
// Patterns are net/http ServeMux patterns ("POST /run_code", "/mcp").
// Authenticated surfaces see [TenantFrom] set on every request; a surface
// that authenticates in its own protocol's way (E2B's headers) says so.
type Surface struct {
	Name     string
	Patterns []string
	Handler  http.Handler
	// OwnAuth is set when Handler authenticates requests itself (with the
	// server's Keys); otherwise the server authenticates before calling it.
	OwnAuth bool
	// OpenAPI is the surface's part of coderun's OpenAPI document; a
	// surface that serves routes under /v1 must document them all.
	OpenAPI *APIDoc
}

// Package server is coderun's HTTP server: coderun's own JSON API, the
// tenants and API keys every surface shares, and the mounting of the other
// surfaces (E2B and SandboxFusion compatibility, MCP over HTTP, the web view)
// on one listener.
package server

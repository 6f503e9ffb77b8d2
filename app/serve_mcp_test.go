package app

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/mcp/mcptest"
)

// TestServeMCPWithTheTypeScriptClient: `coderun serve` mounts the MCP
// endpoint at /mcp behind its API keys; the official TypeScript SDK's
// client runs the MCP scenario there with a tenant's key.
func TestServeMCPWithTheTypeScriptClient(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime needs root")
	}
	mcptest.NeedClient(t)
	c := Defaults(env(nil))
	c.Set("server.api_keys", testKey, Flag("--api-key"))
	c.Set("runtime.linux.pool", "0", Flag("--pool"))
	c.Set("store.data_dir", t.TempDir(), Flag("--data-dir"))
	srv, err := c.NewServer(ServeOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/mcp"
	r := mcptest.RunScenario(t, nil, "http", url, "0123456789abcdef0123")
	mcptest.CheckScenario(t, r)
}

// TestServeMCPOrigins: server.mcp_origins lets those origins' pages call
// /mcp; other origins are refused, and a value that is no origin is a
// configuration error.
func TestServeMCPOrigins(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime needs root")
	}
	c := Defaults(env(nil))
	if err := c.Set("server.mcp_origins", "ftp://files.example", Flag("x")); !errors.Is(err, ErrConfig) {
		t.Errorf("an ftp origin: %v", err)
	}
	if err := c.Set("server.mcp_origins", "https://app.example/path", Flag("x")); !errors.Is(err, ErrConfig) {
		t.Errorf("an origin with a path: %v", err)
	}
	c.Set("server.api_keys", testKey, Flag("--api-key"))
	c.Set("server.mcp_origins", "https://app.example", Flag("x"))
	c.Set("runtime.linux.pool", "0", Flag("--pool"))
	c.Set("store.data_dir", t.TempDir(), Flag("--data-dir"))
	srv, err := c.NewServer(ServeOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for origin, want := range map[string]int{"https://app.example": 200, "https://evil.example": 403, "": 200} {
		req := httptest.NewRequest("POST", "/mcp", strings.NewReader(initialize))
		req.Header.Set("Authorization", "Bearer 0123456789abcdef0123")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		srv.Server.Handler().ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("origin %q: %d, want %d: %s", origin, w.Code, want, w.Body.String())
		}
	}
}

package app

import (
	"context"
	"net"
	"os"
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

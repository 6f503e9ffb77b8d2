package mcp_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/mcp"
	"github.com/coderun/coderun/mcp/mcptest"
	"github.com/coderun/coderun/server"
	"github.com/coderun/coderun/session"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPWithTheTypeScriptClient has the official MCP TypeScript SDK's
// client call the tools over Streamable HTTP, authenticated as a tenant.
func TestHTTPWithTheTypeScriptClient(t *testing.T) {
	mcptest.NeedClient(t)
	e := newEnv(t)
	r := mcptest.RunScenario(t, nil, "http", e.srv.URL, "alice-key")
	mcptest.CheckScenario(t, r)
}

// TestHTTPTenantsAreApart: one tenant sees none of another's sessions,
// cannot reach them by id, and cannot use another's MCP session.
func TestHTTPTenantsAreApart(t *testing.T) {
	e := newEnv(t)
	alice := e.connect("alice", nil)
	bob := e.connect("bob", nil)

	if r := call(t, alice, "session_run", map[string]any{"session": "work", "code": "secret = 'alice'"}); r.IsError {
		t.Fatalf("alice: %s", text(r))
	}
	id := structured(t, call(t, alice, "session_list", map[string]any{}))["sessions"].([]any)[0].(map[string]any)["id"].(string)

	if ss, _ := structured(t, call(t, bob, "session_list", map[string]any{}))["sessions"].([]any); len(ss) != 0 {
		t.Errorf("bob lists alice's sessions: %v", ss)
	}
	if r := call(t, bob, "files_list", map[string]any{"session": id}); !r.IsError || !strings.Contains(text(r), "no such session") {
		t.Errorf("bob reads alice's session by its id: %s", text(r))
	}
	// Bob's session of the same name is his own.
	r := call(t, bob, "session_run", map[string]any{"session": "work", "code": "print(secret)"})
	if !r.IsError || !strings.Contains(text(r), "NameError") {
		t.Errorf("bob's session 'work' sees alice's variable: %s", text(r))
	}

	// Alice's MCP session id, presented with bob's key, is not found.
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`
	req, _ := http.NewRequest("POST", e.srv.URL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer bob-key")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob with alice's MCP session: %s, want 404", resp.Status)
	}
}

// TestHTTPRefusals: no tenant, a foreign origin, a rebound host name.
func TestHTTPRefusals(t *testing.T) {
	e := newEnv(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"no key", nil, "", http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer alice-key", "Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"null origin", map[string]string{"Authorization": "Bearer alice-key", "Origin": "null"}, "", http.StatusForbidden},
		{"rebound host", map[string]string{"Authorization": "Bearer alice-key"}, "evil.example", http.StatusForbidden},
		{"allowed origin", map[string]string{"Authorization": "Bearer alice-key", "Origin": "https://allowed.example"}, "", http.StatusOK},
		{"own origin", map[string]string{"Authorization": "Bearer alice-key", "Origin": e.srv.URL}, "", http.StatusOK},
		{"no origin", map[string]string{"Authorization": "Bearer alice-key"}, "", http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.srv.URL, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s, want %d", resp.Status, c.want)
			}
		})
	}
}

// TestQuota: a tenant's sessions and executions are bounded by the
// server's per-tenant limits; a closed session gives its place back.
func TestQuota(t *testing.T) {
	tenants := server.NewTenants(server.TenantLimits{Sessions: 1, Executions: 1})
	e := newEnvWith(t, func(o *mcp.Options) { o.Quota = tenants })
	cs := e.connect("alice", nil)
	if r := call(t, cs, "session_run", map[string]any{"session": "one", "code": "1"}); r.IsError {
		t.Fatalf("first session: %s", text(r))
	}
	if r := call(t, cs, "session_run", map[string]any{"session": "two", "code": "1"}); !r.IsError || !strings.Contains(text(r), "sessions") {
		t.Errorf("a second session past the limit of 1: %s", text(r))
	}
	// Another tenant has its own places.
	if r := call(t, e.connect("bob", nil), "session_run", map[string]any{"session": "one", "code": "1"}); r.IsError {
		t.Errorf("bob's first session: %s", text(r))
	}
	call(t, cs, "session_close", map[string]any{"session": "one"})
	if r := call(t, cs, "session_run", map[string]any{"session": "two", "code": "1"}); r.IsError {
		t.Errorf("a session after closing the first: %s", text(r))
	}
	// The one execution place is taken while a call runs.
	release, err := tenants.StartExecution("alice")
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, cs, "run_code", map[string]any{"code": "print(1)"}); !r.IsError || !strings.Contains(text(r), "executions") {
		t.Errorf("run_code past the executions limit: %s", text(r))
	}
	release()
	if r := call(t, cs, "run_code", map[string]any{"code": "print(1)"}); r.IsError {
		t.Errorf("run_code after: %s", text(r))
	}
}

// TestRichOutputs: an SVG display comes back as an embedded SVG resource,
// a DataFrame as its text, a value as the result.
func TestRichOutputs(t *testing.T) {
	e := newEnv(t)
	cs := e.connect("alice", nil)
	r := call(t, cs, "session_run", map[string]any{"session": "rich", "code": "from IPython.display import SVG, display\n" +
		"display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><rect width=\"10\" height=\"10\"/></svg>'))\n" +
		"import pandas as pd\ndisplay(pd.DataFrame({'x': [1, 2]}))\n6 * 7"})
	if r.IsError {
		t.Fatalf("rich outputs: %s", text(r))
	}
	var svg *sdk.EmbeddedResource
	for _, c := range r.Content {
		if er, ok := c.(*sdk.EmbeddedResource); ok && er.Resource.MIMEType == "image/svg+xml" {
			svg = er
		}
	}
	if svg == nil || !strings.Contains(svg.Resource.Text, "<rect") {
		t.Errorf("no SVG resource in %v", r.Content)
	}
	out := structured(t, r)
	if out["result"] != "42" || !strings.Contains(out["stdout"].(string), "x") || out["images"] != float64(1) {
		t.Errorf("structured: %v", out)
	}
}

// TestEvictedSessionIsReplaced: a session the manager evicted (idle) is
// replaced by a new one of the same name on the next call, which says
// that the old one's state is gone.
func TestEvictedSessionIsReplaced(t *testing.T) {
	e := newEnvWith(t, func(o *mcp.Options) {
		mgr := session.NewManager(runtimeFor(t), session.ManagerOptions{IdleTimeout: 300 * time.Millisecond})
		t.Cleanup(func() { mgr.Close() })
		o.Sessions = mgr
	})
	cs := e.connect("alice", nil)
	call(t, cs, "session_run", map[string]any{"session": "idle", "code": "v = 1"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		ss, _ := structured(t, call(t, cs, "session_list", map[string]any{}))["sessions"].([]any)
		if len(ss) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session was never evicted: %v", ss)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r := call(t, cs, "session_run", map[string]any{"session": "idle", "code": "print(v)"})
	out := structured(t, r)
	if !r.IsError || out["created"] != true || !strings.Contains(text(r), "NameError") || !strings.Contains(out["note"].(string), "evicted") {
		t.Errorf("after the eviction: %s %v", text(r), out)
	}
}

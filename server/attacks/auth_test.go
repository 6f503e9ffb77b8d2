package attacks

import (
	"net/http"
	"testing"
)

// TestKeysBindInsecureLocal: a server opened for local tools without keys
// (--insecure-local) that also has keys configured lets a request with no
// credentials in as the default tenant, as it should; but a request that
// presents credentials is a claim to be someone, and one with an unknown
// key, a key in another scheme, or an empty one must not fall back to the
// default tenant (E2B did: an unknown X-API-Key was the default tenant's,
// and on every surface an Authorization the server could not read passed
// for none). Each such request is 401 on every surface: coderun's API,
// E2B's control plane and its envd (main and debug listeners),
// SandboxFusion and MCP.
func TestKeysBindInsecureLocal(t *testing.T) {
	tg := serve(t, mode{insecureLocal: true, set: map[string]string{"server.api_keys": "alice:" + aliceKey + ",bob:" + bobKey}})
	mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attack","version":"1"}}}`
	surfaces := []struct {
		name string
		r    req
	}{
		{"coderun API", req{method: "GET", url: tg.url + "/v1/sessions"}},
		{"E2B control plane", req{method: "GET", url: tg.url + "/v2/sandboxes"}},
		{"E2B envd (debug listener)", req{method: "GET", url: tg.envd + "/files?path=/home/user/nothing.txt"}},
		{"E2B envd (main listener)", req{method: "GET", url: tg.url + "/files?path=/home/user/nothing.txt", header: map[string]string{"E2b-Sandbox-Port": "49983"}}},
		{"SandboxFusion", req{method: "POST", url: tg.url + "/run_code", body: map[string]any{"code": "print(1)", "language": "python"}}},
		{"MCP", req{method: "POST", url: tg.url + "/mcp", body: mcpInit,
			header: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}}},
	}
	for _, creds := range []map[string]string{
		{"X-API-Key": "nobody-0123456789abcdef"},
		{"Authorization": "Bearer nobody-0123456789abcdef"},
		{"Authorization": "Bearer " + aliceKey + "x"},
		{"Authorization": "Digest " + aliceKey},
		{"Authorization": "Bearer"},
		{"Authorization": "Token " + aliceKey},
	} {
		for _, sf := range surfaces {
			r := sf.r
			h := map[string]string{}
			for k, v := range r.header {
				h[k] = v
			}
			for k, v := range creds {
				h[k] = v
			}
			r.header = h
			if a := tg.do(t, r); a.status != http.StatusUnauthorized {
				t.Errorf("%s with %v: %s (want 401)", sf.name, creds, a)
			}
		}
	}
	// Without credentials, the default tenant; with a key, its own.
	for _, key := range []string{"", aliceKey} {
		if a := tg.do(t, req{method: "GET", url: tg.url + "/v1/sessions", key: key}); a.status != http.StatusOK {
			t.Errorf("key %q: %s (want 200)", key, a)
		}
		h := map[string]string{}
		if key != "" {
			h["X-API-Key"] = key
		}
		if a := tg.do(t, req{method: "GET", url: tg.url + "/v2/sandboxes", header: h}); a.status != http.StatusOK {
			t.Errorf("E2B, key %q: %s (want 200)", key, a)
		}
	}
}

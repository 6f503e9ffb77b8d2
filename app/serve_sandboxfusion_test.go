package app

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// coderun serve mounts SandboxFusion's /run_code: a keyless request runs
// as server.sandboxfusion_tenant, a key presented as verl's URL carries it
// (user:KEY@, Basic) is its tenant's, and an unknown one is refused.
func TestServeSandboxFusion(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime needs root")
	}
	c := Defaults(env(nil))
	c.Set("server.api_keys", testKey, Flag("x"))
	c.Set("runtime.linux.pool", "0", Flag("--pool"))
	c.Set("store.data_dir", t.TempDir(), Flag("--data-dir"))
	if err := c.Set("server.sandboxfusion_tenant", "bad tenant", Flag("--sandboxfusion-tenant")); err == nil {
		t.Error("a tenant name with a space was accepted")
	}
	if err := c.Set("server.sandboxfusion_tenant", "rl", Flag("--sandboxfusion-tenant")); err != nil {
		t.Fatal(err)
	}
	srv, err := c.NewServer(ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Server.Handler()
	body := `{"compile_timeout": 10, "run_timeout": 10, "code": "print(6 * 7)", "stdin": null, "memory_limit_MB": 1024, "language": "python", "files": {}, "fetch_files": []}`
	for _, c := range []struct {
		name, user, pass string
		code             int
	}{
		{"keyless", "", "", 200},
		{"key in the URL", "sf", "0123456789abcdef0123", 200},
		{"unknown key", "sf", "nope", 401},
	} {
		req := httptest.NewRequest("POST", "/run_code", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var resp struct {
			Status    string `json:"status"`
			RunResult struct {
				Stdout string `json:"stdout"`
			} `json:"run_result"`
		}
		if w.Code != c.code {
			t.Errorf("%s: HTTP %d, want %d: %s", c.name, w.Code, c.code, w.Body)
			continue
		}
		if c.code == 200 {
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Status != "Success" || resp.RunResult.Stdout != "42\n" {
				t.Errorf("%s: %v %s", c.name, err, w.Body)
			}
		}
	}
}

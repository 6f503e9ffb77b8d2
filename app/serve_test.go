package app

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/server"
)

const testKey = "alice:0123456789abcdef0123"

func TestServeRefusesWithoutKeys(t *testing.T) {
	c := Defaults(env(nil))
	_, err := c.NewServer(ServeOptions{})
	if !errors.Is(err, ErrConfig) || !errors.Is(err, server.ErrNoKeys) || !strings.Contains(err.Error(), EnvAPIKeys) {
		t.Fatalf("no keys: %v", err)
	}
	c.Set("server.insecure_local", "true", Flag("--insecure-local"))
	c.Set("server.addr", "0.0.0.0:8080", Flag("--addr"))
	if _, err := c.NewServer(ServeOptions{}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("insecure local mode on 0.0.0.0: %v", err)
	}
}

func TestServeKeysSettings(t *testing.T) {
	c, err := Load(LoadOptions{Getenv: env(map[string]string{EnvAPIKeys: testKey + ", bob:sha256:" + strings.Repeat("ab", 32)})})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Server.APIKeys) != 2 || c.Source("server.api_keys").Kind != FromEnv {
		t.Fatalf("keys %q from %s", c.Server.APIKeys, c.Source("server.api_keys"))
	}
	for _, e := range c.Entries() {
		if e.Key == "server.api_keys" {
			shown := strings.Join(e.Value.([]string), ",")
			if strings.Contains(shown, "0123456789abcdef0123") || !strings.Contains(shown, "alice:sha256:") {
				t.Errorf("the configuration shows the keys as %q", shown)
			}
		}
	}
	for _, bad := range []string{"alice", "alice:short", "a b:0123456789abcdef0123"} {
		if err := c.Set("server.api_keys", bad, Flag("x")); !errors.Is(err, ErrConfig) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	if err := c.Set("server.addr", "nohost", Flag("--addr")); err == nil {
		t.Error("an address without a port was accepted")
	}
}

// TestEveryRouteDocumented holds every surface mounted by `coderun serve`
// to the OpenAPI document: each route it serves under /v1 is documented
// with its method, and each documented /v1 operation is served. A surface
// added to Surfaces without documenting its routes fails here.
func TestEveryRouteDocumented(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime needs root")
	}
	c := Defaults(env(nil))
	c.Set("server.insecure_local", "true", Flag("--insecure-local"))
	c.Set("runtime.linux.pool", "0", Flag("--pool"))
	c.Set("store.data_dir", t.TempDir(), Flag("--data-dir"))
	srv, err := c.NewServer(ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	w := httptest.NewRecorder()
	srv.Server.Handler().ServeHTTP(w, httptest.NewRequest("GET", "http://localhost/openapi.json", nil))
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("document: %v, openapi %q", err, doc.OpenAPI)
	}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options"}
	served := map[string]bool{} // "get /v1/x/{id}"
	for _, sf := range srv.Surfaces {
		for _, p := range sf.Patterns {
			method, path, ok := strings.Cut(p, " ")
			if !ok {
				method, path = "", p
			}
			if !strings.HasPrefix(path, "/v1/") && path != "/v1" {
				continue
			}
			path = strings.ReplaceAll(path, "...}", "}")
			item, documented := doc.Paths[path]
			if !documented {
				t.Errorf("surface %s serves %q, which /openapi.json does not document", sf.Name, p)
				continue
			}
			if method == "" {
				for _, m := range methods {
					if item[m] != nil {
						served[m+" "+path] = true
					}
				}
				continue
			}
			m := strings.ToLower(method)
			if item[m] == nil {
				t.Errorf("surface %s serves %q: /openapi.json documents %s without %s", sf.Name, p, path, method)
			}
			served[m+" "+path] = true
		}
	}
	for path, item := range doc.Paths {
		if !strings.HasPrefix(path, "/v1") {
			continue
		}
		for m, op := range item {
			if !slices.Contains(methods, m) {
				continue
			}
			if !served[m+" "+path] {
				t.Errorf("/openapi.json documents %s %s, which no surface serves", strings.ToUpper(m), path)
			}
			if o, _ := op.(map[string]any); o["responses"] == nil {
				t.Errorf("%s %s has no responses", strings.ToUpper(m), path)
			}
		}
	}
	if len(served) < 10 {
		t.Errorf("only %d operations found under /v1", len(served))
	}
}

// coderun serve forks sandboxes from a zygote by default only when it runs
// one tenant's code: forks of a zygote share its ASLR layout, canary and
// hash secret. An operator's setting wins either way.
func TestServeZygoteOnlyForOneTenant(t *testing.T) {
	bob := "bob:" + strings.Repeat("b", 32)
	for _, tc := range []struct {
		name string
		env  map[string]string
		set  map[string]string
		want bool
	}{
		{"insecure local", nil, map[string]string{"server.insecure_local": "true"}, true},
		{"one tenant's keys", map[string]string{EnvAPIKeys: testKey + ",alice:" + strings.Repeat("c", 32)}, nil, true},
		{"two tenants", map[string]string{EnvAPIKeys: testKey + "," + bob}, nil, false},
		{"keys and insecure local", map[string]string{EnvAPIKeys: bob}, map[string]string{"server.insecure_local": "true"}, false},
		{"a key and SandboxFusion's keyless tenant", map[string]string{EnvAPIKeys: bob}, map[string]string{"server.sandboxfusion_tenant": "rl"}, false},
		{"two tenants, zygote set", map[string]string{EnvAPIKeys: testKey + "," + bob}, map[string]string{"runtime.linux.zygote": "true"}, true},
		{"one tenant, zygote off", nil, map[string]string{"server.insecure_local": "true", "runtime.linux.zygote": "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(LoadOptions{Getenv: env(tc.env)})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.set {
				if err := c.Set(k, v, Flag("--"+k)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.SetServeDefaults(); err != nil {
				t.Fatal(err)
			}
			s := c.RuntimeOptions().(*linux.Settings)
			if s.Zygote != tc.want || s.Pool != 4 || c.Server.SessionPool != 2 {
				t.Errorf("zygote %v (want %v), pool %d, session pool %d", s.Zygote, tc.want, s.Pool, c.Server.SessionPool)
			}
		})
	}
}

// The default request rate lets one tenant's SandboxFusion client past
// the /run_code target (150 runs a second): a second's worth of 150
// requests, at once, are all allowed (at 100 a second, the old default,
// the 101st waited).
func TestServeDefaultRateAllowsTheRunCodeTarget(t *testing.T) {
	c, err := Load(LoadOptions{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	tenants := server.NewTenants(c.Server.TenantLimits())
	for i := range 150 {
		if err := tenants.Allow("rl"); err != nil {
			t.Fatalf("request %d of a second: %v", i+1, err)
		}
	}
}

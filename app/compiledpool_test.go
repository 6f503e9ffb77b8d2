package app

import (
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// coderun serve keeps sandboxes ready for compiled languages
// (runtime.compiled_pool, DefaultServeCompiledPool); other commands keep
// none; an operator's setting wins, 0 turns it off, and a negative size is
// refused.
func TestServeKeepsCompiledSandboxesReady(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   string
		serve bool
		want  int
	}{
		{"serve", "", true, DefaultServeCompiledPool},
		{"serve, turned off", "0", true, 0},
		{"serve, sized", "5", true, 5},
		{"other commands", "", false, 0},
	} {
		c, err := Load(LoadOptions{Getenv: env(nil)})
		if err != nil {
			t.Fatal(err)
		}
		if tc.set != "" {
			if err := c.Set("runtime.compiled_pool", tc.set, Flag("--runtime.compiled_pool")); err != nil {
				t.Fatal(err)
			}
		}
		if tc.serve {
			c.Set("server.insecure_local", "true", Flag("--insecure-local"))
			if err := c.SetServeDefaults(); err != nil {
				t.Fatal(err)
			}
		}
		if c.Runtime.CompiledPool != tc.want {
			t.Errorf("%s: compiled pool %d, want %d", tc.name, c.Runtime.CompiledPool, tc.want)
		}
	}
	c := Defaults(env(nil))
	if err := c.Set("runtime.compiled_pool", "-1", Flag("x")); !errors.Is(err, ErrConfig) {
		t.Errorf("a negative pool: %v", err)
	}
}

// The server's runtime fills the compiled languages' pool, and /metrics
// says how many wait (coderun_compiled_pool_ready).
func TestServeFillsTheCompiledPool(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the runtime needs root")
	}
	c := Defaults(env(nil))
	for k, v := range map[string]string{"server.insecure_local": "true", "runtime.linux.pool": "0", "server.session_pool": "0",
		"runtime.compiled_pool": "1", "store.data_dir": t.TempDir()} {
		if err := c.Set(k, v, Flag("--"+k)); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := c.NewServer(ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Services.close()
	var rt sandbox.Runtime = srv.Services.Runtime
	var pr interface{ PoolReady() int }
	for pr == nil {
		if p, ok := rt.(interface{ PoolReady() int }); ok {
			pr = p
			break
		}
		u, ok := rt.(interface{ Unwrap() sandbox.Runtime })
		if !ok {
			t.Fatal("no compiled languages' pool in the server's runtime")
		}
		rt = u.Unwrap()
	}
	deadline := time.Now().Add(time.Minute)
	for pr.PoolReady() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the compiled languages' pool made no sandbox in a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	w := httptest.NewRecorder()
	srv.Services.Metrics.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(w.Body.String(), "coderun_compiled_pool_ready 1") {
		t.Errorf("/metrics has no coderun_compiled_pool_ready 1:\n%s", grepLines(w.Body.String(), "pool"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

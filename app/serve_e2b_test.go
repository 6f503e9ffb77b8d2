package app

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestServeMountsE2B: `coderun serve` mounts E2B's surface, whose control
// plane answers on the main listener (an insecure local server takes any
// E2B API key as the default tenant), and refuses debug listeners off
// loopback.
func TestServeMountsE2B(t *testing.T) {
	for _, v := range []string{"0.0.0.0:49999", "10.1.2.3:49983", "49999"} {
		if err := checkExtraListener(v); err == nil {
			t.Errorf("debug listener %q accepted", v)
		}
	}
	for _, v := range []string{"127.0.0.1:49999", "[::1]:49983", "localhost:1", "off", ""} {
		if err := checkExtraListener(v); err != nil {
			t.Errorf("debug listener %q: %v", v, err)
		}
	}
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
	names := []string{}
	for _, sf := range srv.Surfaces {
		names = append(names, sf.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "e2b") {
		t.Fatalf("surfaces %v: no e2b", names)
	}
	if len(srv.Services.listeners) != 2 {
		t.Errorf("debug listeners: %+v, want the interpreter's and envd's", srv.Services.listeners)
	}
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://localhost/v2/sandboxes", nil)
	req.Header.Set("X-API-Key", "anything")
	srv.Server.Handler().ServeHTTP(w, req)
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("GET /v2/sandboxes: %d %s", w.Code, w.Body.String())
	}
}

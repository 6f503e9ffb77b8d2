package app

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
)

// TestServerRuntimesSetting: server.runtimes takes registered runtimes
// only, and a runtime it enables that cannot start fails the server's
// start, naming the setting and the runtime.
func TestServerRuntimesSetting(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root")
	}
	c := Defaults(env(nil))
	if err := c.Set("server.runtimes", "linux,firecracker", Flag("x")); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"firecracker": want docker, gvisor, linux`) {
		t.Errorf("an unregistered runtime: %v", err)
	}
	for k, v := range map[string]string{"server.api_keys": testKey, "store.data_dir": t.TempDir(), "server.runtimes": "linux,docker",
		"runtime.docker.host": "unix:///nonexistent/docker.sock", "runtime.linux.pool": "1"} {
		if err := c.Set(k, v, Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	served, err := c.NewServer(ServeOptions{})
	var re *RuntimeError
	if err == nil {
		served.Close()
		t.Fatal("a server whose enabled docker runtime has no engine started")
	}
	if !errors.As(err, &re) || re.Runtime != "docker" || !strings.Contains(err.Error(), "server.runtimes") {
		t.Errorf("an enabled runtime that cannot start: %v (%T)", err, err)
	}
}

// TestServerRuntimesClosed: the runtimes server.runtimes enables are open
// while the server is, by name beside the configured one, and closed with
// it (a run on one afterwards is refused).
func TestServerRuntimesClosed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root")
	}
	if _, err := gvisor.FindRunsc(""); err != nil {
		t.Skipf("gvisor is absent: %v", err)
	}
	c := Defaults(env(nil))
	for k, v := range map[string]string{"server.api_keys": testKey, "store.data_dir": t.TempDir(), "server.runtimes": "gvisor",
		"runtime.linux.pool": "0", "server.session_pool": "0"} {
		if err := c.Set(k, v, Flag(k)); err != nil {
			t.Fatal(err)
		}
	}
	served, err := c.NewServer(ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rts := served.Services.Runtimes
	if len(rts) != 2 || rts["linux"] != served.Services.Runtime || rts["gvisor"] == nil {
		t.Fatalf("the server's runtimes: %v", rts)
	}
	ctx := context.Background()
	req := sandbox.Request{Language: sandbox.Python, Code: "print(1)"}
	if res, err := rts["gvisor"].Run(ctx, req); err != nil || res.Stdout != "1\n" || res.Runtime != "gvisor" {
		t.Fatalf("a run on the enabled gvisor runtime: %v %+v", err, res)
	}
	if err := served.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rts["gvisor"].Run(ctx, req); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a run on the gvisor runtime after the server closed: %v, want it refused as closed", err)
	}
}

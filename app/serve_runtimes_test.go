package app

import (
	"errors"
	"os"
	"strings"
	"testing"
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

package api_test

import (
	"os"
	"strings"
	"testing"

	"github.com/coderun/coderun/sandbox/docker"
	"github.com/coderun/coderun/sandbox/gvisor"
	"golang.org/x/sys/unix"
)

// runtimeSession is a session as the API shows it, with its runtime.
type runtimeSession struct {
	ID      string `json:"id"`
	Runtime string `json:"runtime"`
	Pooled  bool   `json:"pooled"`
}

// TestRuntimeNotEnabled: a one-shot run or a session naming a runtime the
// operator did not enable, or one that does not exist, is refused with a
// 400 naming the runtimes the server runs, and nothing runs; naming the
// server's own runtime is the same as naming none.
func TestRuntimeNotEnabled(t *testing.T) {
	h := newHarness(t, nil)
	for _, c := range []struct{ runtime, want string }{
		{"gvisor", `runtime "gvisor" is not enabled on this server: it runs linux (its operator enables runtimes with server.runtimes)`},
		{"docker", `runtime "docker" is not enabled on this server: it runs linux`},
		{"firecracker", `unknown runtime "firecracker": this server runs linux`},
	} {
		for _, op := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/exec", map[string]any{"code": "print(1)", "runtime": c.runtime}},
			{"/v1/sessions", map[string]any{"runtime": c.runtime}},
		} {
			r := h.call(aliceKey, "POST", op.path, nil, nil, op.body)
			if r.status != 400 || !strings.Contains(errMessage(t, r), c.want) {
				t.Errorf("POST %s with runtime %q: %d %s; want 400 saying %q", op.path, c.runtime, r.status, r.body, c.want)
			}
		}
	}
	var list struct{ Sessions []runtimeSession }
	h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("refused requests made sessions: %+v", list.Sessions)
	}
	var res struct{ Runtime, Stdout string }
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)", "runtime": "linux"}).json(t, &res)
	if res.Runtime != "linux" || res.Stdout != "1\n" {
		t.Errorf(`runtime "linux" named: %+v`, res)
	}
	var s runtimeSession
	h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{"language": "bash"}).json(t, &s)
	if s.Runtime != "linux" {
		t.Errorf("a session on the server's runtime says runtime %q, want linux", s.Runtime)
	}
}

// TestRuntimePerRequest: with server.runtimes enabling gvisor beside the
// default linux runtime, a one-shot run and a session each run on the
// runtime they name (on linux when they name none); the session records
// its runtime, shown by get and list.
func TestRuntimePerRequest(t *testing.T) {
	if _, err := gvisor.FindRunsc(""); err != nil {
		t.Skipf("gvisor is absent: %v", err)
	}
	perRuntime(t, "gvisor", map[string]string{"server.runtimes": "linux,gvisor"})
}

// TestRuntimePerRequestDocker is TestRuntimePerRequest with docker, on
// the Docker Engine that CODERUN_TEST_DOCKER_HOST names (scripts/docker.sh
// run starts one); skipped, saying why, without one.
func TestRuntimePerRequestDocker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("sandboxes need root")
	}
	host := os.Getenv("CODERUN_TEST_DOCKER_HOST")
	if host == "" {
		why := os.Getenv("CODERUN_TEST_DOCKER_SKIP")
		if why == "" {
			why = "CODERUN_TEST_DOCKER_HOST is not set (scripts/docker.sh run go test ./server/api starts an engine)"
		}
		t.Skip("docker is absent: " + why)
	}
	rt, err := docker.New(docker.Options{Host: host})
	if err != nil {
		t.Fatalf("the engine at %s: %v", host, err)
	}
	rt.Close()
	perRuntime(t, "docker", map[string]string{"server.runtimes": "docker", "runtime.docker.host": host})
}

// errMessage is an error answer's message.
func errMessage(t *testing.T, r response) string {
	t.Helper()
	var e struct{ Error struct{ Message string } }
	r.json(t, &e)
	return e.Error.Message
}

func perRuntime(t *testing.T, name string, settings map[string]string) {
	h := newHarness(t, settings)
	var res struct{ Runtime, Stdout, Reason string }
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(6*7)", "runtime": name}).json(t, &res)
	if res.Runtime != name || res.Stdout != "42\n" || res.Reason != "exited" {
		t.Errorf("a run naming %s: %+v", name, res)
	}
	h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(6*7)"}).json(t, &res)
	if res.Runtime != "linux" || res.Stdout != "42\n" {
		t.Errorf("a run naming no runtime: %+v", res)
	}
	r := h.call(aliceKey, "POST", "/v1/exec", nil, nil, map[string]any{"code": "print(1)", "runtime": "nope"})
	if r.status != 400 || !strings.Contains(string(r.body), "linux") || !strings.Contains(string(r.body), name) {
		t.Errorf("an unknown runtime: %d %s; want 400 naming linux and %s", r.status, r.body, name)
	}

	var s, plain runtimeSession
	h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{"runtime": name,
		"files": []map[string]any{{"path": "in.txt", "content": "on " + name}}}).json(t, &s)
	if s.Runtime != name || s.Pooled {
		t.Errorf("a session naming %s: %+v", name, s)
	}
	var cell cellJSON
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil, map[string]any{"code": "x = 6*7"}).json(t, &cell)
	h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil,
		map[string]any{"code": "print(x, open('in.txt').read())"}).json(t, &cell)
	if cell.Status != "ok" || cell.stdout() != "42 on "+name+"\n" {
		t.Errorf("the %s session's cells: %+v", name, cell)
	}
	if name == "gvisor" {
		// gVisor's Sentry is the kernel the session's interpreter sees.
		var host unix.Utsname
		if err := unix.Uname(&host); err != nil {
			t.Fatal(err)
		}
		release := unix.ByteSliceToString(host.Release[:])
		h.call(aliceKey, "POST", "/v1/sessions/{id}/execute", []string{s.ID}, nil,
			map[string]any{"code": "import os; print(os.uname().release)"}).json(t, &cell)
		if got := strings.TrimSpace(cell.stdout()); got == "" || got == release {
			t.Errorf("the gvisor session sees kernel release %q, the host's is %q: not gVisor's Sentry", got, release)
		}
	}
	h.call(aliceKey, "POST", "/v1/sessions", nil, nil, map[string]any{"language": "bash"}).json(t, &plain)
	if plain.Runtime != "linux" {
		t.Errorf("a session naming no runtime: %+v", plain)
	}
	var got runtimeSession
	h.call(aliceKey, "GET", "/v1/sessions/{id}", []string{s.ID}, nil, nil).json(t, &got)
	if got.Runtime != name {
		t.Errorf("get: the session's runtime %q, want %s", got.Runtime, name)
	}
	var list struct{ Sessions []runtimeSession }
	h.call(aliceKey, "GET", "/v1/sessions", nil, nil, nil).json(t, &list)
	runtimes := map[string]string{}
	for _, x := range list.Sessions {
		runtimes[x.ID] = x.Runtime
	}
	if runtimes[s.ID] != name || runtimes[plain.ID] != "linux" || len(runtimes) != 2 {
		t.Errorf("list: runtimes %v, want %s: %s and %s: linux", runtimes, s.ID, name, plain.ID)
	}
	if r := h.call(aliceKey, "DELETE", "/v1/sessions/{id}", []string{s.ID}, nil, nil); r.status != 204 {
		t.Errorf("delete the %s session: %d %s", name, r.status, r.body)
	}
}

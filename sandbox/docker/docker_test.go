package docker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/docker"
	"github.com/coderun/coderun/sandbox/sandboxtest"
)

// newRuntime opens the runtime against the engine CODERUN_TEST_DOCKER_HOST
// names (started by the test setup with a private data root), or skips
// the test, saying why, when there is none.
func newRuntime(t *testing.T, pool int) *docker.Runtime {
	t.Helper()
	host := os.Getenv("CODERUN_TEST_DOCKER_HOST")
	if host == "" {
		if why := os.Getenv("CODERUN_TEST_DOCKER_SKIP"); why != "" {
			t.Skip("the docker runtime is not tested: " + why)
		}
		t.Skip("CODERUN_TEST_DOCKER_HOST is not set: no Docker Engine to test against (scripts/docker.sh run go test ... starts one, as scripts/test.sh does)")
	}
	rt, err := docker.New(docker.Options{Host: host, Image: os.Getenv("CODERUN_TEST_DOCKER_IMAGE"), Pool: pool})
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func TestHello(t *testing.T) {
	rt := newRuntime(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: `import sys; print("hi", sys.argv[0]); print("e", file=sys.stderr)`})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Stdout != "hi /work/main.py\n" || res.Stderr != "e\n" {
		t.Fatalf("got %+v", res)
	}
	t.Logf("wall %v cpu %v peak %d", res.Usage.Wall, res.Usage.CPU(), res.Usage.PeakMemory)
}

// TestSuite runs the shared conformance and security suite against the
// runtime, one-shot runs served by fresh containers, and its long-lived
// scenarios (Interactive: a container per program over the sandbox's
// workspace). Differences it cannot hold on Docker are in the README's
// runtimes table; the engine the tests use is the one scripts/docker.sh
// starts (its OCI runtime, scripts/docker-runc.sh, gives each container
// clocks of its own).
func TestSuite(t *testing.T) {
	s := &sandboxtest.Suite{PrivatePaths: []string{"/run/coderun/docker"}, Known: map[string]string{
		"Security/FromC": "the image has no C compiler (its packages are the Python stack and Node): compiled languages run on the linux runtime",
	}}
	s.NewRuntime = func(t *testing.T) sandbox.Runtime { return newRuntime(t, 0) }
	s.Run(t)
}

// A pooled container's interpreter is started ahead and waits for its
// program: the process that runs the code is older than the request (it
// was one the exec at the request started), and the run is marked pooled.
func TestPoolStartsInterpreterAhead(t *testing.T) {
	rt := newRuntime(t, 1)
	deadline := time.Now().Add(time.Minute)
	for rt.PoolReady() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if rt.PoolReady() < 1 {
		t.Fatal("the pool made no container in a minute")
	}
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: `import os
start = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
print(float(open("/proc/uptime").read().split()[0]) - start)`})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || !res.Pooled {
		t.Fatalf("want a pooled run that succeeds: %s pooled=%v\n%s", res.Summary(), res.Pooled, res.Stderr)
	}
	var age float64
	if _, err := fmt.Sscan(res.Stdout, &age); err != nil {
		t.Fatalf("stdout %q: %v", res.Stdout, err)
	}
	if age < 0.9 {
		t.Errorf("the interpreter is %.2f s old at the run: it was started at the request, not ahead in the pool", age)
	}
}

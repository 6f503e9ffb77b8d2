package docker_test

import (
	"context"
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
// runtime, one-shot runs served by fresh containers. Differences it cannot
// hold on Docker are in the README's runtimes table; the engine the tests
// use is the one scripts/docker.sh starts (its OCI runtime,
// scripts/docker-runc.sh, gives each container clocks of its own).
// Interactive is skipped: no long-lived sandboxes yet.
func TestSuite(t *testing.T) {
	s := &sandboxtest.Suite{PrivatePaths: []string{"/run/coderun/docker"}}
	s.NewRuntime = func(t *testing.T) sandbox.Runtime { return newRuntime(t, 0) }
	s.Run(t)
}

package docker

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/docker/docker/errdefs"

	"github.com/coderun/coderun/sandbox"
)

// A container whose owner process is gone (a coderun killed with its
// containers running) is removed, with its workspace, when a runtime
// starts; one whose owner lives is left alone.
func TestReclaimsLeftovers(t *testing.T) {
	host := os.Getenv("CODERUN_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("CODERUN_TEST_DOCKER_HOST is not set: no Docker Engine to test against")
	}
	opts := Options{Host: host, Image: os.Getenv("CODERUN_TEST_DOCKER_IMAGE")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	python, _ := sandbox.LookupInterpreter(sandbox.Python)

	gone := exec.Command("true")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	deadOwner, err := processID(gone.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	gone.Wait()
	live := rt.owner
	rt.owner = deadOwner
	orphan, err := rt.newBox(ctx, python, sandbox.DefaultLimits)
	rt.owner = live
	if err != nil {
		t.Fatal(err)
	}
	kept, err := rt.newBox(ctx, python, sandbox.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.destroy(kept)

	rt2, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	if _, err := rt.cli.ContainerInspect(ctx, orphan.id); !errdefs.IsNotFound(err) {
		t.Errorf("the container of a process that is gone: inspect says %v, want not found", err)
		rt.destroy(orphan)
	}
	if _, err := os.Stat(orphan.dir); !os.IsNotExist(err) {
		t.Errorf("its workspace %s: %v, want removed", orphan.dir, err)
	}
	if _, err := rt.cli.ContainerInspect(ctx, kept.id); err != nil {
		t.Errorf("the container of a live runtime was removed: %v", err)
	}
}

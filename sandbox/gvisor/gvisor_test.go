package gvisor_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
	"github.com/coderun/coderun/sandbox/sandboxtest"
)

// newRuntime opens the runtime, or skips the test, saying why, on a host
// where runsc is absent (scripts/runsc.sh builds it) or cannot run.
func newRuntime(t *testing.T, opts gvisor.Options) *gvisor.Runtime {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the gvisor runtime needs root")
	}
	if _, err := gvisor.FindRunsc(opts.Runsc); err != nil {
		t.Skipf("no runsc on this host: %v", err)
	}
	rt, err := gvisor.New(opts)
	if err != nil {
		t.Fatalf("gvisor.New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func TestHello(t *testing.T) {
	rt := newRuntime(t, gvisor.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: `import sys; print("hi", sys.argv[0]); print("e", file=sys.stderr)`})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Stdout != "hi /work/main.py\n" || res.Stderr != "e\n" || res.Runtime != gvisor.Name {
		t.Fatalf("got %+v", res)
	}
	t.Logf("wall %v cpu %v peak %s", res.Usage.Wall, res.Usage.CPU(), sandbox.FormatBytes(res.Usage.PeakMemory))
}

// known are the suite's scenarios gVisor fails, each a difference the
// README's runtimes table states.
var known = map[string]string{
	"Interactive/SwappedLinks":      noHostFIFOs,
	"Interactive/Archive":           noHostFIFOs,
	"Interactive/FilesWhileRunning": noHostFIFOs,
	"Interactive/CPUTime": "the host's measure of a program's CPU time (the box's cgroup) is below what the program " +
		"itself measures (time.process_time) on a busy host: on systrap the Sentry counts a task's time between " +
		"switches, time the host did not run it included",
	"Security/SpecialFilesOut":   noHostFIFOs,
	"Security/LinksOutAndBackIn": noHostFIFOs,
	"Security/MemoryBombInChild": "an OOM kill ends the whole sandbox, not only the process past the limit: " +
		"the host's OOM killer kills the Sentry, which holds every process's memory (the run reports memory_limit)",
}

const (
	noHostFIFOs = "a FIFO or unix socket the program makes in its workspace lives in the Sentry's memory only " +
		"(gVisor's gofer makes none on the host), so it never reaches the host nor the run's files"
)

// TestSuite runs the shared conformance and security suite against the
// runtime.
func TestSuite(t *testing.T) {
	s := &sandboxtest.Suite{PrivatePaths: []string{gvisor.DefaultStateDir, gvisor.RunscCache}, Known: known}
	s.NewRuntime = func(t *testing.T) sandbox.Runtime { return newRuntime(t, gvisor.Options{}) }
	s.Run(t)
}

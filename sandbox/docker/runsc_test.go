package docker_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/docker"
	"github.com/coderun/coderun/sandbox/gvisor"
	"github.com/coderun/coderun/sandbox/sandboxtest"
)

// runscRuntime is the OCI runtime name scripts/docker.sh registers
// gVisor's runsc under.
const runscRuntime = "runsc"

// newRunscRuntime opens the runtime with oci_runtime: runsc on the test
// engine, or skips the test, saying why, where runsc or the engine is
// absent. An engine of scripts/docker.sh's without the runsc runtime on a
// host that has runsc fails the test: the script registers it.
func newRunscRuntime(t *testing.T, pool int) *docker.Runtime {
	t.Helper()
	bin, err := gvisor.FindRunsc("")
	if err != nil {
		t.Skipf("runsc is absent: %v", err)
	}
	host := os.Getenv("CODERUN_TEST_DOCKER_HOST")
	if host == "" {
		newRuntime(t, 0) // skips, saying why
	}
	cli, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Runtimes[runscRuntime]; !ok {
		t.Fatalf("runsc is on this host (%s) but the engine at %s has no OCI runtime %q (scripts/docker.sh start registers it): it has %v", bin, host, runscRuntime, info.Runtimes)
	}
	rt, err := docker.New(docker.Options{Host: host, Image: os.Getenv("CODERUN_TEST_DOCKER_IMAGE"), OCIRuntime: runscRuntime, Pool: pool})
	if err != nil {
		t.Fatalf("docker.New with oci_runtime %s: %v", runscRuntime, err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

// TestRunscHello: with oci_runtime: runsc a program runs in gVisor's
// Sentry (the kernel it sees is not the host's), its output and exit
// status as on runc, from a fresh container and from the pool.
func TestRunscHello(t *testing.T) {
	rt := newRunscRuntime(t, 1)
	var host unix.Utsname
	if err := unix.Uname(&host); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(host.Release[:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deadline := time.Now().Add(time.Minute)
	for rt.PoolReady() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, lim := range []sandbox.Limits{{}, {OpenFiles: 100}} { // the pool's, then a container of its own
		res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Limits: lim,
			Code: "import os, sys; print(os.uname().release); sys.exit(3)"})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.TrimSpace(res.Stdout)
		if res.Reason != sandbox.ReasonExited || res.ExitCode != 3 || got == "" || got == release {
			t.Errorf("limits %+v: %s, kernel release %q (the host's is %q), pooled %v\n%s", lim, res.Summary(), got, release, res.Pooled, res.Stderr)
		}
		t.Logf("limits %+v: kernel %s, pooled %v, wall %v", lim, got, res.Pooled, res.Usage.Wall)
	}
}

// TestRunscNoSessions: under runsc a long-lived sandbox is refused, saying
// why, rather than made and left unable to tell a cell's end.
func TestRunscNoSessions(t *testing.T) {
	rt := newRunscRuntime(t, 0)
	sb, err := rt.NewSandbox(context.Background(), sandbox.Spec{})
	if !errors.Is(err, docker.ErrNoSessionsOnRunsc) {
		if sb != nil {
			sb.Close()
		}
		t.Fatalf("NewSandbox under runsc: %v, want ErrNoSessionsOnRunsc", err)
	}
}

// TestRunscUnknownOCIRuntime: an oci_runtime the engine does not know is
// refused when the runtime starts, naming those it knows.
func TestRunscUnknownOCIRuntime(t *testing.T) {
	host := os.Getenv("CODERUN_TEST_DOCKER_HOST")
	if host == "" {
		newRuntime(t, 0) // skips, saying why
	}
	rt, err := docker.New(docker.Options{Host: host, Image: os.Getenv("CODERUN_TEST_DOCKER_IMAGE"), OCIRuntime: "kata"})
	if err == nil {
		rt.Close()
		t.Fatal("an engine without the OCI runtime kata: the runtime started")
	}
	if !strings.Contains(err.Error(), `the engine has no OCI runtime "kata": it has `) || !strings.Contains(err.Error(), "runc") {
		t.Errorf("an unknown OCI runtime: %v", err)
	}
}

// TestRunscSeedFlow is the seed's flow (a CSV in, a PNG and a summary
// out, no container left) with oci_runtime: runsc.
func TestRunscSeedFlow(t *testing.T) {
	seedFlow(t, newRunscRuntime(t, 1))
}

// TestRunscSuite runs the suite's one-shot scenarios (conformance and
// security) with oci_runtime: runsc: all 96 (about a minute here, the
// containers' starts in parallel), since each that holds on runc and
// gVisor is a boundary the configuration must keep. The known list says
// what differs and why: gVisor's own, harmless behaviour (as the gvisor
// runtime's list), and the process budget, which is not exact there
// (README, runtimes: Docker with runsc).
func TestRunscSuite(t *testing.T) {
	s := &sandboxtest.Suite{PrivatePaths: []string{"/run/coderun/docker"}, Known: map[string]string{
		"Security/FromC": "the image has no C compiler (its packages are the Python stack and Node): compiled languages run on the linux runtime",
		// gVisor's own, as on the gvisor runtime (its known list):
		"Security/SpecialFilesOut":   noHostFIFOs,
		"Security/LinksOutAndBackIn": noHostFIFOs,
		"Security/MemoryBombInChild": "an OOM kill ends the whole sandbox, not only the process past the limit: " +
			"the host's OOM killer kills the Sentry, which holds every process's memory (the run reports memory_limit)",
		"Security/OOMScoreAdj":  sentryOOMScore,
		"Security/WriteProcSys": sentryOOMScore,
		// Not harmless, a difference of this configuration (README):
		"Conformance/ProcessBudget":      inexactProcesses,
		"Security/ProcessAndThreadLimit": inexactProcesses,
		"Security/ForkBomb":              inexactProcesses,
	}}
	// Long-lived sandboxes are refused under runsc (TestRunscNoSessions).
	s.NewRuntime = func(t *testing.T) sandbox.Runtime { return oneShotOnly{newRunscRuntime(t, 0)} }
	s.Run(t)
}

const (
	noHostFIFOs = "a FIFO or unix socket the program makes in its workspace lives in the Sentry's memory only " +
		"(gVisor's gofer makes none on the host), so it never reaches the host nor the run's files"
	sentryOOMScore = "oom_score_adj is the Sentry's file, not the host's kernel's: a program lowers the score of its " +
		"task in the Sentry, which no OOM killer reads; the host's score of the Sentry, which holds every process's " +
		"memory, is 1000 (the runtime raises it there: runsc left it at 1; TestRunscOOMScoreStaysTheHosts), and runsc " +
		"ignores the engine's read-only paths"
)

// inexactProcesses is why the process limit's scenarios fail under runsc.
const inexactProcesses = "the process budget is not exact: the host's pids cgroup counts gVisor's tasks (the " +
	"Sentry's threads, the gofer, a systrap stub per address space), not the program's, so the runtime allows " +
	"256 of them beyond the budget as a backstop (a Sentry that cannot make a thread dies: a fork bomb ends the " +
	"run as killed); the Sentry's own limit, RLIMIT_NPROC, would count the init's threads too (same user). " +
	"The gvisor runtime holds the budget exactly"

// oneShotOnly is a runtime's one-shot runs alone.
type oneShotOnly struct{ sandbox.Runtime }

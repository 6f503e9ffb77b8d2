package docker

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
)

// TestRunscOOMScoreStaysTheHosts: under runsc a program that sets its
// oom_score_adj to -1000 (which the Sentry lets it: the file is the
// Sentry's) leaves the host's score of every process of its container,
// the Sentry's among them, at 1000: the host's OOM killer still takes the
// sandbox first. (Why Security/OOMScoreAdj and Security/WriteProcSys are
// known differences there.) Before the runtime raised them, the Sentry,
// gofer and stubs ran at 1, whatever the program did.
func TestRunscOOMScoreStaysTheHosts(t *testing.T) {
	host := os.Getenv("CODERUN_TEST_DOCKER_HOST")
	if host == "" {
		t.Skip("CODERUN_TEST_DOCKER_HOST is not set: no Docker Engine to test against (scripts/docker.sh run go test ...)")
	}
	r, err := New(Options{Host: host, Image: os.Getenv("CODERUN_TEST_DOCKER_IMAGE"), OCIRuntime: "runsc"})
	if err != nil {
		if strings.Contains(err.Error(), `no OCI runtime "runsc"`) {
			t.Skipf("the engine has no runsc: %v", err)
		}
		t.Fatal(err)
	}
	defer r.Close()
	if !r.sentry {
		t.Fatal("the engine's runsc is not gVisor's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := sandbox.DefaultLimits
	python, _ := sandbox.LookupInterpreter(sandbox.Python)
	b, err := r.newBox(ctx, python, l)
	if err != nil {
		t.Fatal(err)
	}
	defer r.destroy(b)
	done := make(chan *sandbox.Result, 1)
	code := `import time
for f in ("/proc/self/oom_score_adj", "/proc/1/oom_score_adj"):
    try:
        open(f, "w").write("-1000")
    except OSError as e:
        print(f, e)
print(open("/proc/self/oom_score_adj").read().strip(), flush=True)
time.sleep(3)`
	go func() { done <- r.launch(ctx, b, bootstrap.Payload(nil, "", code), nil, l) }()
	time.Sleep(1500 * time.Millisecond)
	pids, err := b.cg.procs()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) == 0 {
		t.Fatal("no process in the container's cgroup")
	}
	for _, pid := range pids {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/oom_score_adj")
		if err != nil {
			continue // gone
		}
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if got := strings.TrimSpace(string(data)); got != "1000" {
			t.Errorf("host pid %d (%s): oom_score_adj %s, want 1000", pid, strings.TrimSpace(string(comm)), got)
		}
	}
	res := <-done
	if res.Reason != sandbox.ReasonExited || res.ExitCode != 0 || !strings.Contains(res.Stdout, "-1000") {
		t.Errorf("the program did not lower its score in the Sentry: %s\n%s%s", res.Summary(), res.Stdout, res.Stderr)
	}
	t.Logf("%d host processes, each at 1000; the program saw %q", len(pids), strings.TrimSpace(res.Stdout))
}

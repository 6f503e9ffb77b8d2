//go:build linux

package sandboxtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// memoryBomb models a program allocating without bound to starve the host:
// the memory limit must stop it (reason memory_limit, ended by SIGKILL),
// and its measured peak must not exceed the limit.
func (h *harness) memoryBomb(t *testing.T) {
	const limit = 64 << 20
	req := py("x = []\nwhile True:\n    x.append(b'm' * (1 << 20))\n")
	req.Limits = limits(sandbox.Limits{Memory: limit})
	res := h.run(t, req)
	if res.Reason != sandbox.ReasonMemoryLimit {
		t.Errorf("memory bomb: reason %s, want memory_limit\n%s", res.Reason, describe(res))
	}
	if res.Signal != "SIGKILL" || res.ExitCode != -1 {
		t.Errorf("memory bomb: exit %d, signal %q; want -1 and SIGKILL", res.ExitCode, res.Signal)
	}
	if p := res.Usage.PeakMemory; p > limit+limit/8 || p < limit/2 {
		t.Errorf("memory bomb: peak %s with a limit of %s", sandbox.FormatBytes(p), sandbox.FormatBytes(limit))
	}
}

// memoryBombInChild models hiding an OOM kill behind a parent's exit
// status: a shell runs the bomb as a child and exits with its status
// (137). The runtime must still say memory_limit, not leave the caller to
// guess from 137; when the parent instead succeeds, the run is exited with
// code 0 and the error notes the kill.
func (h *harness) memoryBombInChild(t *testing.T) {
	bomb := `python3 -c 'x = []
while True: x.append(b"m" * (1 << 20))'`
	for _, c := range []struct {
		tail   string
		reason sandbox.Reason
	}{
		{`echo "child status $?"; exit 3`, sandbox.ReasonMemoryLimit},
		{`echo "child status $?"; exit 0`, sandbox.ReasonExited},
	} {
		req := sh(bomb + "\n" + c.tail)
		req.Limits = limits(sandbox.Limits{Memory: 64 << 20})
		res := h.run(t, req)
		if !strings.Contains(res.Stdout, "child status 137") {
			t.Errorf("the child was not killed as expected: %s", describe(res))
		}
		if res.Reason != c.reason {
			t.Errorf("parent then %q: reason %s, want %s\n%s", c.tail, res.Reason, c.reason, describe(res))
		}
		if c.reason == sandbox.ReasonExited && !strings.Contains(res.Error, "memory") {
			t.Errorf("parent succeeded after its child's OOM kill: error %q should say a process hit the memory limit", res.Error)
		}
	}
}

// memoryBombViaTmpfs models evading a memory limit that counts only
// process memory: files in /dev/shm and /tmp live in RAM. With a workspace
// larger than the memory limit, writing into /dev/shm must be stopped at
// the memory limit (memory_limit), or fail with an error before it.
func (h *harness) memoryBombViaTmpfs(t *testing.T) {
	const limit = 48 << 20
	req := py(`import os, sys
n = 0
try:
    with open("/dev/shm/fill", "wb") as f:
        for i in range(200):
            f.write(b"s" * (1 << 20))
            f.flush()
            n += 1
            print("WROTE", n, flush=True)
except OSError as e:
    print("ERROR", e, flush=True)
`)
	req.Limits = limits(sandbox.Limits{Memory: limit, WorkspaceBytes: 256 << 20})
	res := h.run(t, req)
	switch res.Reason {
	case sandbox.ReasonMemoryLimit:
	case sandbox.ReasonExited:
		var n int
		for _, l := range lines(res.Stdout, "WROTE ") {
			fmt.Sscan(l, &n)
		}
		if !strings.Contains(res.Stdout, "ERROR") || n > limit>>20 {
			t.Errorf("CONTAINMENT FAILURE: wrote %d MiB into /dev/shm under a %s memory limit\n%s", n, sandbox.FormatBytes(limit), describe(res))
		}
	default:
		t.Errorf("tmpfs memory bomb: reason %s, want memory_limit\n%s", res.Reason, describe(res))
	}
	if p := res.Usage.PeakMemory; p > limit+limit/8 {
		t.Errorf("peak memory %s exceeds the limit of %s", sandbox.FormatBytes(p), sandbox.FormatBytes(limit))
	}
}

// diskFill models filling the host's disk: the program writes until it
// fails in /work, /tmp and /dev/shm. All three share the workspace cap, so
// together they must stop at it with ENOSPC (or EFBIG/EDQUOT); the host's
// disks must not lose what the program tried to write; and the run must
// still end normally with its files reported.
func (h *harness) diskFill(t *testing.T) {
	const ws = 16 << 20
	free := func() map[string]uint64 {
		out := map[string]uint64{}
		for _, p := range []string{"/", os.TempDir(), "/run", "/var"} {
			var st unix.Statfs_t
			if unix.Statfs(p, &st) == nil {
				out[p] = st.Bavail * uint64(st.Bsize)
			}
		}
		return out
	}
	before := free()
	req := attackPy(nil, `
total, errs = 0, {}
for d in ["/work", "/tmp", "/dev/shm"]:
    try:
        with open(d + "/fill", "wb") as f:
            for i in range(64):
                f.write(b"f" * (1 << 20))
                f.flush()
                total += 1 << 20
    except OSError as e:
        errs[d] = ename(e.errno)
print("FILL:" + json.dumps({"total": total, "errors": errs}), flush=True)
for d, e in errs.items():
    if e not in ("ENOSPC", "EFBIG", "EDQUOT"):
        escaped("writing in %s failed with %s, not for lack of space" % (d, e))
done()
`)
	req.Limits = limits(sandbox.Limits{WorkspaceBytes: ws, Memory: 256 << 20})
	res := h.attack(t, req)
	after := free()
	var fill struct {
		Total  int64
		Errors map[string]string
	}
	jsonLine(t, res, "FILL:", &fill)
	if fill.Total > ws+(1<<20) {
		t.Errorf("CONTAINMENT FAILURE: the program wrote %s with a workspace cap of %s", sandbox.FormatBytes(fill.Total), sandbox.FormatBytes(ws))
	}
	if len(fill.Errors) != 3 {
		t.Errorf("writing stopped with errors only in %v; every directory shares the cap", fill.Errors)
	}
	for p, b := range before {
		if a, ok := after[p]; ok && a+(96<<20) < b {
			t.Errorf("CONTAINMENT FAILURE: the host's %s lost %s of free space during the run", p, sandbox.FormatBytes(int64(b-a)))
		}
	}
	var found bool
	for _, f := range res.Files {
		if f.Path == "fill" {
			found = f.Size <= ws
		}
	}
	if !found {
		t.Errorf("the filled file is not reported (or is larger than the workspace): %+v", res.Files)
	}
}

// inodeExhaustion models exhausting inodes and the host's file collector
// with tens of thousands of empty files: creation must stop gracefully
// (ENOSPC at the workspace's inode cap, or succeed), the run must end
// normally, and the result must list exactly sandbox.MaxReportedFiles
// entries with FilesTruncated set.
func (h *harness) inodeExhaustion(t *testing.T) {
	req := attackPy(nil, `
os.mkdir("many")
n, err = 0, None
try:
    for i in range(40000):
        open("many/f%06d" % i, "w").close()
        n += 1
except OSError as e:
    err = ename(e.errno)
print("MANY:" + json.dumps({"n": n, "error": err}), flush=True)
if err not in (None, "ENOSPC", "EDQUOT"):
    escaped("file creation failed with %s, not for lack of inodes" % err)
done()
`)
	req.Limits = limits(sandbox.Limits{WorkspaceBytes: 16 << 20})
	start := time.Now()
	res := h.attack(t, req)
	var many struct {
		N     int
		Error *string
	}
	jsonLine(t, res, "MANY:", &many)
	t.Logf("created %d files (%s) in %v", many.N, deref(many.Error), time.Since(start))
	if many.N <= sandbox.MaxReportedFiles {
		t.Fatalf("only %d files could be created, too few to test the report cap", many.N)
	}
	if len(res.Files) != sandbox.MaxReportedFiles || !res.FilesTruncated {
		t.Errorf("reported %d files, truncated=%v; want %d and true", len(res.Files), res.FilesTruncated, sandbox.MaxReportedFiles)
	}
}

// flood runs a program that writes without end to one stream.
func (h *harness) flood(t *testing.T, req sandbox.Request, stream string) {
	t.Helper()
	const limit = 64 << 10
	req.Limits = limits(sandbox.Limits{OutputBytes: limit, WallTime: 15 * time.Second})
	start := time.Now()
	res := h.run(t, req)
	if res.Reason != sandbox.ReasonOutputLimit {
		t.Errorf("%s flood: reason %s, want output_limit\n%s", stream, res.Reason, describe(res))
	}
	out, trunc := res.Stdout, res.StdoutTruncated
	if stream == "stderr" {
		out, trunc = res.Stderr, res.StderrTruncated
	}
	if len(out) != limit || !trunc {
		t.Errorf("%s flood: kept %d bytes (truncated=%v); want exactly %d and the flag", stream, len(out), trunc, limit)
	}
	if len(res.Stdout)+len(res.Stderr) > 2*limit {
		t.Errorf("CONTAINMENT FAILURE: the result holds %d bytes of output with a limit of %d per stream", len(res.Stdout)+len(res.Stderr), limit)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%s flood: the run was not stopped at the limit (took %v)", stream, d)
	}
}

// stdoutFlood models exhausting the host's memory or disk through captured
// output: "yes" writes to stdout as fast as it can.
func (h *harness) stdoutFlood(t *testing.T) {
	h.flood(t, sh("yes coderun-flood"), "stdout")
}

// stderrFlood is stdoutFlood on the error stream, with large writes from
// several processes at once.
func (h *harness) stderrFlood(t *testing.T) {
	h.flood(t, py(`import os
os.fork(); os.fork()
b = b"e" * 65536
while True:
    os.write(2, b)
`), "stderr")
}

// infiniteLoop models burning the host's CPU: two processes spin. The run
// must end at the CPU-time limit (which counts all processes) with reason
// cpu_limit, long before its wall-time limit.
func (h *harness) infiniteLoop(t *testing.T) {
	req := py("import os\nos.fork()\nwhile True: pass\n")
	req.Limits = limits(sandbox.Limits{CPUTime: time.Second, WallTime: 20 * time.Second})
	start := time.Now()
	res := h.run(t, req)
	if res.Reason != sandbox.ReasonCPULimit {
		t.Errorf("infinite loop: reason %s, want cpu_limit\n%s", res.Reason, describe(res))
	}
	if c := res.Usage.CPU(); c < 900*time.Millisecond || c > 5*time.Second {
		t.Errorf("infinite loop: CPU %v for a 1 s limit", c)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("infinite loop: took %v; the CPU limit should have ended it", d)
	}
}

// sleepForever models holding a sandbox (and its resources) forever while
// using no CPU, ignoring every catchable signal, with a child doing the
// same: the run must end at its wall-time limit with reason timeout, and
// nothing of it may survive.
func (h *harness) sleepForever(t *testing.T) {
	marker := "coderun-sleeper-" + randomHex(6)
	req := attackPy(map[string]any{"marker": marker}, `
for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGXCPU):
    signal.signal(s, signal.SIG_IGN)
if os.fork() == 0:
    os.execv("/bin/sleep", [ARGS["marker"], "3600"])
while True:
    time.sleep(3600)
`)
	req.Limits = limits(sandbox.Limits{WallTime: time.Second})
	res := h.run(t, req)
	if res.Reason != sandbox.ReasonTimeout {
		t.Errorf("sleep forever: reason %s, want timeout\n%s", res.Reason, describe(res))
	}
	if w := res.Usage.Wall; w < time.Second || w > 5*time.Second {
		t.Errorf("sleep forever: wall %v for a 1 s limit", w)
	}
	requireNoSurvivors(t, marker, "a sleeping child of a timed-out run")
}

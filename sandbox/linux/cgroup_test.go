package linux

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// testCgroups returns this host's cgroup driver, or skips.
func testCgroups(t *testing.T) cgroups {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	cgs, err := detectCgroups(fmt.Sprintf("%d-test-%s", os.Getpid(), newID()[:6]))
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() {
		if err := cgs.close(); err != nil {
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
	return cgs
}

// memoryLimits reads back a group's memory limits: v1's memory and
// memory+swap limits (the latter -1 without swap accounting), v2's
// memory.max and -1.
func memoryLimits(t *testing.T, g cgroup) (int64, int64) {
	t.Helper()
	switch g := g.(type) {
	case *cgroupV1Group:
		mem, err := readInt(filepath.Join(g.dirs["memory"], "memory.limit_in_bytes"))
		if err != nil {
			t.Fatal(err)
		}
		if !g.memsw {
			return mem, -1
		}
		sw, err := readInt(filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes"))
		if err != nil {
			t.Fatal(err)
		}
		return mem, sw
	case *cgroupV2Group:
		mem, err := readInt(filepath.Join(g.dir, "memory.max"))
		if err != nil {
			t.Fatal(err)
		}
		return mem, -1
	}
	t.Fatalf("unknown cgroup driver %T", g)
	return 0, 0
}

// TestMemoryLimitsUpAndDown: a group's memory limit can be raised and cut
// again, from 16 MiB to 8 GiB and back, on this host's real cgroups: on
// v1 the memory and memory+swap limits always end equal (the kernel
// refuses a memory limit above memory+swap, so the order of the two
// writes matters both ways).
func TestMemoryLimitsUpAndDown(t *testing.T) {
	cgs := testCgroups(t)
	g, err := cgs.create("test-limits-" + newID())
	if err != nil {
		t.Fatal(err)
	}
	defer g.destroy()
	for _, m := range []int64{16 << 20, 512 << 20, 600 << 20, 1 << 30, 8 << 30, 1 << 30, 600 << 20, 16 << 20, 8 << 30, 64 << 20} {
		if err := g.setLimits(m, 32); err != nil {
			t.Fatalf("set memory limit %s: %v", sandbox.FormatBytes(m), err)
		}
		mem, sw := memoryLimits(t, g)
		if mem != m || (sw != -1 && sw != m) {
			t.Errorf("after setting %s: memory limit %d, memory+swap %d; want both %d", sandbox.FormatBytes(m), mem, sw, m)
		}
	}
}

// TestCPUSplitNeverNegative: the user and system times of a run are never
// negative, and add up to the CPU time used, when the kernel's split
// moves between the run's start and end (v1 counts it in clock ticks: a
// run that starts after 10 ticks of user time and adds 2 of system time
// alone once split the totals 100:0 and 91.7:18.3, and reported -8.3 ms
// of user time).
func TestCPUSplitNeverNegative(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		base, now    cgroupStats
		user, system time.Duration
	}{
		{cgroupStats{cpu: 100 * ms, cpuUserPart: 10}, cgroupStats{cpu: 110 * ms, cpuUserPart: 10, cpuSystemPart: 2}, 0, 10 * ms},
		{cgroupStats{cpu: 100 * ms, cpuSystemPart: 10}, cgroupStats{cpu: 110 * ms, cpuUserPart: 2, cpuSystemPart: 10}, 10 * ms, 0},
		{cgroupStats{cpu: 100 * ms, cpuUserPart: 5, cpuSystemPart: 5}, cgroupStats{cpu: 140 * ms, cpuUserPart: 8, cpuSystemPart: 6}, 30 * ms, 10 * ms},
		{cgroupStats{cpu: 100 * ms, cpuUserPart: 5}, cgroupStats{cpu: 103 * ms, cpuUserPart: 5}, 3 * ms, 0},
	} {
		user, system := c.now.cpuSince(c.base)
		if user < 0 || system < 0 || user+system != c.now.cpu-c.base.cpu || user != c.user || system != c.system {
			t.Errorf("from %+v to %+v: user %v, system %v; want %v, %v", c.base, c.now, user, system, c.user, c.system)
		}
	}
}

// TestLimitWriteRetriesEINTR: cutting a memory limit below what a group
// holds makes the kernel reclaim in the writing thread, and a signal that
// arrives meanwhile ends the write with EINTR (v1; the Go runtime sends
// its threads signals of its own, so this happens under load). The write
// is retried: the cut succeeds while the writing thread is showered with
// signals.
func TestLimitWriteRetriesEINTR(t *testing.T) {
	cgs := testCgroups(t)
	g, err := cgs.create("test-eintr-" + newID())
	if err != nil {
		t.Fatal(err)
	}
	defer g.destroy()
	if err := g.setLimits(1<<30, 32); err != nil {
		t.Fatal(err)
	}
	// A process in the group fills 256 MiB of clean page cache, charged
	// to the group, which the cut must reclaim.
	file := filepath.Join(t.TempDir(), "cache")
	cmd := exec.Command("sh", "-c", `read go; dd if=/dev/zero of="$1" bs=1M count=256 conv=fsync status=none && cat "$1" >/dev/null`, "sh", file)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.attach(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid, pid := unix.Gettid(), unix.Getpid()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = unix.Tgkill(pid, tid, unix.SIGURG) // the runtime's own preemption signal
			time.Sleep(20 * time.Microsecond)
		}
	}()
	err = g.setLimits(16<<20, 32)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("cut the memory limit to 16 MiB while signalled: %v", err)
	}
	if mem, _ := memoryLimits(t, g); mem != 16<<20 {
		t.Errorf("memory limit %d after the cut, want %d", mem, 16<<20)
	}
}

// childCountingCgroups is the host's cgroup driver, noting how many
// children this process has as each sandbox's group is made.
type childCountingCgroups struct {
	cgroups
	children []int
}

func (c *childCountingCgroups) create(name string) (cgroup, error) {
	c.children = append(c.children, countChildren())
	return c.cgroups.create(name)
}

// countChildren counts this process's children, those of all its threads.
func countChildren() int {
	n := 0
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		data, _ := os.ReadFile(f)
		n += len(strings.Fields(string(data)))
	}
	return n
}

// TestV1GroupsAreMadeWhileInitStarts: where init is moved into its groups
// (v1), they are made once it has started, while it builds the sandbox,
// not before: making them was on the path of every cold run. The run is
// limited and measured as ever.
func TestV1GroupsAreMadeWhileInitStarts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	state, err := os.MkdirTemp("/run", "coderun-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(state)
	rt, err := New(Options{StateDir: state})
	if err != nil {
		t.Skip(err)
	}
	defer rt.Close()
	if rt.cgroups == nil || rt.cgroups.version() != 1 {
		t.Skip("v2 places init in its group as it starts (CLONE_INTO_CGROUP)")
	}
	rec := &childCountingCgroups{cgroups: rt.cgroups}
	rt.cgroups = rec
	before := countChildren()
	res, err := rt.Run(context.Background(), sandbox.Request{Language: sandbox.Python,
		Code: "print(len(bytearray(64 << 20)))", Limits: sandbox.Limits{Memory: 32 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.children) != 1 || rec.children[0] <= before {
		t.Errorf("children of this process as the sandbox's group was made: %v (before the run: %d): made before its init started", rec.children, before)
	}
	if res.Reason != sandbox.ReasonMemoryLimit {
		t.Errorf("64 MiB under a 32 MiB limit: %s %q, want the memory limit", res.Reason, res.Error)
	}
}

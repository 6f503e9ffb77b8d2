package gvisor_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
)

// TestKilledRunscLeavesNothing kills runsc while a program runs: the run
// reports killed, and once the runtime has closed, no mount, cgroup,
// runsc state or process of it is left.
func TestKilledRunscLeavesNothing(t *testing.T) {
	state := t.TempDir()
	rt := newRuntime(t, gvisor.Options{StateDir: state})
	owners := ownersIn(t, state)
	marker := "coderun-gvisor-killed-" + strconv.Itoa(os.Getpid())
	go func() {
		// runsc's command line names the bundle; the program's own is in
		// the Sentry, invisible to the host.
		for i := 0; i < 3000; i++ {
			if pid := findProcess(" runsc --", " run ", state); pid > 0 {
				time.Sleep(500 * time.Millisecond) // let the program start
				_ = syscall.Kill(pid, syscall.SIGKILL)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Bash, Code: "exec -a " + marker + " sleep 30",
		Limits: sandbox.Limits{WallTime: 40 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != sandbox.ReasonKilled || !strings.Contains(res.Error, "runsc was killed") {
		t.Errorf("got reason %s (%q), want killed: runsc was killed", res.Reason, res.Error)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	requireNothingLeft(t, state, owners)
}

// TestReclaimsDeadRuntimes leaves what a runtime killed with SIGKILL leaves
// (its state directory with a mounted workspace, its cgroups with a box's
// group) under a dead process's name: the next runtime removes it all.
func TestReclaimsDeadRuntimes(t *testing.T) {
	state := t.TempDir()
	if _, err := gvisor.FindRunsc(""); err != nil {
		t.Skipf("no runsc on this host: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dead := deadPID(t)
	owner := strconv.Itoa(dead) + "-0badcafe"
	ws := filepath.Join(state, owner, "boxes", "coderun-0123456789abcdef", "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", ws, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join("/sys/fs/cgroup/memory/coderun-gvisor", owner, "coderun-0123456789abcdef")
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		if err := os.MkdirAll(group, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// runsc makes a box's groups in the other hierarchies too,
	// below the owner's group there.
	var others []string
	for _, root := range cgroupRoots() {
		if g := filepath.Join(root, "coderun-gvisor", owner, "coderun-0123456789abcdef"); !strings.HasSuffix(root, "/memory") && exists(filepath.Dir(filepath.Dir(g))) {
			if err := os.MkdirAll(g, 0o755); err != nil {
				t.Fatal(err)
			}
			others = append(others, filepath.Dir(g))
		}
	}
	rt := newRuntime(t, gvisor.Options{StateDir: state})
	owners := ownersIn(t, state)
	for _, g := range others {
		if exists(g) {
			t.Errorf("the dead runtime's cgroup is still there: %s", g)
		}
	}
	if _, err := os.Stat(filepath.Join(state, owner)); !os.IsNotExist(err) {
		t.Errorf("the dead runtime's state directory is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Dir(group)); !os.IsNotExist(err) {
		t.Errorf("the dead runtime's cgroup is still there (%v)", err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	requireNothingLeft(t, state, owners)
}

// requireNothingLeft fails the test for a mount under state, a file in it,
// or a cgroup, in any hierarchy, of the runtimes owners (ownersIn's).
func requireNothingLeft(t *testing.T, state string, owners []string) {
	t.Helper()
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, state) {
			t.Errorf("a mount is left: %s", l)
		}
	}
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		t.Errorf("left in the state directory: %s", e.Name())
	}
	for _, o := range owners {
		for _, root := range cgroupRoots() {
			if g := filepath.Join(root, "coderun-gvisor", o); exists(g) {
				t.Errorf("a cgroup is left: %s", g)
			}
		}
	}
	if pid := findProcess("runsc", "", state); pid > 0 {
		t.Errorf("a runsc process is left: %d", pid)
	}
}

// ownersIn returns the names of the runtimes keeping their state in state
// (their names in the cgroup tree too).
func ownersIn(t *testing.T, state string) []string {
	t.Helper()
	entries, err := os.ReadDir(state)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// cgroupRoots returns the mount points of the host's cgroup hierarchies.
func cgroupRoots() []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		if f := strings.Fields(pre); ok && len(f) >= 5 && (strings.HasPrefix(post, "cgroup ") || strings.HasPrefix(post, "cgroup2 ")) {
			out = append(out, f[4])
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// findProcess returns a process whose command line has each of the given
// parts, or 0.
func findProcess(parts ...string) int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		if strings.HasPrefix(line, "/") {
			// The command's path: "runsc --root=…" is runsc's own process,
			// "sh -c … runsc --root=…" a shell that will exec it.
			line = line[strings.LastIndex(strings.Fields(line)[0], "/")+1:]
		}
		line = " " + line
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return pid
		}
	}
	return 0
}

// deadPID returns the pid of a process that has ended.
func deadPID(t *testing.T) int {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// TestCloseEndsLongLivedSandboxes leaves a long-lived sandbox open, a
// program running in it: the runtime's Close ends both and leaves nothing.
func TestCloseEndsLongLivedSandboxes(t *testing.T) {
	state := t.TempDir()
	rt := newRuntime(t, gvisor.Options{StateDir: state})
	owners := ownersIn(t, state)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := rt.NewSandbox(ctx, sandbox.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sb.Start(ctx, sandbox.Program{Language: sandbox.Bash, Code: "echo up; sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, p.Stderr())
	line := make([]byte, 3)
	if _, err := io.ReadFull(p.Stdout(), line); err != nil || string(line) != "up\n" {
		t.Fatalf("read %q, %v; want up", line, err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if res := p.Wait(ctx); res.Reason != sandbox.ReasonKilled {
		t.Errorf("the program's result after Close: %s, want killed", res.Reason)
	}
	requireNothingLeft(t, state, owners)
}

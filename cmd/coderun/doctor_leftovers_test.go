package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// What a coderun killed with SIGKILL leaves behind (its cgroup, with a
// sandbox's group below it, and its state directory with a workspace still
// mounted) is listed by doctor and removed by doctor --clean.
func TestDoctorLeftovers(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	// A pid that no longer exists, as a killed coderun's.
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	owner := fmt.Sprintf("%d-%s", pid, "abc123")

	// Its cgroup, under a "coderun" parent no runtime started by the other
	// tests sweeps (theirs is in their own cgroup).
	root := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		root = filepath.Join(root, "memory")
	}
	base := filepath.Join(root, fmt.Sprintf("coderun-test-%d", os.Getpid()))
	group := filepath.Join(base, "coderun", owner)
	sandboxGroup := filepath.Join(group, "sb-1")
	if err := os.MkdirAll(sandboxGroup, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{sandboxGroup, group, filepath.Join(base, "coderun"), base} {
			os.Remove(d)
		}
	})

	// Its state directory, a workspace still mounted in it.
	// (Its parents must let the sandboxes' ids through, for doctor's trials.)
	stateParent, err := os.MkdirTemp("", "coderun-doctor")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateParent) })
	if err := os.Chmod(stateParent, 0o755); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(stateParent, "state")
	stale := filepath.Join(stateDir, owner)
	ws := filepath.Join(stale, "ws", "w1")
	makeStale := func() {
		t.Helper()
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("tmpfs", ws, "tmpfs", 0, "size=1m"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { unix.Unmount(ws, unix.MNT_DETACH) }) // before the RemoveAll above
	makeStale()

	type report struct {
		OK        bool `json:"ok"`
		Cleaned   bool `json:"cleaned"`
		Leftovers []struct {
			Kind    string `json:"kind"`
			Path    string `json:"path"`
			Owner   int    `json:"owner"`
			Removed bool   `json:"removed"`
		} `json:"leftovers"`
	}
	doctor := func(args ...string) (report, cliResult) {
		t.Helper()
		r := coderun(t, "", append([]string{"doctor", "--json", "--state-dir", stateDir}, args...)...)
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: %s\n%s", err, r.stdout, r.stderr)
		}
		return rep, r
	}
	mine := func(rep report) map[string]bool {
		got := map[string]bool{}
		for _, l := range rep.Leftovers {
			if l.Owner == pid {
				got[l.Kind+" "+l.Path] = l.Removed
			}
		}
		return got
	}
	want := []string{"cgroup " + group, "state_dir " + stale, "mount " + ws}

	rep, r := doctor()
	got := mine(rep)
	for _, w := range want {
		if _, ok := got[w]; !ok {
			t.Errorf("doctor does not list %s: %+v", w, rep.Leftovers)
		}
	}
	if _, err := os.Stat(group); err != nil {
		t.Fatalf("doctor without --clean removed the cgroup: %v", err)
	}
	if r.code != 0 {
		t.Errorf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// doctor's trial runs started a runtime in this state directory, which
	// reclaimed the stale one; make it again.
	if _, err := os.Stat(stale); err == nil {
		unix.Unmount(ws, unix.MNT_DETACH)
	}
	makeStale()

	rep, r = doctor("--clean")
	got = mine(rep)
	for _, w := range want {
		if removed, ok := got[w]; !ok || !removed {
			t.Errorf("doctor --clean: %s listed %v, removed %v: %+v", w, ok, removed, rep.Leftovers)
		}
	}
	if r.code != 0 || !rep.Cleaned {
		t.Errorf("doctor --clean: exit %d, cleaned %v\n%s", r.code, rep.Cleaned, r.stderr)
	}
	for _, p := range []string{group, stale} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if data, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(data), ws) {
		t.Errorf("%s is still mounted", ws)
	}

	r = coderun(t, "", "doctor", "--state-dir", stateDir)
	if strings.Contains(r.stdout, owner) || !strings.Contains(r.stdout, "Left behind by killed coderun processes:") {
		t.Errorf("doctor after --clean:\n%s", r.stdout)
	}
}

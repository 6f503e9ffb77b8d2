package measure

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCgroupKind(t *testing.T) {
	for _, c := range []struct {
		files []string
		want  string
	}{
		{[]string{"cgroup.controllers"}, "v2"},
		{[]string{"memory/memory.limit_in_bytes"}, "v1"},
		{[]string{"memory/memory.limit_in_bytes", "unified/cgroup.controllers"}, "hybrid (v1 controllers, v2 unified tree)"},
		{nil, "none found"},
	} {
		root := t.TempDir()
		for _, f := range c.files {
			p := filepath.Join(root, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := cgroupKind(root); got != c.want {
			t.Errorf("%v: got %q, want %q", c.files, got, c.want)
		}
	}
}

func TestCPUInfoField(t *testing.T) {
	info := []byte("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu vme hypervisor lahf_lm\n\nprocessor\t: 1\nmodel name\t: other\n")
	if got := cpuinfoField(info, "model name"); got != "AMD EPYC 7B13" {
		t.Errorf("model name: %q", got)
	}
	if !hasWord(cpuinfoField(info, "flags"), "hypervisor") || hasWord(cpuinfoField(info, "flags"), "hyper") {
		t.Error("flags: hypervisor not found as a word")
	}
}

func TestHostString(t *testing.T) {
	h := Host{Virtualization: "kvm", Signs: []string{"clock source kvm-clock"}, Kernel: "6.1.0", Cgroup: "v2", CPUs: 4}
	s := h.String()
	for _, want := range []string{"virtualization kvm (clock source kvm-clock)", "kernel 6.1.0", "cgroup v2", "4 CPUs"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
	if got := DetectHost(); got.Kernel == "" || got.CPUs < 1 || got.Virtualization == "" {
		t.Errorf("DetectHost: %+v", got)
	}
}

// TreeCPU counts a live child's CPU (read from /proc) and, once reaped,
// from this process's rusage of its children.
func TestTreeCPUCountsChildren(t *testing.T) {
	before := TreeCPU()
	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var live CPU
	for deadline := time.Now().Add(10 * time.Second); live.Total() < 50*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("child's CPU after 10 s: %v", live)
		}
		time.Sleep(10 * time.Millisecond)
		live = procCPU(cmd.Process.Pid)
	}
	if got := TreeCPU().Sub(before); got.Total() < live.Total() {
		t.Errorf("tree %v, less than the live child's %v", got, live)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := TreeCPU().Sub(before); got.Total() < live.Total() {
		t.Errorf("tree %v, less than the reaped child's %v", got, live)
	}
}

func TestCPUArithmetic(t *testing.T) {
	c := CPU{User: 30 * time.Millisecond, System: 10 * time.Millisecond}
	if got := c.Add(c).Sub(c).Per(2); got != (CPU{15 * time.Millisecond, 5 * time.Millisecond}) {
		t.Errorf("got %v", got)
	}
	if got := c.Per(0); got != (CPU{}) {
		t.Errorf("Per(0): %v", got)
	}
	if got := c.String(); got != "30.0 + 10.0" {
		t.Errorf("String: %q", got)
	}
}

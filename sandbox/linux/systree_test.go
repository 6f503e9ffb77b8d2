package linux_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// TestSandboxesShareTheSystemTrees: the sandboxes of one runtime after its
// first mount the same system trees (one overlay each of /usr and the /etc directories,
// made once by the runtime: their caches stay warm from one sandbox to the
// next), which are not the host's own inodes, in each configuration. An
// overlay made per sandbox had a device of its own in every sandbox.
func TestSandboxesShareTheSystemTrees(t *testing.T) {
	var host syscall.Stat_t
	if err := syscall.Stat("/usr", &host); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts linux.Options
	}{{"cold", linux.Options{}}, {"pooled", linux.Options{Pool: 1}}, {"zygote", linux.Options{Zygote: true}}} {
		t.Run(c.name, func(t *testing.T) {
			h := newRuntime(t, c.opts)
			code := `import os
for p in ("/usr", "/usr/lib", "/etc/ssl"):
    st = os.stat(p)
    print(p, st.st_dev, st.st_ino)
`
			// The runtime's first sandbox (a pool's first, made at the
			// start) has its init make its own (systree.go).
			for deadline := time.Now().Add(10 * time.Second); c.opts.Pool > 0 && h.rt.PoolReady(sandbox.Python) < c.opts.Pool; {
				if time.Now().After(deadline) {
					t.Fatal("the pool did not fill")
				}
				time.Sleep(5 * time.Millisecond)
			}
			h.run(t, py(code))
			first := h.run(t, py(code))
			second := h.run(t, py(code))
			if !first.OK() || !second.OK() {
				t.Fatalf("runs failed:\n%+v\n%+v", first, second)
			}
			if first.Stdout != second.Stdout {
				t.Errorf("two sandboxes of one runtime see different system trees:\n%s\n%s", first.Stdout, second.Stdout)
			}
			for _, line := range strings.Split(strings.TrimSpace(first.Stdout), "\n") {
				if f := strings.Fields(line); f[0] == "/usr" && f[1] == strconv.FormatUint(host.Dev, 10) {
					t.Errorf("the sandbox's /usr is the host's file system (device %s), not an overlay", f[1])
				}
			}
		})
	}
}

// TestSystemTreesDoNotOutliveTheRuntime: the runtime's trees are detached
// mounts, in no mount table of the host, and gone with it: nothing stays
// mounted under its state directory.
func TestSystemTreesDoNotOutliveTheRuntime(t *testing.T) {
	h := newRuntime(t, linux.Options{Pool: 1})
	if res := h.run(t, py("print(1)")); !res.OK() {
		t.Fatalf("%+v", res)
	}
	if m := mountsUnder(h.stateDir); len(m) > 0 {
		t.Errorf("mounted under the state directory while the runtime runs: %v", m)
	}
	if err := h.rt.Close(); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(h.stateDir); len(m) > 0 {
		t.Errorf("mounted under the state directory after Close: %v", m)
	}
}

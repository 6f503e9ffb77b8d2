package linux_test

import (
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// TestLargeMemoryLimit: runs may ask for more memory than the default
// limit the sandbox's interpreter started under (RL pipelines ask for
// 1 GiB): a program with a 1024 MiB limit uses 700 MiB and exits, in a
// fresh sandbox and in a pre-started one; with 256 MiB the same program is
// stopped for memory.
func TestLargeMemoryLimit(t *testing.T) {
	h := newRuntime(t, linux.Options{Pool: 1})
	code := "x = bytearray(700 << 20)\nprint(len(x) >> 20)"
	big := py(code)
	big.Limits.Memory = 1024 << 20
	res := h.run(t, big)
	if !res.OK() || res.Stdout != "700\n" {
		t.Errorf("700 MiB under a 1024 MiB limit: %+v", res)
	}
	runPooled(t, h, big, func(res *sandbox.Result) {
		if !res.OK() || res.Stdout != "700\n" {
			t.Errorf("700 MiB under a 1024 MiB limit (pooled=%v): %+v", res.Pooled, res)
		}
	})
	small := py(code)
	small.Limits.Memory = 256 << 20
	if res := h.run(t, small); res.Reason != sandbox.ReasonMemoryLimit {
		t.Errorf("700 MiB under a 256 MiB limit: %s, want memory_limit: %+v", res.Reason, res)
	}
}

// TestCPUTimesNeverNegative: the user and system times reported for real
// runs are never negative (pre-started sandboxes' interpreters used CPU
// before the run, which the run's usage is measured from).
func TestCPUTimesNeverNegative(t *testing.T) {
	h := newRuntime(t, linux.Options{Pool: 2})
	req := py("import os\nfor _ in range(3000): os.stat('/')\nsum(range(200000))")
	for i := range 30 {
		res := h.run(t, req)
		if !res.OK() {
			t.Fatalf("run %d: %+v", i, res)
		}
		if u := res.Usage; u.CPUUser < 0 || u.CPUSystem < 0 {
			t.Errorf("run %d (pooled=%v): user %v, system %v", i, res.Pooled, u.CPUUser, u.CPUSystem)
		}
	}
}

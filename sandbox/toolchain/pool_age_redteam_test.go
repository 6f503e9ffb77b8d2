package toolchain

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
)

// TestPooledSandboxOutlivesItsWait: a runtime that counts a program's
// wall time from its start (gvisor, docker; linux counts from Wait) holds
// a pooled sandbox's driver to the sandbox's wall time while it waits for
// its job: one that waited longer than the run's own limits was stopped
// the moment a run took it (its compile step "reached" its wall time at
// once). A sandbox that waited has its wait on top of the run's limits,
// and one that waited past the pool's longest wait is replaced, not taken.
func TestPooledSandboxOutlivesItsWait(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the gvisor runtime needs root")
	}
	if _, err := gvisor.FindRunsc(""); err != nil {
		t.Skipf("no runsc on this host: %v", err)
	}
	spec, _ := language.Lookup(language.C)
	if _, err := Find("", spec); err != nil {
		t.Skip(err)
	}
	state, err := os.MkdirTemp("/run", "coderun-toolchain-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	g, err := gvisor.New(gvisor.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	runLim := sandbox.Limits{WallTime: 4 * time.Second, CPUTime: 4 * time.Second}.WithDefaults(sandbox.DefaultLimits)
	compLim := sandbox.Limits{WallTime: 8 * time.Second, CPUTime: 8 * time.Second}.WithDefaults(sandbox.DefaultCompileLimits)
	for _, c := range []struct {
		name   string
		maxAge time.Duration
		pooled bool
	}{
		{"within the pool's longest wait", time.Minute, true},
		{"past it", 2 * time.Second, false},
	} {
		r := &Runtime{inner: g, root: "/", pool: newPoolOf(g, 1, boxLimits(compLim, runLim), c.maxAge)}
		for deadline := time.Now().Add(time.Minute); len(r.pool.ready) < 1; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the pool made no sandbox in a minute")
			}
		}
		time.Sleep(13 * time.Second) // past the sandbox's 12 s
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := r.Run(ctx, sandbox.Request{Language: language.C, Code: "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n",
			Limits: sandbox.Limits{WallTime: runLim.WallTime, CPUTime: runLim.CPUTime}, CompileLimits: sandbox.Limits{WallTime: compLim.WallTime, CPUTime: compLim.CPUTime}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() || res.Stdout != "hi\n" || res.Pooled != c.pooled {
			t.Errorf("%s: %s, stdout %q, pooled %v, want %v", c.name, res.Summary(), res.Stdout, res.Pooled, c.pooled)
		}
		r.pool.close()
	}
}

package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// exec, however its flags come, is a one-shot command, tuned as one; the
// environment's GOMAXPROCS and GOGC win over the tuning.
func TestOneShotTuning(t *testing.T) {
	for _, args := range [][]string{
		{"exec", "-c", "print(1)"},
		{"--config", "/nonexistent", "exec", "--lang", "bash", "-c", "true"},
	} {
		c, _, err := newRootCmd().Find(args)
		if err != nil || !oneShot[c.CommandPath()] {
			t.Errorf("%q: command %q (%v) is not taken for a one-shot", args, c.CommandPath(), err)
		}
	}
	if c, _, err := newRootCmd().Find([]string{"serve"}); err != nil || oneShot[c.CommandPath()] {
		t.Errorf("serve taken for a one-shot (%v)", err)
	}

	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(100)
	defer func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
	}()
	runtime.GOMAXPROCS(2)
	tuneForOneShot(func(string) string { return "" })
	if got, pct := runtime.GOMAXPROCS(0), debug.SetGCPercent(100); got != 1 || pct != 200 {
		t.Errorf("tuned: GOMAXPROCS %d, GOGC %d; want 1, 200", got, pct)
	}
	runtime.GOMAXPROCS(2)
	tuneForOneShot(func(k string) string { return map[string]string{"GOMAXPROCS": "2", "GOGC": "100"}[k] })
	if got, pct := runtime.GOMAXPROCS(0), debug.SetGCPercent(100); got != 2 || pct != 100 {
		t.Errorf("with GOMAXPROCS and GOGC set: GOMAXPROCS %d, GOGC %d; want the environment's 2, 100", got, pct)
	}
}

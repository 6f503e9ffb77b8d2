package linux_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
)

// killedHelperEnv makes TestKilledCoderunHelper a coderun process to be
// killed: "<state dir>:<marker>".
const killedHelperEnv = "CODERUN_TEST_KILLED_HELPER"

// TestKilledCoderunHelper is not a test of its own: run by
// TestKilledCoderunLeavesNothing in a process of its own, it starts a
// runtime in the state directory it is given, with a one-shot run and a
// long-lived sandbox's program that sleep (their argv[0] is marker-run
// and marker-session), and waits to be killed.
func TestKilledCoderunHelper(t *testing.T) {
	state, marker, ok := strings.Cut(os.Getenv(killedHelperEnv), ":")
	if !ok {
		t.Skip("only run by TestKilledCoderunLeavesNothing")
	}
	rt, err := linux.New(linux.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	sleep := func(name string) string {
		return fmt.Sprintf("import os\nos.execv('/usr/bin/sleep', [%q, '600'])", marker+"-"+name)
	}
	sb, err := rt.NewSandbox(context.Background(), sandbox.Spec{Limits: quick})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Start(context.Background(), sandbox.Program{Language: sandbox.Python, Code: sleep("session")}); err != nil {
		t.Fatal(err)
	}
	res, err := rt.Run(context.Background(), py(sleep("run")))
	t.Fatalf("the run was to last until this process was killed: %v %+v", err, res)
}

// TestKilledCoderunLeavesNothing: a coderun process killed with SIGKILL
// while a run and a long-lived sandbox's program are under way leaves no
// workspace in the host's mount table once its sandboxes are gone (they
// die with it), and the next runtime to start, anywhere on the host,
// removes its cgroups at once.
func TestKilledCoderunLeavesNothing(t *testing.T) {
	requireHost(t)
	state, err := os.MkdirTemp("/run", "coderun-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range mountsUnder(state) {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
		os.RemoveAll(state)
	})
	marker := "coderun-killed-" + strconv.Itoa(os.Getpid())
	helper := exec.Command(os.Args[0], "-test.run=^TestKilledCoderunHelper$", "-test.count=1")
	helper.Env = append(os.Environ(), killedHelperEnv+"="+state+":"+marker)
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var progs []int
	for _, name := range []string{"run", "session"} {
		progs = append(progs, waitPID(t, marker+"-"+name))
	}
	name := runtimeName(t, state)
	if len(runtimeCgroups(name)) == 0 {
		t.Fatalf("the killed runtime %s has no cgroup named after it", name)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range progs {
		for syscall.Kill(pid, 0) == nil && !isZombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("sandboxed program %d outlived its coderun by 10 s", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if m := mountsUnder(state); len(m) > 0 {
		t.Errorf("after coderun was killed and its sandboxes ended, the host still has mounted: %v", m)
	}
	newRuntime(t, linux.Options{})
	if left := runtimeCgroups(name); len(left) > 0 {
		t.Errorf("the next runtime to start left the killed runtime's cgroups: %v", left)
	}
}

// isZombie reports whether pid has exited but is not yet reaped.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

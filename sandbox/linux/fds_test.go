package linux_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"golang.org/x/sys/unix"
)

// leakHostFDs opens, without close-on-exec, a directory of the host and a
// socket listening on its loopback, each at a high descriptor number (where
// no descriptor the runtime hands on lands), and returns their identities.
// They are closed when the test ends.
func leakHostFDs(t *testing.T) map[[2]uint64]string {
	t.Helper()
	dir, err := syscall.Open(t.TempDir(), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(sock, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err == nil {
		err = syscall.Listen(sock, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	ids := map[[2]uint64]string{}
	for i, fd := range []int{dir, sock} {
		high := 700 + i
		for ; high < 1024; high++ {
			if _, err := unix.FcntlInt(uintptr(high), unix.F_GETFD, 0); err == unix.EBADF {
				break
			}
		}
		if err := unix.Dup3(fd, high, 0); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(high, &st); err != nil {
			t.Fatal(err)
		}
		ids[[2]uint64{st.Dev, st.Ino}] = fmt.Sprintf("leaked fd %d", high)
		t.Cleanup(func() { syscall.Close(fd); syscall.Close(high) })
	}
	return ids
}

// heldLeaks names the leaked descriptors (by identity) that process pid
// holds.
func heldLeaks(pid int, leaked map[[2]uint64]string) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Stat(dir+"/"+e.Name(), &st) != nil {
			continue
		}
		if what, ok := leaked[[2]uint64{st.Dev, st.Ino}]; ok {
			out = append(out, fmt.Sprintf("fd %s is the %s", e.Name(), what))
		}
	}
	return out
}

// TestInheritedDescriptorsZygote: descriptors this process leaked (no
// close-on-exec) before the runtime started its zygote reach neither the
// zygote, nor a sandbox it builds (its PID 1), nor the program, which
// holds only 0, 1 and 2. (The shared suite's InheritedDescriptors leaks
// them after the zygote started, which would not have them.)
func TestInheritedDescriptorsZygote(t *testing.T) {
	requireHost(t)
	leaked := leakHostFDs(t)
	h := newRuntime(t, linux.Options{Zygote: true})
	marker := "coderun-fds-" + strconv.Itoa(os.Getpid())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *sandbox.Result, 1)
	go func() {
		res, _ := h.rt.Run(ctx, py(fmt.Sprintf(`import os
fds = [int(f) for f in os.listdir("/proc/self/fd")]
print(sorted(f for f in fds if f < 3 or os.path.exists("/proc/self/fd/%%d" %% f)), flush=True)
os.execv("/usr/bin/sleep", [%q, "60"])`, marker)))
		done <- res
	}()
	prog := waitPID(t, marker)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", prog))
	if err != nil {
		t.Fatal(err)
	}
	init, _ := strconv.Atoi(strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[1])
	for what, pid := range map[string]int{"zygote": findZygote(t), "sandbox init": init, "program": prog} {
		if held := heldLeaks(pid, leaked); len(held) > 0 {
			t.Errorf("the %s (host pid %d) holds what the host leaked: %v", what, pid, held)
		}
	}
	cancel()
	res := <-done
	if res == nil || res.Stdout != "[0, 1, 2]\n" {
		t.Errorf("the program's descriptors: %+v, want [0, 1, 2]", res)
	}
}

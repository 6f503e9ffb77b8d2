package linux

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A zygote's sandbox init is held by a pidfd, closed once init has been
// waited for; its number then goes to the next descriptor opened, such as
// another sandbox's pidfd. A kill after the wait (a run's end waits for
// init, then destroy kills it again) must not reach the process that
// number has come to stand for: it killed other sandboxes' inits during
// their set-up ("sandbox init ended during setup: EOF").
func TestKillAfterWaitSparesTheNextPidfd(t *testing.T) {
	first := exec.Command("/bin/sleep", "60")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(first.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &initProc{pid: first.Process.Pid, pidfd: fd}
	_ = first.Process.Kill()
	_ = first.Wait()
	p.wait() // closes fd
	if !p.exited() {
		t.Error("exited() is false after wait")
	}

	// The next process's pidfd, under the number the first one had.
	next := exec.Command("/bin/sleep", "60")
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	nextFD, err := unix.PidfdOpen(next.Process.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if nextFD != fd {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, unix.EBADF) {
			t.Fatalf("descriptor %d was taken by something else meanwhile", fd)
		}
		if err := unix.Dup3(nextFD, fd, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Close(nextFD)
	}
	defer unix.Close(fd)

	p.kill()
	_ = next.Process.Signal(syscall.SIGTERM)
	_ = next.Wait()
	if ws := next.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGTERM {
		t.Errorf("the process holding the reused descriptor ended by %v, not by the SIGTERM it was sent: the waited-for init's kill reached it", ws.Signal())
	}
}

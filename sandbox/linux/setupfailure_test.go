package linux

import (
	"bufio"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A sandbox init that dies during set-up is reported with how it ended and
// what it wrote on its standard error, not only as the end of its events.
func TestSetupFailureSaysHowInitEnded(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "echo 'fatal error: runtime: cannot allocate memory' >&2; kill -9 $$")
	cmd.Stderr = &tailWriter{max: 2048}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &box{init: &initProc{pid: cmd.Process.Pid, cmd: cmd, pidfd: -1}}
	err := b.setupFailure(errors.New("sandbox init ended during setup: EOF"))
	for _, want := range []string{"sandbox init ended during setup: EOF", "signal: killed", "fatal error: runtime: cannot allocate memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestTailWriterKeepsTheEnd(t *testing.T) {
	w := &tailWriter{max: 5}
	w.Write([]byte("abc"))
	w.Write([]byte("defg"))
	if got := w.String(); got != "cdefg" {
		t.Errorf("tail %q, want %q", got, "cdefg")
	}
}

// A sandbox init a zygote forked is not the host's child: how it ended is
// read from its pidfd once its parent has reaped it.
func TestSetupFailureSaysHowAForkedInitEnded(t *testing.T) {
	// The parent forks a child that kills itself, says its pid, reaps it
	// once told the pidfd is open, and lives on.
	cmd := exec.Command("/usr/bin/python3", "-c", `import os, signal, sys
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.read(r, 1)
    os.kill(os.getpid(), signal.SIGKILL)
print(pid, flush=True)
sys.stdin.readline()
os.write(w, b"x")
os.waitpid(pid, 0)
sys.stdin.readline()`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if _, err := stdin.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	b := &box{init: &initProc{pid: pid, pidfd: pidfd}, forked: true}
	err = b.setupFailure(errors.New("sandbox init ended during setup: EOF"))
	for _, want := range []string{"sandbox init ended during setup: EOF", "init signal: killed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

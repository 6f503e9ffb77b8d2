package linux

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

//go:embed zygote.py
var zygoteSource string

// zygote forks ready Python interpreters into new sandboxes (zygote.py says
// how). The runtime starts it on first use and again if it dies.
type zygote struct {
	rt   *Runtime
	mu   sync.Mutex
	cmd  *exec.Cmd
	sock *os.File // SOCK_SEQPACKET to the zygote
}

type zygoteRequest struct {
	Init int      `json:"init"`
	Env  []string `json:"env"`
}

// start runs the zygote and waits until it has loaded the bootstrap.
func (z *zygote) start() error {
	interp, err := sandbox.LookupInterpreter(sandbox.Python)
	if err != nil {
		return err
	}
	filter, err := seccompBytes()
	if err != nil {
		return err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("zygote: %w", err)
	}
	host, child := os.NewFile(uintptr(pair[0]), "zygote"), os.NewFile(uintptr(pair[1]), "zygote-child")
	defer child.Close()
	cmd := exec.Command(interp.Path, "-c", zygoteSource, interp.Argv[len(interp.Argv)-1], hex.EncodeToString(filter), strconv.Itoa(sandboxUID))
	cmd.Env = baseEnv("sandbox")
	cmd.ExtraFiles = []*os.File{child}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		host.Close()
		return fmt.Errorf("zygote: %w", err)
	}
	var b [1]byte
	if n, err := host.Read(b[:]); n != 1 || err != nil {
		host.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("zygote: did not start: %v", err)
	}
	z.cmd, z.sock = cmd, host
	return nil
}

// spawn asks the zygote to fork a program into the sandbox whose init is
// initPID, with the given descriptors (stdin, stdout, stderr, request,
// events). The program's pid and exit arrive on the events pipe.
func (z *zygote) spawn(initPID int, env []string, fds []*os.File) error {
	msg, err := json.Marshal(zygoteRequest{Init: initPID, Env: env})
	if err != nil {
		return err
	}
	raw := make([]int, len(fds))
	for i, f := range fds {
		raw[i] = int(f.Fd())
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if z.sock == nil {
			if err := z.start(); err != nil {
				return err
			}
		}
		err = unix.Sendmsg(int(z.sock.Fd()), msg, unix.UnixRights(raw...), nil, 0)
		if err == nil {
			return nil
		}
		// The zygote died: start another and try once more.
		z.rt.logf("coderun: zygote: %v; restarting it", err)
		z.stopLocked()
	}
	return fmt.Errorf("zygote: %w", err)
}

func (z *zygote) stopLocked() {
	if z.sock != nil {
		z.sock.Close()
		z.sock = nil
	}
	if z.cmd != nil {
		_ = z.cmd.Process.Kill()
		_ = z.cmd.Wait()
		z.cmd = nil
	}
}

func (z *zygote) stop() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.stopLocked()
}

// spawnReady starts the zygote now rather than at the first request.
func (z *zygote) spawnReady() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.sock != nil {
		return nil
	}
	return z.start()
}

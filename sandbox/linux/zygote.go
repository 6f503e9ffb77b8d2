package linux

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/bootstrap"
	"golang.org/x/sys/unix"
)

//go:embed zygote.py
var zygoteSource string

// zygote builds sandboxes for Python programs around forks of one
// interpreter started ahead (zygote.py says how), instead of starting a
// sandbox init and an interpreter for each. The runtime starts it on first
// use and again if it dies.
type zygote struct {
	rt     *Runtime
	mu     sync.Mutex
	cmd    *exec.Cmd
	sock   *os.File      // SOCK_SEQPACKET to the zygote
	exited chan struct{} // closed when cmd has exited
	// deaths counts the zygotes that have exited: a sandbox made by an
	// earlier one may be dying with it (its init is killed with the zygote).
	deaths atomic.Uint64
}

// zygoteConfig is zygote.py's argv[1].
type zygoteConfig struct {
	Bootstrap    string   `json:"bootstrap"`
	Seccomp      string   `json:"seccomp"`
	UID          int      `json:"uid"`
	Hostname     string   `json:"hostname"`
	ProcMasked   []string `json:"proc_masked"`
	ProcReadOnly []string `json:"proc_read_only"`
	ProcBootID   string   `json:"proc_boot_id"`
	// Landlock is the domain the program lays on itself (landlock.go).
	Landlock landlockRules `json:"landlock"`
	Preload  []string      `json:"preload"`
}

// zygoteRequest asks for one sandbox: the host ids of its uid 0 and of the
// program's uid. Nothing of the run itself: the zygote's memory is every
// later program's (the environment and the code go to the program directly).
type zygoteRequest struct {
	IDs [2]int `json:"ids"`
}

type zygoteReply struct {
	PID   int    `json:"pid"`
	Error string `json:"error"`
}

// start builds the template root, runs the zygote and waits until it has
// loaded the bootstrap.
func (z *zygote) start() error {
	interp, err := sandbox.LookupInterpreter(sandbox.Python)
	if err != nil {
		return err
	}
	filter, err := seccompBytes()
	if err != nil {
		return err
	}
	template, err := z.rt.buildTemplate()
	if err != nil {
		return fmt.Errorf("zygote: %w", err)
	}
	defer template.Close()
	cfg, err := json.Marshal(zygoteConfig{
		Bootstrap: bootstrap.Source(sandbox.Python), Seccomp: hex.EncodeToString(filter), UID: sandboxUID,
		Hostname: sandboxHostname, ProcMasked: procMasked, ProcReadOnly: procReadOnly,
		ProcBootID: procBootID, Landlock: sandboxLandlockRules(),
		Preload: z.rt.opts.ZygotePreload,
	})
	if err != nil {
		return err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("zygote: %w", err)
	}
	host, child := os.NewFile(uintptr(pair[0]), "zygote"), os.NewFile(uintptr(pair[1]), "zygote-child")
	defer child.Close()
	// Isolated mode (-I): the zygote runs as root, so neither its working
	// directory, nor a user site directory, nor PYTHON* variables may add
	// to what it imports. Symbols are bound once here, not lazily (and
	// page by page) in every fork.
	cmd := exec.Command(interp.Path, "-I", "-c", zygoteSource, string(cfg))
	cmd.Dir = "/"
	cmd.Env = append(baseEnv(sandboxHostname), "LD_BIND_NOW=1")
	cmd.ExtraFiles = []*os.File{child, template}
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
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		z.deaths.Add(1)
		close(exited)
	}()
	z.cmd, z.sock, z.exited = cmd, host, exited
	return nil
}

// buildTemplate has a sandbox init build the sandbox's read-only root
// (without /proc and the workspace) in a mount namespace of its own, and
// returns that namespace; it lives as long as a descriptor of it does.
// Init runs as host root here, in no user namespace: it runs nothing but
// the set-up, and exits before any sandbox is made from the template.
func (rt *Runtime) buildTemplate() (*os.File, error) {
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	eventsR, eventsW, err := os.Pipe()
	if err != nil {
		controlR.Close()
		controlW.Close()
		return nil, err
	}
	defer eventsR.Close()
	system, systemPaths, err := rt.trees.clones()
	if err != nil {
		controlR.Close()
		eventsW.Close()
		controlW.Close()
		return nil, fmt.Errorf("template: %w", err)
	}
	// Its fds 3 on as a sandbox init's (init.go): the control and events
	// pipes, its executable, and the system trees; none of the others.
	files := make([]*os.File, fdSystemTrees-fdControl, fdSystemTrees-fdControl+len(system))
	files[fdControl-fdControl], files[fdEvents-fdControl], files[fdExe-fdControl] = controlR, eventsW, rt.exe
	cmd := rt.initCmd("coderun-sandbox-template", append(files, system...),
		&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL, Setpgid: true})
	err = cmd.Start()
	controlR.Close()
	eventsW.Close()
	closeFiles(system)
	if err != nil {
		controlW.Close()
		return nil, fmt.Errorf("start template init: %w", err)
	}
	defer func() {
		controlW.Close() // init exits when the host lets go
		_ = cmd.Wait()
	}()
	cfg := setupConfig{RootMount: rt.rootMount, SourceRoot: rt.opts.RootFS, SystemTrees: systemPaths,
		Hostname: sandboxHostname, EtcFiles: generatedEtc(sandboxHostname), Template: true}
	if err := json.NewEncoder(controlW).Encode(&cfg); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if _, err := readEvent(context.Background(), json.NewDecoder(bufio.NewReader(eventsR)), rt.opts.SetupTimeout); err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("template: %w", err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid))
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return ns, nil
}

// spawn asks the zygote for a sandbox, handing it the descriptors that
// zygote.py lists, and returns the sandbox's init: its host pid and a
// pidfd, the only safe handle on a process that is not the host's child.
func (z *zygote) spawn(req zygoteRequest, fds []*os.File) (pid, pidfd int, generation uint64, err error) {
	msg, err := json.Marshal(req)
	if err != nil {
		return 0, -1, 0, err
	}
	raw := make([]int, len(fds))
	for i, f := range fds {
		raw[i] = int(f.Fd())
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.exited != nil {
		select {
		case <-z.exited:
			z.rt.logf("coderun: zygote: it has exited; restarting it")
			z.stopLocked()
		default:
		}
	}
	for attempt := 0; ; attempt++ {
		if z.sock == nil {
			if err := z.start(); err != nil {
				return 0, -1, 0, err
			}
		}
		generation = z.deaths.Load()
		err = unix.Sendmsg(int(z.sock.Fd()), msg, unix.UnixRights(raw...), nil, 0)
		if err == nil {
			break
		}
		// The zygote died: start another and try once more.
		z.rt.logf("coderun: zygote: %v; restarting it", err)
		z.stopLocked()
		if attempt == 1 {
			return 0, -1, 0, fmt.Errorf("zygote: %w", err)
		}
	}
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(z.sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err == nil && n == 0 {
		err = errors.New("it exited")
	}
	if err != nil {
		z.stopLocked()
		return 0, -1, 0, fmt.Errorf("zygote: no answer: %w", err)
	}
	pidfd = -1
	if scms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(scms) == 1 {
		if fds, err := unix.ParseUnixRights(&scms[0]); err == nil && len(fds) == 1 {
			pidfd = fds[0]
		}
	}
	var reply zygoteReply
	if err := json.Unmarshal(buf[:n], &reply); err != nil || reply.Error != "" || reply.PID <= 0 || pidfd < 0 {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if reply.Error != "" {
			return 0, -1, 0, errors.New(reply.Error)
		}
		return 0, -1, 0, fmt.Errorf("zygote: bad answer %q", buf[:n])
	}
	return reply.PID, pidfd, generation, nil
}

// outlived reports whether the zygote that made a sandbox in generation
// has exited since.
func (z *zygote) outlived(generation uint64) bool { return z.deaths.Load() != generation }

func (z *zygote) stopLocked() {
	if z.sock != nil {
		z.sock.Close()
		z.sock = nil
	}
	if z.cmd != nil {
		_ = z.cmd.Process.Kill()
		<-z.exited
		z.cmd, z.exited = nil, nil
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

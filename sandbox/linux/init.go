package linux

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The sandbox's init: the binary that embeds this package re-executes itself
// as the first process of the sandbox's new namespaces (PID 1 there). Package
// initialisation notices the marker in its environment, runs init instead of
// the program's main, and never returns. Any binary that imports this package
// can therefore serve as its own sandbox init; nothing else must be installed.
//
// Init talks to the host over inherited pipes:
//
//	fd 3  host → init: a setupConfig, later one goMessage (JSON, one per line)
//	fd 4  init → host: event lines: {"ready"}, then {"exit"} or {"error"}
//	fd 5, 6, 7: the program's stdin, stdout and stderr
//	fd 8  this executable (how init was started; closed on the next exec)
//
// It builds the root file system (mount.go), names the host (UTS namespace),
// brings up loopback (net.go), pivots, and then, on its one locked OS thread,
// drops the capability bounding set (caps.go), sets no_new_privs and loads
// the seccomp filter (seccomp.go). The program is forked from that thread,
// inheriting all three, and runs under an unprivileged uid. Init reaps
// orphans; when the program exits it reports the status and exits, and the
// kernel kills whatever is left in the PID namespace.

const initMarker = "_CODERUN_SANDBOX_INIT"

func init() {
	if os.Getenv(initMarker) == "1" {
		runInit()
	}
}

const (
	fdControl = 3
	fdEvents  = 4
	fdStdin   = 5
	fdStdout  = 6
	fdStderr  = 7
	fdExe     = 8

	pipeBuffer = 64 << 10 // Linux's default pipe capacity
)

// setupConfig is what init needs to build the sandbox.
type setupConfig struct {
	RootMount  string            `json:"root_mount"`  // empty directory on the host to assemble the root on
	SourceRoot string            `json:"source_root"` // "/" or an unpacked image
	Workspace  string            `json:"workspace"`   // host tmpfs holding work/, tmp/, shm/
	Hostname   string            `json:"hostname"`
	EtcFiles   map[string]string `json:"etc_files"` // generated /etc files
	UID        int               `json:"uid"`       // the program's uid and gid inside
	Path       string            `json:"path"`      // interpreter
	Argv       []string          `json:"argv"`
	Env        []string          `json:"env"` // base environment
	Prestart   bool              `json:"prestart"`
	NoSeccomp  bool              `json:"no_seccomp"` // only when the operator waived the layer on a host without it
}

// goMessage starts the run.
type goMessage struct {
	Env     []string      `json:"env"` // full environment if the program starts now
	Rlimits []rlimitValue `json:"rlimits"`
	Payload []byte        `json:"payload"`
}

type rlimitValue struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// event is one line from init to the host.
type event struct {
	Ready  bool   `json:"ready,omitempty"`
	Exit   *exit  `json:"exit,omitempty"`
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
}

type exit struct {
	Code   int `json:"code"`
	Signal int `json:"signal"`
}

func runInit() {
	runtime.LockOSThread() // namespaces, capabilities and seccomp are per thread
	for fd := fdControl; fd <= fdExe; fd++ {
		syscall.CloseOnExec(fd)
	}
	events := json.NewEncoder(os.NewFile(fdEvents, "events"))
	fail := func(err error) {
		_ = events.Encode(event{Error: err.Error()})
		os.Exit(1)
	}
	control := json.NewDecoder(os.NewFile(fdControl, "control"))
	var cfg setupConfig
	if err := control.Decode(&cfg); err != nil {
		fail(fmt.Errorf("init: read setup: %w", err))
	}
	if err := setup(&cfg); err != nil {
		fail(err)
	}
	var child *program
	if cfg.Prestart {
		var err error
		if child, err = startProgram(&cfg, cfg.Env); err != nil {
			fail(err)
		}
		// Ready means the interpreter has started and waits for its code.
		var b [1]byte
		_, _ = child.ready.Read(b[:])
	}
	if err := events.Encode(event{Ready: true}); err != nil {
		os.Exit(1)
	}
	var msg goMessage
	if err := control.Decode(&msg); err != nil {
		os.Exit(0) // the host let go of this sandbox without using it
	}
	// From here the host's end of the control pipe closing means "stop".
	go func() {
		var b [1]byte
		_, _ = unix.Read(fdControl, b[:])
		os.Exit(2)
	}()
	if child == nil {
		var err error
		if child, err = startProgram(&cfg, msg.Env); err != nil {
			fail(err)
		}
	}
	for _, rl := range msg.Rlimits {
		lim := unix.Rlimit{Cur: rl.Value, Max: rl.Value}
		if err := unix.Prlimit(child.pid, rl.Resource, &lim, nil); err != nil {
			fail(fmt.Errorf("init: rlimit %d: %w", rl.Resource, err))
		}
	}
	sendPayload := func() {
		// The program may exit without reading its payload; that is its business.
		_, _ = child.request.Write(msg.Payload)
		child.request.Close()
	}
	if len(msg.Payload) <= pipeBuffer {
		sendPayload() // fits in the pipe: no need to wait for a reader
	} else {
		go sendPayload()
	}
	st := reap(child.pid)
	ex := &exit{Code: st.ExitStatus()}
	if st.Signaled() {
		ex.Code, ex.Signal = -1, int(st.Signal())
	}
	_ = events.Encode(event{Exit: ex})
	os.Exit(0)
}

func setup(cfg *setupConfig) error {
	// A cgroup namespace rooted at the sandbox's own group (the host has
	// attached init to it before sending the setup).
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("cgroup namespace: %w", err)
	}
	if err := buildRoot(cfg); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if err := dropBoundingSet(); err != nil {
		return err
	}
	if cfg.NoSeccomp {
		return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	return loadSeccomp()
}

// program is the user's process, started by init.
type program struct {
	pid     int
	request *os.File // write end of the program's fd 3
	ready   *os.File // read end of the program's fd 4
}

func startProgram(cfg *setupConfig, env []string) (*program, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	defer r.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	defer readyW.Close()
	pid, err := syscall.ForkExec(cfg.Path, cfg.Argv, &syscall.ProcAttr{
		Dir:   "/work",
		Env:   env,
		Files: []uintptr{fdStdin, fdStdout, fdStderr, r.Fd(), readyW.Fd()},
		Sys: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.UID), Groups: []uint32{}},
		},
	})
	if err != nil {
		w.Close()
		readyR.Close()
		return nil, fmt.Errorf("init: start %s: %w", cfg.Path, err)
	}
	return &program{pid: pid, request: w, ready: readyR}, nil
}

// reap waits for children, as PID 1 must, until pid exits.
func reap(pid int) syscall.WaitStatus {
	for {
		var st syscall.WaitStatus
		got, err := syscall.Wait4(-1, &st, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return st
		}
		if got == pid {
			return st
		}
	}
}

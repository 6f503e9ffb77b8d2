package linux

import (
	"encoding/json"
	"fmt"
	"math"
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
//	fd 3  host → init: a setupConfig, then {} once init is in its cgroups
//	      (JSON values); closing it later means "stop"
//	fd 4  init → host: event lines: {"ready"}, then {"exit"}, or {"error"}
//	fd 5, 6, 7: the program's stdin, stdout and stderr
//	fd 8  this executable (how init was started; closed on the next exec)
//	fd 9  the program's request pipe (the host writes the payload)
//	fd 10, 11: the program's ready pipe (read end, write end)
//	fd 12, 13, 14: the workspace's work/, tmp/ and shm/ (detached mounts)
//
// It builds the root file system (mount.go), names the host (UTS namespace),
// brings up loopback (net.go), pivots, and then, on its one locked OS thread,
// drops the capability bounding set (caps.go), sets no_new_privs and loads
// the seccomp filter (seccomp.go). The program (the interpreter, running its
// bootstrap) is forked from that thread, inheriting all three, and runs
// under an unprivileged uid; when it says it is ready, init tells the host.
// The host then applies the run's limits and writes the code to the program
// directly. Init reaps orphans; when the program exits it reports the status
// and exits, and the kernel kills whatever is left in the PID namespace.
//
// A zygote's sandbox has no such init: its PID 1 is a fork of the zygote
// that speaks the same protocol on the same two pipes (zygote.py), in a
// copy of the root that one init built as a template (setupConfig.Template).

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
	fdRequest = 9
	fdReady   = 10
	fdReadyW  = 11
	// fdWork, fdTmp and fdShm are the workspace's directories as
	// detached mounts (workspace.clones), which init mounts in its root.
	fdWork = 12
	fdTmp  = 13
	fdShm  = 14
	// fdSystemTrees on are the runtime's system trees as detached mounts
	// (systree.go), one per entry of setupConfig.SystemTrees, in order.
	fdSystemTrees = 15
)

// setupConfig is what init needs to build the sandbox.
type setupConfig struct {
	RootMount  string            `json:"root_mount"`  // empty directory on the host to assemble the root on
	SourceRoot string            `json:"source_root"` // "/" or an unpacked image
	Hostname   string            `json:"hostname"`
	EtcFiles   map[string]string `json:"etc_files"` // generated /etc files
	UID        int               `json:"uid"`       // the program's uid and gid inside
	Path       string            `json:"path"`      // interpreter
	Argv       []string          `json:"argv"`
	Env        []string          `json:"env"`
	NoSeccomp  bool              `json:"no_seccomp"` // only when the operator waived the layer on a host without it
	// Seccomp is the system-call filter in the kernel's layout
	// (seccompBytes), which the host assembles once per runtime: init
	// only loads it.
	Seccomp []byte `json:"seccomp,omitempty"`
	// SystemTrees are where the system trees the host made go in the root
	// ("usr", "etc/ssl"), their detached mounts at fdSystemTrees on; when
	// there are none (a kernel without overlayfs), init mounts each tree
	// itself (mountSystemTree).
	SystemTrees []string `json:"system_trees,omitempty"`
	// Template builds only the read-only root, without /proc and the
	// workspace, in a mount namespace of its own that the host keeps (by a
	// descriptor) for the zygote to make sandboxes from; init then waits
	// for the host to let go and exits.
	Template bool `json:"template,omitempty"`
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
	events := json.NewEncoder(os.NewFile(fdEvents, "events"))
	fail := func(err error) {
		_ = events.Encode(event{Error: err.Error()})
		os.Exit(1)
	}
	if err := closeInherited(); err != nil {
		fail(err)
	}
	var cfg setupConfig
	control := json.NewDecoder(os.NewFile(fdControl, "control"))
	if err := control.Decode(&cfg); err != nil {
		fail(fmt.Errorf("init: read setup: %w", err))
	}
	if cfg.Template {
		if err := buildRoot(&cfg); err != nil {
			fail(err)
		}
		if err := events.Encode(event{Ready: true}); err != nil {
			os.Exit(1)
		}
		var b [1]byte
		_, _ = unix.Read(fdControl, b[:])
		os.Exit(0)
	}
	if err := setup(&cfg); err != nil {
		fail(err)
	}
	// The host may still be moving init into the sandbox's cgroups (v1);
	// its second message says it is done. The cgroup namespace is rooted
	// at the cgroup init is in when it is made, so only now.
	var attached struct{}
	if err := control.Decode(&attached); err != nil {
		os.Exit(0) // the host let go during set-up
	}
	if err := restrict(&cfg); err != nil {
		fail(err)
	}
	pid, err := startProgram(&cfg)
	if err != nil {
		fail(err)
	}
	// Only the program holds its standard streams: the host sees the end of
	// its output as soon as the program and its children are gone.
	for _, fd := range []int{fdStdin, fdStdout, fdStderr} {
		unix.Close(fd)
	}
	// The host closing its end of the control pipe means "stop".
	go func() {
		var b [1]byte
		_, _ = unix.Read(fdControl, b[:])
		os.Exit(2)
	}()
	// Ready means the interpreter has started and waits for its code; an
	// interpreter that died instead is reported by its exit below.
	var b [1]byte
	_, _ = unix.Read(fdReady, b[:])
	unix.Close(fdReady)
	if err := events.Encode(event{Ready: true}); err != nil {
		os.Exit(1)
	}
	st := reap(pid)
	ex := &exit{Code: st.ExitStatus()}
	if st.Signaled() {
		ex.Code, ex.Signal = -1, int(st.Signal())
	}
	_ = events.Encode(event{Exit: ex})
	os.Exit(0)
}

// closeInherited makes every descriptor of init close on exec: its own
// (fds 3 to 14, which it uses and hands on by name), and any other that the
// process which started coderun left open without close-on-exec (a shell's
// "exec 7</etc", a framework's socket) and that came along through the
// host's fork and exec. Nothing init execs, the program least of all, then
// gets a descriptor it was not explicitly given. Close-on-exec rather than
// close: the Go runtime may hold descriptors of its own here.
func closeInherited() error {
	if err := unix.CloseRange(fdControl, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("init: close inherited descriptors: %w", err)
	}
	return nil
}

// setup builds the sandbox: its file system, host name and network.
func setup(cfg *setupConfig) error {
	if err := buildRoot(cfg); err != nil {
		return err
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		return fmt.Errorf("hostname: %w", err)
	}
	return loopbackUp()
}

// restrict makes the cgroup and time namespaces, then takes from this thread (and
// so from what it forks) every capability the program could gain, and
// loads the system-call filter.
func restrict(cfg *setupConfig) error {
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("cgroup namespace: %w", err)
	}
	if err := newTimeNamespace(); err != nil { // timens.go
		return err
	}
	if err := dropBoundingSet(); err != nil {
		return err
	}
	if err := restrictWrites(); err != nil { // landlock.go
		return err
	}
	if cfg.NoSeccomp {
		return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	return loadSeccomp(cfg.Seccomp)
}

// startProgram forks the interpreter from init's locked thread, inheriting
// its seccomp filter, no_new_privs and empty bounding set, as the
// unprivileged user: stdio on fds 0-2, the request pipe on fd 3 and the
// ready pipe on fd 4 (see sandbox.Interpreter).
func startProgram(cfg *setupConfig) (int, error) {
	pid, err := syscall.ForkExec(cfg.Path, cfg.Argv, &syscall.ProcAttr{
		Dir:   "/work",
		Env:   cfg.Env,
		Files: []uintptr{fdStdin, fdStdout, fdStderr, fdRequest, fdReadyW},
		Sys: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: uint32(cfg.UID), Gid: uint32(cfg.UID), Groups: []uint32{}},
		},
	})
	unix.Close(fdRequest)
	unix.Close(fdReadyW)
	if err != nil {
		return 0, fmt.Errorf("init: start %s: %w", cfg.Path, err)
	}
	return pid, nil
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

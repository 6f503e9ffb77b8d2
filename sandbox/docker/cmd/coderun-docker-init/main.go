// Command coderun-docker-init is the first program of every process the
// docker runtime starts in a container: it lays a Landlock domain on
// itself that denies every kind of write by path except beneath /work,
// /tmp and /dev/shm and to the harmless character devices of /dev, then
// executes the command line it was given, which inherits the domain (it
// survives fork and exec, and nothing lifts it).
//
// The container's root is read-only already; what the domain adds is what
// the kernel lets a process write about itself by path: above all
// /proc/self/oom_score_adj, which the engine sets to 1000 so that the
// kernel's OOM killer takes sandboxed code first, and which a process may
// otherwise lower again (the floor that would stop it is set only by a
// writer with CAP_SYS_RESOURCE, which neither the engine nor the host may
// have), then comm, coredump_filter and the rest of /proc/<pid>.
//
// The runtime bind-mounts this program, built static by `go generate
// ./sandbox/docker` and embedded in the runtime, read-only into each
// container. A kernel without Landlock runs the command without the domain
// (exit status 125 is kept for a domain that could not be laid).
//
// With --supervise DIR it is the container's init (pid 1) and the runtime's
// hands in it. DIR holds named pipes the host opened before the container
// started: in and payload (the host writes), out, err, ready and status
// (the host reads). The command runs as the init's child in a process group
// of its own, under the domain, with in on fd 0, out on 1, err on 2,
// payload on 3 and ready on 4: a bootstrap waits on fd 3 for its program,
// so the host starts a container ahead of its request and hands it the
// program later. in and payload reach the child through anonymous pipes the
// init copies into, reading each named pipe only once poll says it is
// readable (copyWhenReadable: under gVisor a read may block its process's
// every thread) (a program that reopens /dev/stdin or /dev/fd/3, as
// bash's bootstrap does, gets what is left of them, never a named pipe
// whose writer is gone); with --direct-stdin, in is the child's fd 0
// itself (the runtime's long-lived sandboxes: the host, which holds the
// pipe's only write end, sees from /proc when the program blocks reading
// it, and the program cannot open it for writing). When the command ends the init writes its wait
// status, in decimal and a newline, to status, and stays, reaping what the
// command left, until the host kills the container: the container's cgroup,
// with its accounting, lives until the host has read it. The init is pid 1
// of the container's pid namespace, which its processes cannot signal (it
// takes and drops every signal: see dropSignals), and not dumpable, so
// that they cannot trace it or open its descriptors.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { runtime.LockOSThread() } // the domain is the thread's; exec from it

// writableDirs are the trees a program may write beneath.
var writableDirs = []string{"/work", "/tmp", "/dev/shm"}

// writableFiles are the device files a program may write.
var writableFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "--supervise" && len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: coderun-docker-init [--supervise [--direct-stdin] DIR] COMMAND [ARG...]")
		os.Exit(125)
	}
	if os.Args[1] == "--supervise" {
		args, direct := os.Args[2:], false
		if args[0] == "--direct-stdin" {
			args, direct = args[1:], true
		}
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: coderun-docker-init --supervise [--direct-stdin] DIR COMMAND [ARG...]")
			os.Exit(125)
		}
		if err := supervise(args[0], args[1:], direct); err != nil {
			fmt.Fprintf(os.Stderr, "coderun-docker-init: %v\n", err)
			os.Exit(125)
		}
		return
	}
	if err := restrictWrites(); err != nil {
		fmt.Fprintf(os.Stderr, "coderun-docker-init: %v\n", err)
		os.Exit(125)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "coderun-docker-init: %v\n", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "coderun-docker-init: exec %s: %v\n", path, err)
	os.Exit(126)
}

// writeRights are the Landlock rights that write, create, remove, link or
// truncate by path in ABI version abi, and those of them a file can have.
func writeRights(abi int) (handled, file uint64) {
	file = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	handled = file | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	if abi >= 2 {
		handled |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		handled |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		file |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return handled, file
}

// restrictWrites lays the domain on the calling (locked) thread. The
// engine has set no_new_privs, which Landlock requires.
func restrictWrites() error {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || abi < 1 {
		return nil // no Landlock in this kernel
	}
	handled, file := writeRights(int(abi))
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&handled)), unsafe.Sizeof(handled), 0)
	if errno != 0 {
		return fmt.Errorf("landlock: create ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, d := range writableDirs {
		if err := allow(ruleset, d, handled); err != nil {
			return err
		}
	}
	for _, f := range writableFiles {
		if err := allow(ruleset, f, file); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock: restrict: %w", errno)
	}
	return nil
}

// allow adds "access beneath path" to ruleset; a path that does not exist
// is skipped.
func allow(ruleset int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("landlock: %s: %w", path, err)
	}
	defer unix.Close(fd)
	var attr [12]byte // struct landlock_path_beneath_attr (packed)
	*(*uint64)(unsafe.Pointer(&attr[0])) = access
	*(*int32)(unsafe.Pointer(&attr[8])) = int32(fd)
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr[0])), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: allow %s: %w", path, errno)
	}
	return nil
}

// dropSignals takes every signal sent to the init and drops it. The
// kernel gives pid 1 of a pid namespace only the signals it has a handler
// for, when its own processes send them, and Go's runtime has a handler
// for every signal: by default SIGTERM, SIGINT and SIGHUP from the
// program made the init exit, and SIGQUIT, SIGABRT, SIGSEGV or SIGSYS
// made it throw, ending the container and its program with it. Its child
// starts with the default dispositions (a forked child's are reset).
func dropSignals() {
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs)
	go func() {
		for range sigs {
		}
	}()
}

// copyWhenReadable copies the named pipe fifo (open non-blocking) to w
// until its end, reading only once poll(2) has said it is readable, so
// that no read ever waits for data. Under gVisor's runsc a read may: its
// Sentry opens a host FIFO (directfs, its default) without O_NONBLOCK and
// ignores the flag set on it from inside, so a read of a pipe that has a
// writer but no data waited in the host's read(2), holding the init's
// address space: the init's next fork or unmap waited for it, and its
// every thread with that, until the host wrote, which the host does only
// once the program is ready. About one container start in 25 never got
// ready so (README, Docker with runsc). Poll waits in the Sentry,
// holding nothing; after it a read returns at once.
func copyWhenReadable(w io.Writer, fifo int) {
	buf := make([]byte, 32<<10)
	pfd := []unix.PollFd{{Fd: int32(fifo), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		n, err := unix.Read(fifo, buf)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			continue
		case err != nil || n == 0: // the host's write end is closed
			return
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return // the program closed its end
		}
	}
}

// supervise runs argv as described in the package comment; with
// directStdin, the command's fd 0 is the named pipe in itself. It returns
// only on an error before the command started.
func supervise(dir string, argv []string, directStdin bool) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl: %w", err)
	}
	dropSignals()
	open := func(name string, flag int) (*os.File, error) {
		f, err := os.OpenFile(filepath.Join(dir, name), flag, 0)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	status, err := open("status", os.O_WRONLY)
	if err != nil {
		return err
	}
	var fds [5]*os.File
	for i, spec := range []struct {
		name string
		flag int
	}{{"in", os.O_RDONLY}, {"out", os.O_WRONLY}, {"err", os.O_WRONLY}, {"payload", os.O_RDONLY}, {"ready", os.O_WRONLY}} {
		if spec.flag == os.O_RDONLY && !(directStdin && spec.name == "in") {
			fifo, err := unix.Open(filepath.Join(dir, spec.name), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			if err != nil {
				return &os.PathError{Op: "open", Path: filepath.Join(dir, spec.name), Err: err}
			}
			r, w, err := os.Pipe()
			if err != nil {
				return err
			}
			go func() {
				copyWhenReadable(w, fifo)
				w.Close()
				unix.Close(fifo)
			}()
			fds[i] = r
			continue
		}
		f, err := open(spec.name, spec.flag)
		if err != nil {
			return err
		}
		fds[i] = f
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	// The pipes are open (writing to them by path is what the domain
	// denies): from here on the init and its child hold it.
	if err := restrictWrites(); err != nil {
		return err
	}
	files := make([]uintptr, len(fds))
	for i, f := range fds {
		files[i] = f.Fd()
	}
	// From the locked main thread, which holds the Landlock domain.
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env: os.Environ(), Files: files,
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	for _, f := range fds {
		f.Close() // the child's now; the copies keep their pipes' write ends
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // no child left: wait for the host's kill
			time.Sleep(time.Hour)
			continue
		}
		if got == pid {
			fmt.Fprintf(status, "%d\n", uint32(ws))
			status.Close()
		}
	}
}

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
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() { runtime.LockOSThread() } // the domain is the thread's; exec from it

// writableDirs are the trees a program may write beneath.
var writableDirs = []string{"/work", "/tmp", "/dev/shm"}

// writableFiles are the device files a program may write.
var writableFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: coderun-docker-init COMMAND [ARG...]")
		os.Exit(125)
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

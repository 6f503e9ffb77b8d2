// Package procfs reads, from the host's /proc, what a sandboxed process is
// doing: whether its main thread is blocked reading a given pipe, which is
// how a runtime tells a session that the interpreter waits for its input
// (sandbox.Process.AwaitingInput) without taking the interpreter's word.
package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// BlockedRead reports whether pid's main thread is blocked in read(2), and
// on which descriptor. /proc/<pid>/syscall says "running" for a running
// thread, "-1 ..." for one blocked outside a system call, and "NR ARG0 ..."
// (in hex) for one blocked in system call NR.
func BlockedRead(pid int) (fd int, ok bool, err error) {
	f, err := unix.Open(fmt.Sprintf("/proc/%d/syscall", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false, fmt.Errorf("awaiting input: %w", err)
	}
	var buf [256]byte
	n, err := unix.Read(f, buf[:])
	unix.Close(f)
	if err != nil {
		return 0, false, fmt.Errorf("awaiting input: read syscall: %w", err)
	}
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 2 || fields[0] != strconv.Itoa(unix.SYS_READ) {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(fields[1], "0x"), 16, 31)
	if err != nil {
		return 0, false, nil
	}
	return int(v), true, nil
}

// ID names a file: its device and inode, as stat(2) gives them.
type ID struct{ Dev, Ino uint64 }

// IDOf is the ID of the open file f (a pipe's: either end).
func IDOf(f *os.File) (ID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return ID{}, fmt.Errorf("stdin pipe: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return ID{}, fmt.Errorf("stdin pipe: not a pipe (mode %#o)", st.Mode)
	}
	return ID{Dev: st.Dev, Ino: st.Ino}, nil
}

// Reading reports whether pid's main thread is blocked in read(2) on a
// descriptor of the file id names (an anonymous pipe or a named one).
func Reading(pid int, id ID) (bool, error) {
	fd, ok, err := BlockedRead(pid)
	if err != nil || !ok {
		return false, err
	}
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil // closed (or dup2'd) while we looked
		}
		return false, fmt.Errorf("awaiting input: %w", err)
	}
	return st.Dev == id.Dev && st.Ino == id.Ino, nil
}

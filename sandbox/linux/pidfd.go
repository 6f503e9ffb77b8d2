package linux

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pidfdInfo is the kernel's struct pidfd_info as of its first version
// (PIDFD_INFO_SIZE_VER0, 64 bytes), whose last field became exit_code.
type pidfdInfo struct {
	mask     uint64
	cgroupID uint64
	pid      uint32
	tgid     uint32
	ppid     uint32
	ids      [8]uint32 // ruid rgid euid egid suid sgid fsuid fsgid
	exitCode int32
}

const (
	pidfdInfoExit = 1 << 3 // PIDFD_INFO_EXIT
	// pidfdGetInfo is PIDFD_GET_INFO: _IOWR(0xFF, 11, struct pidfd_info).
	pidfdGetInfo = 3<<30 | uintptr(unsafe.Sizeof(pidfdInfo{}))<<16 | 0xFF<<8 | 11
)

// errNoExitInfo: the process has not been reaped yet, or the kernel keeps
// no exit status with pidfds (before Linux 6.15).
var errNoExitInfo = errors.New("no exit status with the pidfd yet")

// pidfdExitStatus returns the wait status of the process pidfd refers to,
// which the kernel keeps once its parent has reaped it, whoever that
// parent is (the host's pidfd of a zygote's sandbox init: the zygote reaps it).
func pidfdExitStatus(pidfd int) (syscall.WaitStatus, error) {
	info := pidfdInfo{mask: pidfdInfoExit}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pidfd), pidfdGetInfo, uintptr(unsafe.Pointer(&info)))
	switch {
	case e == unix.ESRCH:
		return 0, errNoExitInfo
	case e == unix.ENOTTY || e == unix.EINVAL:
		return 0, fmt.Errorf("this kernel keeps no exit status with pidfds (PIDFD_GET_INFO: %w)", e)
	case e != 0:
		return 0, fmt.Errorf("read the exit status from its pidfd: %w", e)
	case info.mask&pidfdInfoExit == 0:
		return 0, errNoExitInfo
	}
	return syscall.WaitStatus(info.exitCode), nil
}

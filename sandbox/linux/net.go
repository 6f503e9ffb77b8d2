package linux

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loopbackUp brings up "lo" in the sandbox's empty network namespace, so that
// programs may talk to themselves over 127.0.0.1. The namespace has no other
// interface and no route out: nothing can reach the host or the network.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	var req [unix.IFNAMSIZ + 24]byte
	copy(req[:], "lo")
	flags := (*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ]))
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return fmt.Errorf("loopback: get flags: %w", e)
	}
	*flags |= unix.IFF_UP
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return fmt.Errorf("loopback: set flags: %w", e)
	}
	return nil
}

package linux

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. They change mounts or
// namespaces, inspect or control other processes, reach the kernel's
// keyrings, BPF, perf and io_uring attack surface, load kernel code, or
// change the machine's clock and power state.
var deniedSyscalls = []string{
	// mounts and namespaces
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"open_by_handle_at", "name_to_handle_at",
	// other processes
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	// kernel attack surface
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	// kernel code and machine state
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "vhangup", "lookup_dcookie", "uselib", "ustat", "sysfs",
	// watching files: the system tree is the host's (or, under the zygote,
	// every sandbox's), so a watch on it sees what others open
	"inotify_init", "inotify_init1", "fanotify_init",
}

// namespaceCloneFlags are the clone(2) flags that would create namespaces.
var namespaceCloneFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER,
	unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// deniedSocketDomains are address families other than unix, inet, inet6 and
// netlink: packet sockets, vsock (which crosses namespaces to the
// hypervisor), AF_ALG, AF_KEY, bluetooth, CAN and the rest, up to
// lastListedDomain; every family above it is refused as well.
func deniedSocketDomains() []uint64 {
	var out []uint64
	for d := uint64(0); d <= lastListedDomain; d++ {
		switch d {
		case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK:
		default:
			out = append(out, d)
		}
	}
	return out
}

// lastListedDomain is the last address family deniedSocketDomains lists.
const lastListedDomain = 16

// deniedSocketTypes are the socket types refused, whatever socket(2)'s
// flags: raw and packet sockets.
var deniedSocketTypes = []uint64{unix.SOCK_RAW, unix.SOCK_PACKET}

// netlinkRoute is the one netlink protocol a program may open: rtnetlink,
// through which libc lists the (loopback-only) interfaces. The others
// reach kernel state beyond the sandbox's network namespace: above all
// NETLINK_KOBJECT_UEVENT, the host's device events, which the kernel
// broadcasts into network namespaces owned by the initial user namespace
// (the zygote's sandboxes have one).
const netlinkRoute = unix.NETLINK_ROUTE

// seccompPolicy is the sandbox's filter: allow by default, deny the above.
func seccompPolicy() seccomp.Policy {
	var cond []seccomp.NameWithConditions
	for _, f := range namespaceCloneFlags {
		cond = append(cond, seccomp.NameWithConditions{Name: "clone", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.BitsSet, Value: f},
		}})
	}
	for _, d := range deniedSocketDomains() {
		cond = append(cond, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: d},
		}})
	}
	cond = append(cond,
		seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.GreaterThan, Value: lastListedDomain},
		}},
		seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_NETLINK},
			{Argument: 2, Operation: seccomp.NotEqual, Value: netlinkRoute},
		}},
	)
	// Raw and packet sockets by type. The filter's BitsSet matches when any
	// bit is set, which would catch SOCK_STREAM (1) and SOCK_DGRAM (2) as
	// well, so each denied type is listed with every combination of the
	// two flags socket(2) accepts; types above the largest valid value
	// (garbage in the upper bits included) are refused outright.
	const typeFlags = unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK
	for _, typ := range deniedSocketTypes {
		for _, flags := range []uint64{0, unix.SOCK_CLOEXEC, unix.SOCK_NONBLOCK, typeFlags} {
			cond = append(cond, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
				{Argument: 1, Operation: seccomp.Equal, Value: typ | flags},
			}})
		}
	}
	cond = append(cond, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
		{Argument: 1, Operation: seccomp.GreaterThan, Value: typeFlags | 0xf},
	}})
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: deniedSyscalls, NamesWithCondtions: cond},
			// clone3 passes its flags in memory, where a filter cannot look:
			// report it as missing so that libc falls back to clone.
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
}

// seccompProgram assembles the filter: system calls of any other
// architecture (the 32-bit x86 ABI on x86_64, for one) kill the process, so
// the filter cannot be bypassed; the rest follows seccompPolicy.
func seccompProgram() ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	policy := seccompPolicy()
	insts, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}, insts...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return filter, nil
}

// loadSeccomp installs the filter, in the kernel's layout (seccompBytes),
// on the calling thread (which must be locked), after setting
// no_new_privs. Children forked from this thread inherit both. No filter,
// or one that is not whole instructions, is an error: init never runs a
// program unfiltered unless the operator waived the layer (NoSeccomp).
// The host assembles it (once per runtime) rather than each init: the
// assembly cost a cold sandbox's init 0.29 ms of CPU on its path to the
// program's start (perf over 40 runs).
func loadSeccomp(raw []byte) error {
	filter, err := decodeFilter(raw)
	if err != nil {
		return err
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: load filter: %w", errno)
	}
	return nil
}

// decodeFilter reads a filter in the kernel's layout (seccompBytes).
func decodeFilter(raw []byte) ([]unix.SockFilter, error) {
	if len(raw) == 0 || len(raw)%8 != 0 || len(raw)/8 > 0xffff {
		return nil, fmt.Errorf("seccomp: the host sent a filter of %d bytes, not whole instructions", len(raw))
	}
	filter := make([]unix.SockFilter, len(raw)/8)
	for i := range filter {
		b := raw[8*i:]
		filter[i] = unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])}
	}
	return filter, nil
}

// seccompBytes is the filter in the kernel's layout (struct sock_filter,
// little-endian), for a process that loads it itself (the zygote's children).
func seccompBytes() ([]byte, error) {
	filter, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(filter))
	for _, f := range filter {
		out = binary.LittleEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.LittleEndian.AppendUint32(out, f.K)
	}
	return out, nil
}

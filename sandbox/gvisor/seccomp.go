package gvisor

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The system-call filter the Sentry applies to the program (runsc's
// --oci-seccomp): the linux runtime's policy (sandbox/linux, seccomp.go),
// in the OCI spec's terms. Under gVisor none of these calls reaches the
// host's kernel (the Sentry implements or refuses them itself), so the
// filter narrows the Sentry's own surface and gives programs the same
// answers (EPERM) on every runtime: no namespaces, mounts, keyrings, perf,
// BPF, io_uring, kernel log or file watches.

// deniedSyscalls fail with EPERM inside the sandbox.
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
	// watching files
	"inotify_init", "inotify_init1", "fanotify_init",
	// clone3 is allowed: runsc answers every denied call with EPERM (the
	// spec's errnoRet is not read), and glibc falls back to clone only on
	// ENOSYS, so denying it would leave programs without threads. The
	// namespaces clone3 could ask for would be the Sentry's own.
}

// namespaceCloneFlags are the clone(2) flags that would create namespaces.
var namespaceCloneFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER,
	unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// seccompProfile is the filter: allow by default, deny the above, clone
// with a namespace flag, and sockets of families other than unix, inet,
// inet6 and netlink (route only), raw and packet sockets.
func seccompProfile() *specs.LinuxSeccomp {
	deny := func(names ...string) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: names, Action: specs.ActErrno}
	}
	s := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchAARCH64},
		Syscalls:      []specs.LinuxSyscall{deny(deniedSyscalls...)},
	}
	for _, f := range namespaceCloneFlags {
		sc := deny("clone")
		sc.Args = []specs.LinuxSeccompArg{{Index: 0, Value: f, ValueTwo: f, Op: specs.OpMaskedEqual}}
		s.Syscalls = append(s.Syscalls, sc)
	}
	for d := uint64(0); d <= 64; d++ {
		switch d {
		case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK:
			continue
		}
		sc := deny("socket")
		sc.Args = []specs.LinuxSeccompArg{{Index: 0, Value: d, Op: specs.OpEqualTo}}
		s.Syscalls = append(s.Syscalls, sc)
	}
	netlink := deny("socket")
	netlink.Args = []specs.LinuxSeccompArg{
		{Index: 0, Value: unix.AF_NETLINK, Op: specs.OpEqualTo},
		{Index: 2, Value: unix.NETLINK_ROUTE, Op: specs.OpNotEqual},
	}
	s.Syscalls = append(s.Syscalls, netlink)
	const typeMask = 0xf // the type, without SOCK_CLOEXEC and SOCK_NONBLOCK
	for _, typ := range []uint64{unix.SOCK_RAW, unix.SOCK_PACKET} {
		sc := deny("socket")
		sc.Args = []specs.LinuxSeccompArg{{Index: 1, Value: typeMask, ValueTwo: typ, Op: specs.OpMaskedEqual}}
		s.Syscalls = append(s.Syscalls, sc)
	}
	return s
}

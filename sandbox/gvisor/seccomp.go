package gvisor

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox/linux"
)

// The system-call filter the Sentry applies to the program (runsc's
// --oci-seccomp): the linux runtime's policy (sandbox/linux, seccomp.go),
// in the OCI spec's terms. Under gVisor none of these calls reaches the
// host's kernel (the Sentry implements or refuses them itself), so the
// filter narrows the Sentry's own surface and gives programs the same
// answers (EPERM) on every runtime: no namespaces, mounts, keyrings, perf,
// BPF, io_uring, kernel log or file watches.

// clone3 is allowed: runsc answers every denied call with EPERM (the
// spec's errnoRet is not read), and glibc falls back to clone only on
// ENOSYS, so denying it would leave programs without threads (the linux
// runtime's filter answers it ENOSYS). The namespaces clone3 could ask
// for would be the Sentry's own.

// SeccompProfile is the filter for any runsc that applies a container's
// own (--oci-seccomp): the docker runtime's under oci_runtime: runsc.
func SeccompProfile() *specs.LinuxSeccomp { return seccompProfile() }

// seccompProfile is the filter: allow by default, deny the linux
// runtime's system calls (linux.DeniedSyscalls), clone with a namespace
// flag, sockets of the address families and types it refuses, and
// netlink sockets but of its one protocol.
func seccompProfile() *specs.LinuxSeccomp {
	deny := func(names ...string) specs.LinuxSyscall {
		return specs.LinuxSyscall{Names: names, Action: specs.ActErrno}
	}
	s := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchAARCH64},
		Syscalls:      []specs.LinuxSyscall{deny(linux.DeniedSyscalls()...)},
	}
	for _, f := range linux.NamespaceCloneFlags() {
		sc := deny("clone")
		sc.Args = []specs.LinuxSeccompArg{{Index: 0, Value: f, ValueTwo: f, Op: specs.OpMaskedEqual}}
		s.Syscalls = append(s.Syscalls, sc)
	}
	domains, last := linux.DeniedSocketDomains()
	for _, d := range domains {
		sc := deny("socket")
		sc.Args = []specs.LinuxSeccompArg{{Index: 0, Value: d, Op: specs.OpEqualTo}}
		s.Syscalls = append(s.Syscalls, sc)
	}
	above := deny("socket")
	above.Args = []specs.LinuxSeccompArg{{Index: 0, Value: last, Op: specs.OpGreaterThan}}
	netlink := deny("socket")
	netlink.Args = []specs.LinuxSeccompArg{
		{Index: 0, Value: unix.AF_NETLINK, Op: specs.OpEqualTo},
		{Index: 2, Value: linux.NetlinkProtocol(), Op: specs.OpNotEqual},
	}
	s.Syscalls = append(s.Syscalls, above, netlink)
	const typeMask = 0xf // the type, without SOCK_CLOEXEC and SOCK_NONBLOCK
	for _, typ := range linux.DeniedSocketTypes() {
		sc := deny("socket")
		sc.Args = []specs.LinuxSeccompArg{{Index: 1, Value: typeMask, ValueTwo: typ, Op: specs.OpMaskedEqual}}
		s.Syscalls = append(s.Syscalls, sc)
	}
	return s
}

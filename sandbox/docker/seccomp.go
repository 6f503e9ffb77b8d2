package docker

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/coderun/coderun/sandbox/gvisor"
)

// The containers' seccomp profile: Docker's default (an allow-list; what it
// does not name fails with EPERM), narrowed where it lets a program reach
// past its container, as the linux runtime's filter does:
//
//   - inotify: the image's files are every container's, so a watch on them
//     sees what other programs open (the linux runtime shares the host's).
//   - sockets: only unix, inet and inet6, and netlink's route protocol (libc
//     lists the interfaces through it). Docker's profile allows every family
//     but vsock: netlink's uevent protocol hears the host's device events,
//     audit, sock_diag, netfilter and generic reach kernel state beyond the
//     container, and the rarer families are attack surface.
//   - socketcall(2), the 32-bit ABIs' way to every socket call, which passes
//     its arguments in memory, where no filter looks (the direct socket(2)
//     of those ABIs stays, under the rules above).
//
// io_uring and vsock are refused by Docker's profile already (io_uring not
// named; socket's rule excludes AF_VSOCK), and stay so: the tests hold it.

// deniedSyscalls are names taken out of Docker's allow-list.
var deniedSyscalls = []string{"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "socketcall"}

// allowedSocketDomains are the address families socket(2) may create.
var allowedSocketDomains = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// seccompProfile returns the profile as the JSON the engine takes in
// HostConfig.SecurityOpt ("seccomp=<json>").
func seccompProfile() (string, error) {
	p := seccomp.DefaultProfile()
	var rules []*seccomp.Syscall
	for _, r := range p.Syscalls {
		if slices.Contains(r.Names, "socket") {
			continue // replaced below
		}
		r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return slices.Contains(deniedSyscalls, n) })
		if len(r.Names) > 0 {
			rules = append(rules, r)
		}
	}
	for _, d := range allowedSocketDomains {
		rules = append(rules, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
			Names: []string{"socket"}, Action: specs.ActAllow,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: d, Op: specs.OpEqualTo}},
		}})
	}
	rules = append(rules, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: []string{"socket"}, Action: specs.ActAllow,
		Args: []specs.LinuxSeccompArg{
			{Index: 0, Value: unix.AF_NETLINK, Op: specs.OpEqualTo},
			{Index: 2, Value: unix.NETLINK_ROUTE, Op: specs.OpEqualTo},
		},
	}})
	p.Syscalls = rules
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("the seccomp profile: %w", err)
	}
	return string(data), nil
}

// sentrySeccompProfile returns, as the engine's JSON, the profile for
// containers under gVisor's runsc, which the Sentry applies to the program
// (runsc's --oci-seccomp, scripts/docker.sh's registration): the gvisor
// runtime's (allow by default, deny the linux runtime's calls, sockets and
// namespace flags), not Docker's allow-list, whose clone3 rule (ENOSYS,
// which runsc answers EPERM, so glibc does not fall back to clone) leaves
// programs no threads. Under gVisor none of these calls reaches the host's
// kernel; the filter narrows the Sentry's surface and gives programs the
// answers they get on the other runtimes.
func sentrySeccompProfile() (string, error) {
	l := gvisor.SeccompProfile()
	p := &seccomp.Seccomp{LinuxSeccomp: specs.LinuxSeccomp{DefaultAction: l.DefaultAction, Architectures: l.Architectures}}
	for _, sc := range l.Syscalls {
		p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: sc})
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("the seccomp profile for runsc: %w", err)
	}
	return string(data), nil
}

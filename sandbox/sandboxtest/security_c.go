//go:build linux

package sandboxtest

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/language"
	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/toolchain"
)

// fromC runs the kernel-facing scenarios again from a C program, with raw
// system calls and no interpreter in the way: mounts, new namespaces
// (unshare, clone, through the x32 ABI too), ptrace and process_vm_readv
// of processes outside the program, socket families that reach past the
// sandbox's network, and a fork bomb. The program is compiled and run in
// the sandbox by sandbox/toolchain, so the runtime must keep sandboxes
// (sandbox.Interactive) and gcc must be installed; the test skips
// otherwise.
func (h *harness) fromC(t *testing.T) {
	if _, ok := h.rt.(sandbox.Interactive); !ok {
		t.Skip("the runtime keeps no sandboxes: C programs need a compile step and a run in one")
	}
	spec, _ := language.Lookup(language.C)
	if _, err := toolchain.Find("", spec); err != nil {
		t.Skip(err)
	}
	rt := toolchain.Wrap(h.rt, toolchain.Options{})
	t.Run("Syscalls", func(t *testing.T) {
		t.Parallel()
		res, err := rt.Run(t.Context(), sandbox.Request{Language: language.C, Code: cAttacks, Limits: limits(sandbox.Limits{WallTime: 20 * time.Second})})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Reason == sandbox.ReasonCompileError {
			t.Fatalf("the attack program did not compile:\n%s", res.Stderr)
		}
		var blocked int
		for _, l := range strings.Split(res.Stdout, "\n") {
			switch {
			case strings.HasPrefix(l, "ESCAPED "):
				t.Errorf("%s", l)
			case strings.HasPrefix(l, "BLOCKED "):
				blocked++
			}
		}
		if !strings.Contains(res.Stdout, "\nDONE\n") || blocked < 40 {
			t.Fatalf("the attack program did not run to its end (%d attempts blocked): %s\nstdout:\n%s\nstderr:\n%s", blocked, res.Summary(), res.Stdout, res.Stderr)
		}
	})
	t.Run("ForkBomb", func(t *testing.T) {
		t.Parallel()
		res, err := rt.Run(t.Context(), sandbox.Request{Language: language.C,
			Code:   "#include <unistd.h>\nint main(void) { for (;;) fork(); }\n",
			Limits: limits(sandbox.Limits{WallTime: 3 * time.Second, Processes: 24})})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Reason != sandbox.ReasonTimeout && res.Reason != sandbox.ReasonCPULimit {
			t.Errorf("fork bomb: %s; want it held by its process limit until its time ran out", res.Summary())
		}
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Errorf("the host cannot start a process after the fork bomb: %v", err)
		}
	})
}

// cAttacks tries each attack with a raw system call and prints one line
// per attempt: "BLOCKED what: errno" or "ESCAPED what", then "DONE".
const cAttacks = `#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

static void must_fail(const char *what, long r) {
	if (r >= 0) printf("ESCAPED %s (returned %ld)\n", what, r);
	else printf("BLOCKED %s: %s\n", what, strerror(errno));
	fflush(stdout);
}

int main(void) {
	char what[128];
	must_fail("mount tmpfs on /tmp", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
	must_fail("bind-mount / on /work", syscall(SYS_mount, "/", "/work", NULL, MS_BIND | MS_REC, NULL));
	must_fail("remount /usr read-write", syscall(SYS_mount, NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
	must_fail("mount proc", syscall(SYS_mount, "proc", "/work", "proc", 0, NULL));
	must_fail("umount /proc", syscall(SYS_umount2, "/proc", MNT_DETACH));
	must_fail("pivot_root", syscall(SYS_pivot_root, "/work", "/work"));

	int flags[] = {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP};
	const char *names[] = {"NEWUSER", "NEWNS", "NEWNET", "NEWPID", "NEWUTS", "NEWIPC", "NEWCGROUP"};
	for (int i = 0; i < 7; i++) {
		snprintf(what, sizeof what, "unshare(CLONE_%s)", names[i]);
		must_fail(what, syscall(SYS_unshare, flags[i]));
		snprintf(what, sizeof what, "clone(CLONE_%s)", names[i]);
		long pid = syscall(SYS_clone, flags[i] | SIGCHLD, 0, 0, 0, 0);
		if (pid == 0) _exit(0);
		if (pid > 0) waitpid(pid, NULL, 0);
		must_fail(what, pid);
	}
	must_fail("x32 unshare(CLONE_NEWUSER)", syscall(0x40000000 | SYS_unshare, CLONE_NEWUSER));
	must_fail("setns", syscall(SYS_setns, 0, 0));

	pid_t targets[] = {1, getppid()};
	for (int i = 0; i < 2; i++) {
		pid_t p = targets[i];
		struct stat st;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d", p);
		if (p == getpid() || (stat(path, &st) == 0 && st.st_uid == getuid())) continue;
		snprintf(what, sizeof what, "ptrace(PTRACE_ATTACH, %d)", p);
		must_fail(what, syscall(SYS_ptrace, PTRACE_ATTACH, p, 0, 0));
		snprintf(what, sizeof what, "ptrace(PTRACE_SEIZE, %d)", p);
		must_fail(what, syscall(SYS_ptrace, PTRACE_SEIZE, p, 0, 0));
		char buf[64];
		struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
		snprintf(what, sizeof what, "process_vm_readv(%d)", p);
		long r = syscall(SYS_process_vm_readv, p, &local, 1, &remote, 1, 0);
		if (r < 0 && errno == EFAULT) r = 0; /* allowed, only the address was bad */
		must_fail(what, r);
	}

	struct { int fam, type, proto; const char *what; } socks[] = {
		{AF_PACKET, SOCK_RAW, 0x0300, "AF_PACKET raw"}, {AF_PACKET, SOCK_DGRAM, 0x0300, "AF_PACKET dgram"},
		{AF_INET, SOCK_RAW, IPPROTO_ICMP, "raw ICMP"}, {AF_INET, SOCK_RAW, IPPROTO_RAW, "raw IP"},
		{AF_INET6, SOCK_RAW, IPPROTO_ICMPV6, "raw ICMPv6"}, {40, SOCK_STREAM, 0, "AF_VSOCK"},
		{3, SOCK_DGRAM, 0, "AF_AX25"}, {4, SOCK_DGRAM, 0, "AF_IPX"}, {5, SOCK_DGRAM, 0, "AF_APPLETALK"},
		{9, SOCK_SEQPACKET, 0, "AF_X25"}, {15, SOCK_RAW, 2, "AF_KEY"}, {21, SOCK_SEQPACKET, 0, "AF_RDS"},
		{24, SOCK_STREAM, 0, "AF_PPPOX"}, {29, SOCK_RAW, 1, "AF_CAN"}, {30, SOCK_RDM, 0, "AF_TIPC"},
		{31, SOCK_STREAM, 0, "AF_BLUETOOTH"}, {38, SOCK_SEQPACKET, 0, "AF_ALG"}, {41, SOCK_DGRAM, 0, "AF_KCM"},
		{42, SOCK_DGRAM, 0, "AF_QIPCRTR"}, {43, SOCK_STREAM, 0, "AF_SMC"}, {44, SOCK_RAW, 0, "AF_XDP"},
	};
	for (unsigned i = 0; i < sizeof socks / sizeof socks[0]; i++) {
		snprintf(what, sizeof what, "socket(%s)", socks[i].what);
		long fd = syscall(SYS_socket, socks[i].fam, socks[i].type, socks[i].proto);
		must_fail(what, fd);
		if (fd >= 0) close(fd);
	}
	const char *hosts[] = {"1.1.1.1", "8.8.8.8", "10.0.0.1", "192.168.0.1"};
	for (int i = 0; i < 4; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
		inet_pton(AF_INET, hosts[i], &a.sin_addr);
		snprintf(what, sizeof what, "connect to %s:53", hosts[i]);
		must_fail(what, fd < 0 ? -1 : connect(fd, (struct sockaddr *)&a, sizeof a));
		if (fd >= 0) close(fd);
	}
	printf("\nDONE\n");
	return 0;
}
`

//go:build linux

package sandboxtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// procMasked models reading kernel and host secrets through /proc: kernel
// memory (kcore), symbol addresses (kallsyms, defeating KASLR), the
// keyrings, timers and scheduler state of the whole machine, physical page
// data, slab and vmalloc layouts. Each must be absent, unreadable or
// empty. The /proc entries of processes the program does not own (the
// sandbox's init) must not reveal their environment, memory, binary,
// root, working directory, open files or memory map.
func (h *harness) procMasked(t *testing.T) {
	h.attack(t, attackPy(nil, `
for p in ["/proc/kcore", "/proc/kallsyms", "/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug",
          "/proc/kpagecount", "/proc/kpageflags", "/proc/kpagecgroup", "/proc/slabinfo", "/proc/vmallocinfo",
          "/proc/pagetypeinfo", "/proc/kmsg"]:
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        blocked("open " + p, ename(e.errno))
        continue
    try:
        data = os.read(fd, 4096)
    except OSError as e:
        blocked("read " + p, ename(e.errno))
        continue
    finally:
        os.close(fd)
    if data.strip():
        escaped("%s is readable: %r" % (p, data[:120]))
    else:
        blocked("read " + p, "masked (empty)")
uid = os.getuid()
for pid in pids():
    try:
        if os.stat("/proc/%d" % pid).st_uid == uid:
            continue
    except OSError:
        continue
    for what in ["environ", "mem", "maps", "smaps", "stack", "syscall", "auxv", "io", "timers"]:
        must_fail("read /proc/%d/%s (not the program's process)" % (pid, what), read, "/proc/%d/%s" % (pid, what), 64)
    for what in ["exe", "root", "cwd"]:
        must_fail("follow /proc/%d/%s" % (pid, what), os.readlink, "/proc/%d/%s" % (pid, what))
    must_fail("list /proc/%d/fd" % pid, os.listdir, "/proc/%d/fd" % pid)
    must_fail("list /proc/%d/map_files" % pid, os.listdir, "/proc/%d/map_files" % pid)
done()
`))
}

// sysHostInfo models reconnaissance through sysfs: the host's disks,
// network interfaces, firmware tables (ACPI, DMI serial numbers and UUID),
// and the debug, security and tracing file systems. /sys should be absent;
// if a runtime provides one, none of this may be in it.
func (h *harness) sysHostInfo(t *testing.T) {
	h.attack(t, attackPy(nil, `
if not os.path.exists("/sys"):
    blocked("look at /sys", "absent")
else:
    def entries(p):
        try:
            return os.listdir(p)
        except OSError:
            return []
    if entries("/sys/block"):
        escaped("/sys/block lists the host's disks: %s" % entries("/sys/block"))
    nets = [n for n in entries("/sys/class/net") if n != "lo"]
    if nets:
        escaped("/sys/class/net lists interfaces: %s" % nets)
    for d in ["/sys/firmware", "/sys/kernel/debug", "/sys/kernel/security", "/sys/kernel/tracing", "/sys/fs/bpf"]:
        if entries(d):
            escaped("%s is readable: %s" % (d, entries(d)[:10]))
    for f in ["/sys/class/dmi/id/product_uuid", "/sys/class/dmi/id/product_serial", "/sys/class/dmi/id/board_serial"]:
        try:
            data = read(f).strip()
            if data:
                escaped("%s is readable: %r" % (f, data))
        except OSError as e:
            blocked("read " + f, ename(e.errno))
done()
`))
}

// mountTable models learning the host's layout from the mount table:
// /proc/self/mountinfo, /proc/self/mounts and mountstats must not name
// the runtime's state directory, the project's tree, the test binary's
// directory, the host's temporary canary directory or any private path,
// and no mount may come from the host's /root or /home.
func (h *harness) mountTable(t *testing.T) {
	var private []string
	for _, p := range h.privatePaths() {
		// Files name their directory too; a bare "/" or system directory
		// would match legitimate mounts.
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			p = filepath.Dir(p)
		}
		if strings.Count(p, "/") >= 2 || strings.HasPrefix(p, "/run/") {
			private = append(private, p)
		}
	}
	res := h.attack(t, attackPy(map[string]any{"private": private}, `
for f in ["/proc/self/mountinfo", "/proc/self/mounts", "/proc/self/mountstats"]:
    try:
        text = read(f).decode(errors="replace")
    except OSError as e:
        blocked("read " + f, ename(e.errno))
        continue
    for p in ARGS["private"]:
        if p in text:
            escaped("%s names the host path %s" % (f, p))
    blocked("find private host paths in " + f, "%d lines, none" % len(text.splitlines()))
mi = read("/proc/self/mountinfo").decode()
print("MOUNTINFO:" + json.dumps(mi))
for line in mi.splitlines():
    f = line.split()
    for v in (f[3], f[4]):
        if v in ("/root", "/home") or v.startswith(("/root/", "/home/")):
            escaped("a mount involves the host's %s: %s" % (v, line))
done()
`))
	var mi string
	jsonLine(t, res, "MOUNTINFO:", &mi)
	t.Logf("sandbox mount table:\n%s", mi)
}

// cgroupView models learning the host's cgroup layout (and from it the
// service's name and the other tenants' groups) through /proc/self/cgroup:
// every path must lie within the sandbox's own cgroup namespace, which shows
// as "/" or a group below it (the linux runtime keeps the program in a
// "/prog" group of its own for the process limit).
func (h *harness) cgroupView(t *testing.T) {
	h.attack(t, attackPy(nil, `
for pid in ["self", "1"]:
    try:
        data = read("/proc/%s/cgroup" % pid).decode()
    except OSError as e:
        blocked("read /proc/%s/cgroup" % pid, ename(e.errno))
        continue
    for line in data.splitlines():
        path = line.split(":", 2)[2]
        if path not in ("/", "/prog") or ".." in path:
            escaped("/proc/%s/cgroup shows a host cgroup path: %s" % (pid, line))
    blocked("learn the host's cgroup paths from /proc/%s/cgroup" % pid, "all paths are within the sandbox's namespace")
done()
`))
}

// hostname models identifying the host (and correlating tenants on it)
// by its name, and renaming it: the sandbox is called "sandbox" whatever
// the host's name, and sethostname/setdomainname fail.
func (h *harness) hostname(t *testing.T) {
	res := h.attack(t, attackPy(map[string]any{"host": facts().hostname}, `
names = [socket.gethostname(), os.uname().nodename, read("/proc/sys/kernel/hostname").decode().strip()]
print("HOSTNAME:" + json.dumps(names))
if ARGS["host"] and ARGS["host"] != "sandbox" and ARGS["host"] in names:
    escaped("the host's name %s is visible" % ARGS["host"])
sc_must_fail("sethostname", NR["sethostname"], ctypes.c_char_p(b"pwned"), 5)
sc_must_fail("setdomainname", NR["setdomainname"], ctypes.c_char_p(b"pwned"), 5)
done()
`))
	var names []string
	jsonLine(t, res, "HOSTNAME:", &names)
	for _, n := range names {
		if n != "sandbox" {
			t.Errorf("hostname seen in the sandbox %q, want \"sandbox\" (all of gethostname, uname, /proc: %v)", n, names)
			break
		}
	}
}

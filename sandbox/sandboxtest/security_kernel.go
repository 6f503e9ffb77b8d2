//go:build linux

package sandboxtest

import (
	"runtime"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// mount models rebuilding the file system view: mounting a fresh proc,
// sysfs or cgroup (the release_agent escape), bind-mounting / elsewhere,
// remounting read-only parts writable, unmounting the workspace or the
// masks over /proc, and the new mount API. The mount table must be
// unchanged afterwards.
func (h *harness) mount(t *testing.T) {
	h.attack(t, attackPy(nil, `
before = read("/proc/self/mountinfo")
os.makedirs("/tmp/m", exist_ok=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
def mnt(src, tgt, fstype, flags, data=None):
    if _libc.mount(src, tgt, fstype, flags, data) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return "mounted"
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384
must_fail("mount a tmpfs", mnt, b"tmpfs", b"/tmp/m", b"tmpfs", 0)
must_fail("mount proc", mnt, b"proc", b"/tmp/m", b"proc", 0)
must_fail("mount sysfs", mnt, b"sysfs", b"/tmp/m", b"sysfs", 0)
must_fail("mount cgroup v1 (release_agent escape)", mnt, b"cgroup", b"/tmp/m", b"cgroup", 0, b"memory")
must_fail("mount cgroup2", mnt, b"cgroup2", b"/tmp/m", b"cgroup2", 0)
must_fail("mount devtmpfs", mnt, b"devtmpfs", b"/tmp/m", b"devtmpfs", 0)
must_fail("bind-mount /", mnt, b"/", b"/tmp/m", None, MS_BIND | MS_REC)
must_fail("remount / read-write", mnt, None, b"/", None, MS_REMOUNT)
must_fail("remount /usr read-write", mnt, None, b"/usr", None, MS_REMOUNT | MS_BIND)
for target in [b"/work", b"/proc/keys", b"/proc/sys", b"/usr", b"/"]:
    sc_must_fail("umount2 " + target.decode(), NR["umount2"], ctypes.c_char_p(target), 2)
sc_must_fail("fsopen(tmpfs)", NR["fsopen"], ctypes.c_char_p(b"tmpfs"), 0)
sc_must_fail("open_tree(/, OPEN_TREE_CLONE|AT_RECURSIVE)", NR["open_tree"], -100, ctypes.c_char_p(b"/"), 1 | 0x8000)
attr = ctypes.create_string_buffer(struct.pack("QQQQ", 0, 1, 0, 0), 32)
sc_must_fail("mount_setattr(/usr, clear read-only)", NR["mount_setattr"], -100, ctypes.c_char_p(b"/usr"), 0, attr, 32)
if read("/proc/self/mountinfo") != before:
    escaped("the mount table changed")
done()
`))
}

// unshare models gaining privileges in new namespaces (a new user
// namespace makes the program root there, opening the kernel's
// namespaced-root attack surface: CVE-2022-0185, CVE-2022-0492, CVE-2023-32233
// and many more), with unshare(2), clone(2) and the unshare program, and
// joining the namespaces of the sandbox's init with setns.
func (h *harness) unshare(t *testing.T) {
	h.attack(t, attackPy(nil, `
import subprocess
flags = {"user": 0x10000000, "mount": 0x20000, "network": 0x40000000, "pid": 0x20000000, "ipc": 0x08000000,
         "uts": 0x04000000, "cgroup": 0x02000000, "time": 0x80, "user+mount": 0x10020000}
for name, flag in flags.items():
    sc_must_fail("unshare(%s)" % name, NR["unshare"], flag)
r, e = sc(NR["clone"], 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD
if r == 0:
    os._exit(0)
if r > 0:
    os.waitpid(r, 0)
    escaped("clone(CLONE_NEWUSER) made a child in a new user namespace")
else:
    blocked("clone(CLONE_NEWUSER)", ename(e))
for prog in ["/usr/bin/unshare", "/bin/unshare"]:
    if os.path.exists(prog):
        p = subprocess.run([prog, "--user", "--map-root-user", "--mount", "id", "-u"], capture_output=True, text=True)
        if p.returncode == 0:
            escaped("%s --map-root-user ran a command as uid %s" % (prog, p.stdout.strip()))
        else:
            blocked("unshare --map-root-user", p.stderr.strip())
        break
for ns in ["mnt", "net", "pid", "user", "uts", "ipc", "cgroup"]:
    def enter(ns=ns):
        fd = os.open("/proc/1/ns/" + ns, os.O_RDONLY)
        try:
            r, e = sc(NR["setns"], fd, 0)
            if r == -1:
                raise OSError(e, os.strerror(e))
            return "entered"
        finally:
            os.close(fd)
    must_fail("setns into pid 1's %s namespace" % ns, enter)
done()
`))
}

// chroot models leaving the sandbox's root with chroot (and the classic
// chroot-and-chdir-up escape) or pivot_root.
func (h *harness) chroot(t *testing.T) {
	h.attack(t, attackPy(nil, `
os.makedirs("/tmp/newroot/old", exist_ok=True)
must_fail("chroot /tmp/newroot", os.chroot, "/tmp/newroot")
sc_must_fail("pivot_root /tmp/newroot", NR["pivot_root"], ctypes.c_char_p(b"/tmp/newroot"), ctypes.c_char_p(b"/tmp/newroot/old"))
before = os.stat("/")
fd = os.open("/", os.O_RDONLY)
must_fail("chroot into a subdirectory to escape via a kept descriptor", os.chroot, "/tmp")
os.fchdir(fd)
for i in range(64):
    os.chdir("..")
if os.stat(".").st_ino != before.st_ino or os.stat(".").st_dev != before.st_dev:
    escaped("walked above the sandbox's root with chdir('..')")
else:
    blocked("walk above the root with chdir('..')", "stayed at /")
done()
`))
}

// setuidRoot models becoming root: set*id(0) calls, and executing the
// host's set-user-ID-root programs (mount, su, passwd...): each is caught
// while blocked on a full pipe, and its effective uid read from /proc
// must still be the program's own.
func (h *harness) setuidRoot(t *testing.T) {
	h.attack(t, attackPy(nil, `
import fcntl, subprocess
must_fail("setuid(0)", os.setuid, 0)
must_fail("setgid(0)", os.setgid, 0)
must_fail("seteuid(0)", os.seteuid, 0)
must_fail("setreuid(0, 0)", os.setreuid, 0, 0)
must_fail("setresuid(0, 0, 0)", os.setresuid, 0, 0, 0)
must_fail("setresgid(0, 0, 0)", os.setresgid, 0, 0, 0)
must_fail("setgroups([0])", os.setgroups, [0])
_libc.setfsuid(0)
if _libc.setfsuid(-1) == 0:
    escaped("setfsuid(0) took effect")
ids = os.getresuid() + os.getresgid()
if 0 in ids or 0 in os.getgroups():
    escaped("ids include root: %s %s" % (ids, os.getgroups()))
uid = os.getuid()
r, w = os.pipe()
fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
try:
    while True:
        os.write(w, b"x" * 4096)
except BlockingIOError:
    pass
fcntl.fcntl(w, fcntl.F_SETFL, 0)
tried = 0
for d in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/lib/openssh", "/usr/lib/dbus-1.0"]:
    try:
        names = sorted(os.listdir(d))
    except OSError:
        continue
    for n in names:
        p = os.path.join(d, n)
        try:
            st = os.stat(p)
        except OSError:
            continue
        if not (st.st_mode & 0o4000) or tried >= 8:
            continue
        tried += 1
        proc = subprocess.Popen([p, "--help"], stdin=subprocess.DEVNULL, stdout=w, stderr=w)
        time.sleep(0.2)
        try:
            status = read("/proc/%d/status" % proc.pid).decode()
            euid = int([l for l in status.splitlines() if l.startswith("Uid:")][0].split()[2])
            if euid != uid:
                escaped("set-user-ID program %s runs with effective uid %d" % (p, euid))
            else:
                blocked("gain root through set-user-ID " + p, "effective uid stayed %d" % euid)
        except (OSError, IndexError):
            blocked("gain root through set-user-ID " + p, "exited at once")
        proc.kill()
        proc.wait()
print("tried %d set-user-ID programs" % tried)
done()
`))
}

// capabilities models using capabilities the program should not hold:
// every capability set in /proc/self/status must be empty (bounding set
// included, so nothing executed later can gain one), in a child too; and
// operations needing CAP_SYS_ADMIN, CAP_CHOWN, CAP_NET_ADMIN or
// CAP_DAC_OVERRIDE must fail.
func (h *harness) capabilities(t *testing.T) {
	h.attack(t, attackPy(nil, `
import subprocess, shutil
def caps(status):
    return {l.split(":")[0]: l.split(":")[1].strip() for l in status.splitlines() if l.startswith("Cap")}
for who, status in [("the program", read("/proc/self/status").decode()),
                    ("a child", subprocess.run(["/bin/cat", "/proc/self/status"], capture_output=True, text=True).stdout)]:
    c = caps(status)
    for k in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]:
        if k not in c:
            escaped("%s has no %s line in /proc/self/status" % (who, k))
        elif int(c[k], 16) != 0:
            escaped("%s has %s = %s" % (who, k, c[k]))
        else:
            blocked("%s holding %s" % (who, k), "empty")
capsh = shutil.which("capsh")
if capsh:
    out = subprocess.run([capsh, "--print"], capture_output=True, text=True).stdout
    cur = [l for l in out.splitlines() if l.startswith("Current:")]
    if cur and cur[0].strip() != "Current: =":
        escaped("capsh reports %s" % cur[0])
    else:
        blocked("capsh --print", cur[0] if cur else "no Current line")
for cap in (21, 12, 0, 1, 19):  # SYS_ADMIN, NET_ADMIN, CHOWN, DAC_OVERRIDE, SYS_PTRACE
    if _libc.prctl(23, cap, 0, 0, 0) == 1:  # PR_CAPBSET_READ
        escaped("capability %d is in the bounding set" % cap)
sc_must_fail("sethostname (CAP_SYS_ADMIN)", NR["sethostname"], ctypes.c_char_p(b"pwned"), 5)
open("/tmp/mine", "w").close()
must_fail("chown a file to root (CAP_CHOWN)", os.chown, "/tmp/mine", 0, 0)
import fcntl
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ifr = struct.pack("16sH22x", b"lo", 0)
must_fail("take the loopback interface down (CAP_NET_ADMIN)", fcntl.ioctl, s.fileno(), 0x8914, ifr)
os.mkdir("/tmp/locked", 0o000)
must_fail("list a mode-000 directory (CAP_DAC_OVERRIDE)", os.listdir, "/tmp/locked")
done()
`))
}

// noNewPrivs models regaining privileges through exec: the program must
// run under a non-root uid and gid (real, effective and saved), with
// no_new_privs set (so set-user-ID bits and file capabilities are inert)
// and a seccomp filter installed (Seccomp: 2), inherited by children.
func (h *harness) noNewPrivs(t *testing.T) {
	res := h.attack(t, attackPy(nil, `
import subprocess
for who, status in [("the program", read("/proc/self/status").decode()),
                    ("a child", subprocess.run(["/bin/cat", "/proc/self/status"], capture_output=True, text=True).stdout)]:
    f = {l.split(":")[0]: l.split(":", 1)[1].split() for l in status.splitlines() if ":" in l}
    if f.get("NoNewPrivs") != ["1"]:
        escaped("%s runs without no_new_privs: NoNewPrivs %s" % (who, f.get("NoNewPrivs")))
    if f.get("Seccomp") != ["2"]:
        escaped("%s has no seccomp filter: Seccomp %s" % (who, f.get("Seccomp")))
    for k in ("Uid", "Gid"):
        if "0" in f.get(k, ["0"]):
            escaped("%s runs with a root %s: %s" % (who, k, f.get(k)))
    if "0" in f.get("Groups", []):
        escaped("%s is in group 0: %s" % (who, f.get("Groups")))
    blocked("%s privileged" % who, "Uid %s Gid %s NoNewPrivs %s Seccomp %s" % (f.get("Uid"), f.get("Gid"), f.get("NoNewPrivs"), f.get("Seccomp")))
if _libc.prctl(39, 0, 0, 0, 0) != 1:  # PR_GET_NO_NEW_PRIVS
    escaped("prctl(PR_GET_NO_NEW_PRIVS) is not 1")
if _libc.prctl(38, 0, 0, 0, 0) == 0 and _libc.prctl(39, 0, 0, 0, 0) == 0:
    escaped("no_new_privs could be cleared")
print("IDS:" + json.dumps([os.getuid(), os.geteuid(), os.getgid(), os.getegid()]))
done()
`))
	var ids []int
	jsonLine(t, res, "IDS:", &ids)
	t.Logf("the program runs as uid/euid/gid/egid %v", ids)
}

// keyring models reading or planting secrets in the kernel's keyrings
// (shared per user across containers without their own user namespace)
// and the keyring code's attack surface (CVE-2016-0728).
func (h *harness) keyring(t *testing.T) {
	h.attack(t, attackPy(nil, `
sc_must_deny("keyctl(GET_KEYRING_ID, session)", NR["keyctl"], 0, -3, 1)
sc_must_deny("keyctl(GET_KEYRING_ID, user)", NR["keyctl"], 0, -4, 1)
sc_must_deny("keyctl(JOIN_SESSION_KEYRING)", NR["keyctl"], 1, 0)
sc_must_deny("add_key(user) to the session keyring", NR["add_key"], ctypes.c_char_p(b"user"), ctypes.c_char_p(b"coderun"),
             ctypes.c_char_p(b"payload"), 7, -3)
sc_must_deny("request_key(user)", NR["request_key"], ctypes.c_char_p(b"user"), ctypes.c_char_p(b"coderun"), 0, 0)
for p in ["/proc/keys", "/proc/key-users"]:
    try:
        data = read(p)
    except OSError as e:
        blocked("read " + p, ename(e.errno))
        continue
    if data.strip():
        escaped("%s lists keys: %r" % (p, data[:200]))
    else:
        blocked("read " + p, "empty")
done()
`))
}

// bpf models loading eBPF programs or maps (the verifier has been the
// source of many local privilege escalations: CVE-2021-3490, CVE-2022-23222).
func (h *harness) bpf(t *testing.T) {
	h.attack(t, attackPy(nil, `
attr = ctypes.create_string_buffer(struct.pack("IIIII", 2, 4, 4, 1, 0) + bytes(108), 128)
sc_must_deny("bpf(BPF_MAP_CREATE, array)", NR["bpf"], 0, attr, 128)
insns = ctypes.create_string_buffer(struct.pack("<BBhi", 0xb7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0), 16)
lic = ctypes.create_string_buffer(b"GPL")
prog = struct.pack("<IIQQIIQI", 1, 2, ctypes.addressof(insns), ctypes.addressof(lic), 0, 0, 0, 0)
attr = ctypes.create_string_buffer(prog + bytes(128 - len(prog)), 128)
sc_must_deny("bpf(BPF_PROG_LOAD, socket filter)", NR["bpf"], 5, attr, 128)
done()
`))
}

// perfEvents models perf_event_open: side channels on the host (CPU-wide
// counters, kernel profiling) and a history of kernel bugs. Even
// self-monitoring, which the host's perf_event_paranoid may allow, must be
// refused.
func (h *harness) perfEvents(t *testing.T) {
	h.attack(t, attackPy(nil, `
attr = bytearray(128)
struct.pack_into("<IIQ", attr, 0, 1, 128, 0)            # PERF_TYPE_SOFTWARE, size, CPU clock
struct.pack_into("<Q", attr, 40, (1 << 5) | (1 << 6))   # exclude_kernel, exclude_hv
buf = ctypes.create_string_buffer(bytes(attr), 128)
sc_must_deny("perf_event_open(own CPU clock)", NR["perf_event_open"], buf, 0, -1, -1, 0)
sc_must_deny("perf_event_open(all processes on CPU 0)", NR["perf_event_open"], buf, -1, 0, -1, 0)
struct.pack_into("<IIQ", attr, 0, 0, 128, 0)            # PERF_TYPE_HARDWARE, cycles
buf = ctypes.create_string_buffer(bytes(attr), 128)
sc_must_deny("perf_event_open(hardware cycles)", NR["perf_event_open"], buf, 0, -1, -1, 0)
done()
`))
}

// ioUring models io_uring, whose asynchronous operations bypass seccomp
// filters on the calls they replace and which has been a rich source of
// kernel exploits (Google disabled it on its production servers).
func (h *harness) ioUring(t *testing.T) {
	h.attack(t, attackPy(nil, `
params = ctypes.create_string_buffer(120)
sc_must_deny("io_uring_setup(8 entries)", NR["io_uring_setup"], 8, params)
done()
`))
}

// userfaultfd models the exploitation aid that lets a program stall the
// kernel at a chosen page fault to win races (used by many kernel exploits).
func (h *harness) userfaultfd(t *testing.T) {
	h.attack(t, attackPy(nil, `
sc_must_deny("userfaultfd(O_CLOEXEC)", NR["userfaultfd"], os.O_CLOEXEC)
sc_must_deny("userfaultfd(UFFD_USER_MODE_ONLY)", NR["userfaultfd"], os.O_CLOEXEC | 1)
must_fail("open /dev/userfaultfd", os.open, "/dev/userfaultfd", os.O_RDWR)
done()
`))
}

// syscall32 models bypassing a system-call filter through another ABI of
// the same machine: on x86_64, "int 0x80" enters the kernel's 32-bit
// table (where unshare is number 310, not 272) and the x32 ABI flags
// numbers with bit 30. Both are tried with unshare(CLONE_NEWUSER); the
// process must be killed (SIGSYS from the filter, or SIGSEGV where the
// kernel lacks 32-bit emulation) or the call must fail.
func (h *harness) syscall32(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the 32-bit ABI scenario is x86_64-specific (running on %s)", runtime.GOARCH)
	}
	req := attackPy(nil, `
import mmap
r, e = sc(0x40000000 | NR["unshare"], 0x10000000)
if r == -1:
    blocked("x32 unshare(CLONE_NEWUSER)", ename(e))
else:
    escaped("x32 unshare(CLONE_NEWUSER) returned %d: the filter does not cover the x32 ABI" % r)
code = bytes([0x53, 0xb8]) + struct.pack("<I", 310) + bytes([0xbb]) + struct.pack("<I", 0x10000000) + bytes([0xcd, 0x80, 0x5b, 0xc3])
try:
    m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
except OSError as e:
    print("NOEXEC", e, flush=True)
    done()
    sys.exit(0)
m.write(code)
fn = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print("INT80", flush=True)
r = fn()
if r == 0:
    escaped("unshare(CLONE_NEWUSER) through int 0x80 succeeded: the filter does not cover the i386 ABI")
else:
    blocked("int 0x80 unshare(CLONE_NEWUSER)", "returned %d" % r)
done()
`)
	res := h.run(t, req)
	for _, l := range lines(res.Stdout, "ESCAPED:") {
		t.Errorf("CONTAINMENT FAILURE:%s", l)
	}
	if hasLine(res.Stdout, "NOEXEC") {
		t.Skip("the sandbox does not allow executable memory, so int 0x80 cannot be tried (the x32 attempt was)")
	}
	if !hasLine(res.Stdout, "INT80") {
		t.Fatalf("the program did not reach the int 0x80 attempt:\n%s", describe(res))
	}
	switch {
	case res.Reason == sandbox.ReasonExited && (res.Signal == "SIGSYS" || res.Signal == "SIGSEGV"):
		t.Logf("int 0x80: the process was killed by %s", res.Signal)
	case hasLine(res.Stdout, "DONE") && res.OK():
		t.Logf("int 0x80: the call failed and the program went on")
	default:
		t.Errorf("int 0x80: want the process killed by SIGSYS (reason exited) or the call refused, got:\n%s", describe(res))
	}
}

// openByHandle models the "Shocker" escape: open_by_handle_at with a
// forged file handle for inode 2 (the root directory of an ext4 file
// system) opens the host's file system through any mount of it, such as
// a read-only bind of /usr.
func (h *harness) openByHandle(t *testing.T) {
	h.attack(t, attackPy(nil, `
forged = ctypes.create_string_buffer(struct.pack("<IiII", 8, 1, 2, 0), 16)
for mnt in ["/", "/usr", "/etc", "/work", "/proc"]:
    try:
        fd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        continue
    sc_must_deny("open_by_handle_at(root inode via %s)" % mnt, NR["open_by_handle_at"], fd, forged, os.O_RDONLY)
    os.close(fd)
done()
`))
}

// kernelModules models changing the running kernel: loading or removing a
// module, loading a new kernel with kexec, rebooting, enabling swap or
// process accounting. Each must be refused for want of privilege (the
// arguments are such that, if not refused, the kernel would fail on them
// without changing anything).
func (h *harness) kernelModules(t *testing.T) {
	h.attack(t, attackPy(nil, `
null = os.open("/dev/null", os.O_RDONLY)
sc_must_deny("finit_module(/dev/null)", NR["finit_module"], null, ctypes.c_char_p(b""), 0)
img = ctypes.create_string_buffer(64)
sc_must_deny("init_module(garbage)", NR["init_module"], img, 64, ctypes.c_char_p(b""))
sc_must_deny("delete_module(nonexistent)", NR["delete_module"], ctypes.c_char_p(b"coderun_nonexistent"), 0o4000)
sc_must_deny("kexec_file_load(bad fds)", NR["kexec_file_load"], -1, -1, 0, ctypes.c_char_p(b""), 0)
sc_must_deny("reboot(invalid command)", NR["reboot"], 0xfee1dead, 672274793, 0x0badc0de, 0)
sc_must_deny("swapon(/dev/null)", NR["swapon"], ctypes.c_char_p(b"/dev/null"), 0)
sc_must_deny("acct(nonexistent file)", NR["acct"], ctypes.c_char_p(b"/nonexistent-coderun"))
done()
`))
}

// setClock models changing the host's clock (breaking TLS, logs and
// time-based tokens everywhere on the machine). The program sets the time
// to what it already is, so an escape changes nothing, and must be refused.
func (h *harness) setClock(t *testing.T) {
	before := time.Now()
	h.attack(t, attackPy(nil, `
now = time.time()
ts = ctypes.create_string_buffer(struct.pack("<qq", int(now), int((now % 1) * 1e9)), 16)
sc_must_deny("clock_settime(CLOCK_REALTIME)", NR["clock_settime"], 0, ts)
tv = ctypes.create_string_buffer(struct.pack("<qq", int(now), int((now % 1) * 1e6)), 16)
sc_must_deny("settimeofday", NR["settimeofday"], tv, 0)
done()
`))
	if d := time.Since(before); d < 0 || d > 5*time.Minute {
		t.Errorf("CONTAINMENT FAILURE: the host's clock moved by %v during the run", d)
	}
}

// kernelLog models reading the kernel's log (addresses that defeat KASLR,
// other tenants' activity, hardware details) through dmesg, syslog(2),
// /dev/kmsg and /proc/kmsg.
func (h *harness) kernelLog(t *testing.T) {
	h.attack(t, attackPy(nil, `
import subprocess
buf = ctypes.create_string_buffer(4096)
sc_must_deny("syslog(SYSLOG_ACTION_READ_ALL)", NR["syslog"], 3, buf, 4096)
sc_must_deny("syslog(SYSLOG_ACTION_SIZE_BUFFER)", NR["syslog"], 10, 0, 0)
def read_kmsg(p):
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)
must_fail("read /dev/kmsg", read_kmsg, "/dev/kmsg")
def open_proc_kmsg():
    os.close(os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    return "opened"
must_fail("open /proc/kmsg", open_proc_kmsg)
for prog in ["/usr/bin/dmesg", "/bin/dmesg"]:
    if os.path.exists(prog):
        p = subprocess.run([prog], capture_output=True)
        if p.returncode == 0 and p.stdout.strip():
            escaped("dmesg printed the kernel log: %r" % p.stdout[:200])
        else:
            blocked("dmesg", p.stderr.decode(errors="replace").strip())
        break
done()
`))
}

// deviceNodes models reaching hardware and kernel memory through device
// files: host disks, /dev/mem and /dev/kmem, I/O ports, the kernel log,
// KVM, vhost, vsock, FUSE, TUN, loop and device-mapper control, consoles,
// MSRs. Every such node must be absent or unopenable, and no block device
// or dangerous character device may exist anywhere under /dev. (A
// watchdog node is only checked for presence: opening one arms it.)
func (h *harness) deviceNodes(t *testing.T) {
	h.attack(t, attackPy(nil, `
import stat
for p in ["/dev/sda", "/dev/vda", "/dev/vdb", "/dev/xvda", "/dev/nvme0n1", "/dev/nvme0", "/dev/mem", "/dev/kmem",
          "/dev/port", "/dev/kmsg", "/dev/kvm", "/dev/vhost-vsock", "/dev/vhost-net", "/dev/vsock", "/dev/fuse",
          "/dev/net/tun", "/dev/loop0", "/dev/loop-control", "/dev/mapper/control", "/dev/tty0", "/dev/tty1",
          "/dev/console", "/dev/ttyS0", "/dev/hwrng", "/dev/uinput", "/dev/dri/card0", "/dev/cpu/0/msr",
          "/dev/autofs", "/dev/btrfs-control", "/dev/nvram", "/dev/rtc0", "/dev/sg0", "/dev/sr0"]:
    must_fail("open " + p, os.open, p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
for p in ["/dev/watchdog", "/dev/watchdog0"]:
    if os.path.lexists(p):
        escaped(p + " exists in the sandbox")
dangerous = {(1, 1): "mem", (1, 2): "kmem", (1, 4): "port", (1, 11): "kmsg", (5, 1): "console",
             (10, 130): "watchdog", (10, 183): "hwrng", (10, 223): "uinput", (10, 232): "kvm",
             (10, 236): "mapper/control", (10, 237): "loop-control", (10, 238): "vhost-net", (10, 241): "vhost-vsock"}
count = 0
for root, dirs, files in os.walk("/dev"):
    for n in dirs + files:
        p = os.path.join(root, n)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        count += 1
        if stat.S_ISBLK(st.st_mode):
            escaped("block device %s (%d:%d) in the sandbox" % (p, os.major(st.st_rdev), os.minor(st.st_rdev)))
        elif stat.S_ISCHR(st.st_mode):
            mm = (os.major(st.st_rdev), os.minor(st.st_rdev))
            if mm in dangerous or mm[0] in (4, 202, 203):
                escaped("character device %s (%d:%d, %s) in the sandbox" % (p, mm[0], mm[1], dangerous.get(mm, "tty/msr/cpuid")))
blocked("find a dangerous device under /dev", "%d entries checked" % count)
done()
`))
}

// mknod models creating device nodes (for a host disk, /dev/mem, the
// kernel log, KVM) in a writable directory to bypass their absence from /dev.
func (h *harness) mknod(t *testing.T) {
	h.attack(t, attackPy(nil, `
import stat
for name, kind, major, minor in [("sda", stat.S_IFBLK, 8, 0), ("vda", stat.S_IFBLK, 254, 0), ("mem", stat.S_IFCHR, 1, 1),
                                 ("kmsg", stat.S_IFCHR, 1, 11), ("kvm", stat.S_IFCHR, 10, 232)]:
    for d in ["/tmp", "/work", "/dev/shm"]:
        must_fail("mknod %s/%s (%d:%d)" % (d, name, major, minor), os.mknod, "%s/%s" % (d, name), kind | 0o666, os.makedev(major, minor))
done()
`))
}

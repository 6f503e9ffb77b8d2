# coderun's Python zygote: one interpreter, started once by the host (as
# root, in the host's namespaces) with the bootstrap loaded, that builds each
# new sandbox around a fork of itself. Forking skips the interpreter's
# start-up, and building the sandbox from here skips starting a sandbox
# init per run: the two largest costs of a run.
#
# argv[1]: JSON {"bootstrap", "seccomp" (hex, struct sock_filter[]), "uid"
# (the program's, inside), "hostname", "proc_masked", "proc_read_only",
# "proc_boot_id" (masked by a random id per sandbox), "preload" (modules to
# import ahead)}.
# fd 3: a SOCK_SEQPACKET socket to the host. fd 4: the template mount
# namespace, the sandbox's read-only root already built by a sandbox init
# (init.go, template mode) without /proc and the workspace. Any other
# descriptor it inherited is closed before anything else runs.
#
# Each request is JSON {"ids": [I, P]} with nine descriptors:
# init's control pipe (read end) and events pipe (write end); the program's
# stdin, stdout, stderr and request pipe; and detached mounts of the
# workspace's work/, tmp/ and shm/ (open_tree(2) clones made by the host).
# The zygote makes a new PID namespace and forks S into it (PID 1 there),
# answers {"pid": S's host pid} with a pidfd of S, and goes back to its own
# PID namespace. S is the sandbox's init, and speaks init.go's protocol on
# the two pipes:
#
#   S, still host root: enters a private copy of the template's mount
#   namespace and new network, IPC and UTS namespaces; mounts the workspace
#   on /work, /tmp and /dev/shm and a fresh /proc (host entries masked);
#   names the host; brings up loopback. It waits for the host to say it is
#   in the sandbox's cgroups, then makes the cgroup and time namespaces and
#   forks P.
#
#   P makes a user namespace of its own, in which S maps uid 0 to the host
#   id I and the program's uid to the host id P (as for a sandbox whose init
#   was started by the host). P drops to the program's uid with no groups,
#   an empty bounding set, no capabilities (checked), no_new_privs, the
#   Landlock domain (landlock.go) and the seccomp filter, keeps only fds
#   0-3, and runs the bootstrap, which waits for its code on fd 3.
#
#   S then drops to host id I itself (no capabilities, no_new_privs), says
#   "ready", reaps orphans until P exits, reports P's exit status and exits;
#   the kernel then kills whatever is left in the PID namespace.
#
# The zygote never runs user code and holds no secrets: its requests carry
# no part of a run (a program gets its environment and code from the host
# directly), since every later program starts with the zygote's memory.
# Nothing in a sandbox can reach the zygote, or S.
import os


def close_inherited(keep):
    # The host's process may have leaked descriptors (no close-on-exec) to
    # the zygote: a directory would give openat(2) access to the host's
    # files to every fork. Only those named in keep stay open.
    for fd in [int(n) for n in os.listdir("/proc/self/fd")]:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, closed already


# The zygote's very first act: of what it inherited, keep only its standard
# streams, the socket to the host and the template.
close_inherited({0, 1, 2, 3, 4})

import ctypes
import errno
import fcntl
import gc
import json
import select
import signal
import socket
import struct
import sys
import time

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
CLONE_NEWTIME = 0x80
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_BIND = 0x2, 0x4, 0x8, 0x4000, 0x1000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC = 0x1, 0x2, 0x4, 0x8
AT_FDCWD, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH = -100, 0x8000, 0x4
SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 429, 442  # the same on every architecture
PR_SET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE = 1, 3, 4
PR_CAPBSET_DROP, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 24, 22, 38
SECCOMP_MODE_FILTER = 2
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446  # on every architecture
LANDLOCK_RULE_PATH_BENEATH = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
TEMPLATE = 4

config = json.loads(sys.argv[1])
UID = config["uid"]
for name in config["preload"]:
    __import__(name)
# Started isolated (-I); a program's sys.path is laid out as "python3 -c"
# lays it out, whose first entry the bootstrap sets to /work.
sys.path.insert(0, "")
boot = {"__name__": "_coderun_zygote"}
exec(compile(config["bootstrap"], "<coderun-bootstrap>", "exec"), boot)
import traceback  # what the bootstrap reports an uncaught exception with: most failed runs

libc = ctypes.CDLL(None, use_errno=True)
# Looked up (and first called) here, once: a fork that first touches what
# the zygote has not made yet makes it anew, copying pages as it goes.
for name in ("mount", "syscall", "prctl", "unshare", "setns"):
    getattr(libc, name)
libc.prctl.argtypes = (ctypes.c_int,) + (ctypes.c_ulong,) * 4  # no guessing at each call
libc.unshare(0)  # no namespace: does nothing
libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
IFREQ = struct.Struct("16sH22x")
IFREQ.unpack(IFREQ.pack(b"lo", 0))


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))


def last_cap():
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            return int(f.read())
    except OSError:
        return 63


LAST_CAP = last_cap()
# The entries of /proc to mask or make read-only that this kernel has (a
# sandbox's procfs has the same ones as the host's).
PROC_MASKED = [p for p in ("/proc/" + n for n in config["proc_masked"]) if os.path.exists(p)]
PROC_READ_ONLY = [p for p in ("/proc/" + n for n in config["proc_read_only"]) if os.path.exists(p)]
BOOT_ID = "/proc/" + config["proc_boot_id"]
HAS_BOOT_ID = os.path.exists(BOOT_ID)
LANDLOCK = config["landlock"]
BPF = bytes.fromhex(config["seccomp"])
FILTER = ctypes.create_string_buffer(BPF, len(BPF))


def report(fd, msg):
    os.write(fd, (json.dumps(msg) + "\n").encode())


def mount(src, dst, fstype, flags, what, data=None):
    check(libc.mount(src, dst.encode(), fstype, flags, data), what)


def set_attr(path, attrs, flags, what):
    attr = MountAttr(attrs, 0, 0, 0)
    check(libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags,
                       ctypes.byref(attr), ctypes.sizeof(attr)), what)


def read_only(path):
    mount(path.encode(), path, None, MS_BIND | MS_REC, "bind " + path)
    set_attr(path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, AT_RECURSIVE, "make %s read-only" % path)


def new_boot_id():
    # A random (version 4) UUID, as mount.go's newBootID makes it.
    b = bytearray(os.urandom(16))
    b[6] = b[6] & 0x0F | 0x40
    b[8] = b[8] & 0x3F | 0x80
    h = b.hex()
    return "%s-%s-%s-%s-%s\n" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def stage_boot_id():
    # The sandbox's own boot id, as mount.go's stageBootID makes it: a file
    # on a tiny read-only tmpfs on /proc, which procfs then covers.
    mount(b"tmpfs", "/proc", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "boot id tmpfs", b"size=4k,nr_inodes=4,mode=0755")
    fd = os.open("/proc/boot_id", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        os.write(fd, new_boot_id().encode())
    finally:
        os.close(fd)
    set_attr("/proc", MOUNT_ATTR_RDONLY, 0, "make boot id tmpfs read-only")
    return os.open("/proc/boot_id", os.O_PATH | os.O_CLOEXEC)


def cover_boot_id(staged):
    # As mount.go's coverBootID: the staged id over the kernel's, read-only.
    if HAS_BOOT_ID:
        mount(b"/proc/self/fd/%d" % staged, BOOT_ID, None, MS_BIND, "mask " + BOOT_ID)
        set_attr(BOOT_ID, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0,
                 "make %s read-only" % BOOT_ID)
    os.close(staged)


def build_mounts(trees):
    # The workspace, as init.go's template left room for it.
    for tree, target in zip(trees, ("/work", "/tmp", "/dev/shm")):
        check(libc.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
              "mount workspace on " + target)
        os.close(tree)
    # /proc of this PID namespace, as mount.go's buildProc makes it.
    boot_id = stage_boot_id()
    mount(b"proc", "/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc")
    for p in PROC_MASKED:
        mount(b"/dev/null", p, None, MS_BIND, "mask " + p)
    for p in PROC_READ_ONLY:
        read_only(p)
    cover_boot_id(boot_id)


def loopback_up():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        flags = IFREQ.unpack(fcntl.ioctl(s, SIOCGIFFLAGS, IFREQ.pack(b"lo", 0)))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, IFREQ.pack(b"lo", flags | IFF_UP))
    finally:
        s.close()


def restrict_writes():
    # As landlock.go's restrictWrites: no writing by path but beneath the
    # workspace's trees and to /dev's character devices, for good (this
    # process and all it forks or executes). None when the kernel has no
    # Landlock.
    if not LANDLOCK["handled"]:
        return
    handled = ctypes.c_uint64(LANDLOCK["handled"])  # struct landlock_ruleset_attr, as of ABI 1
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(handled), 8, 0)
    if ruleset < 0:
        check(ruleset, "landlock: create ruleset")
    try:
        for paths, access in ((LANDLOCK["dirs"], LANDLOCK["dir_access"]), (LANDLOCK["files"], LANDLOCK["file_access"])):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                try:
                    rule = struct.pack("=Qi", access, fd)  # struct landlock_path_beneath_attr (packed)
                    check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, rule, 0),
                          "landlock: allow writes beneath " + path)
                finally:
                    os.close(fd)
        check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock: restrict")
    finally:
        os.close(ruleset)


def new_time_namespace():
    # As timens.go's newTimeNamespace: P is born in a time namespace whose
    # boot-time and monotonic clocks read zero when S started, so the
    # sandbox sees its own uptime and boot time (/proc/uptime, /proc/stat's
    # btime), not the host's. Nothing to do on a kernel without them.
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    start = int(stat[stat.rindex(b")") + 1:].split()[22 - 3]) * (10**9 // os.sysconf("SC_CLK_TCK"))
    if libc.unshare(CLONE_NEWTIME) != 0:
        if ctypes.get_errno() == errno.EINVAL:
            return
        check(-1, "time namespace")
    boot, mono = time.clock_gettime_ns(time.CLOCK_BOOTTIME), time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    off_boot = -start
    off_mono = off_boot + boot - mono
    fd = os.open("/proc/self/timens_offsets", os.O_WRONLY)
    try:
        os.write(fd, b"monotonic %d %d\nboottime %d %d\n" % (divmod(off_mono, 10**9) + divmod(off_boot, 10**9)))
    finally:
        os.close(fd)


def program(fds, status):
    # P, in a user namespace of its own whose ids S has mapped. Descriptors
    # first: park the four high, put them at 0-3 and close everything else
    # but the status pipe, closed once privileges are gone.
    high = [os.dup2(fd, 100 + i) for i, fd in enumerate(fds)]
    status = os.dup2(status, 104)
    for i, fd in enumerate(high):
        os.dup2(fd, i)
    os.closerange(4, 104)
    os.closerange(105, os.sysconf("SC_OPEN_MAX"))
    os.setsid()
    os.setgroups([])
    os.setresgid(UID, UID, UID)
    for cap in range(LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    # Making the user namespace left this process with every capability
    # there but under an unmapped uid; the kernel clears the capability sets
    # only on a change from uid 0 to non-zero, so pass through 0 on the way.
    os.setresuid(0, 0, 0)
    os.setresuid(UID, UID, UID)
    fd = os.open("/proc/self/status", os.O_RDONLY)
    caps = [line.split()[1] for line in os.read(fd, 1 << 16).split(b"\n")
            if line.startswith((b"CapPrm", b"CapEff", b"CapAmb", b"CapBnd"))]
    os.close(fd)
    if len(caps) != 4 or any(int(c, 16) for c in caps):
        raise OSError("capabilities left after dropping privileges: %s" % caps)
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    restrict_writes()
    prog = SockFprog(len(BPF) // 8, ctypes.addressof(FILTER))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0), "seccomp")
    # The zygote ignores SIGINT (the host decides what to interrupt); S has
    # restored SIGCHLD; nothing else differs from a fresh interpreter.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.umask(0o022)
    # The zygote's environment is the sandbox's base environment plus
    # LD_BIND_NOW; what a run adds comes with its code (sandbox.Payload).
    del os.environ["LD_BIND_NOW"]
    os.chdir("/work")
    os.write(status, b"R")
    os.close(status)
    boot["_coderun_run"]()


def start_program(req, fds):
    # Fork P; map its user namespace once it has made it; wait until it has
    # dropped its privileges.
    up_r, up_w = os.pipe()      # P → S: "U" (namespace made), then "R" or an error
    down_r, down_w = os.pipe()  # S → P: "M" (ids mapped)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(up_r)
            os.close(down_w)
            check(libc.unshare(CLONE_NEWUSER), "user namespace")
            os.write(up_w, b"U")
            if os.read(down_r, 1) != b"M":
                raise OSError("ids not mapped")
            os.close(down_r)
            program(fds, up_w)
        except BaseException as e:
            os.write(up_w, ("program: %s" % e).encode())
        finally:
            os._exit(127)
    os.close(up_w)
    os.close(down_r)
    said = os.read(up_r, 1)
    if said == b"U":
        init_id, prog_id = req["ids"]
        ids = "0 %d 1\n%d %d 1\n" % (init_id, UID, prog_id)
        for name in ("uid_map", "gid_map"):
            fd = os.open("/proc/%d/%s" % (pid, name), os.O_WRONLY)
            try:
                os.write(fd, ids.encode())
            finally:
                os.close(fd)
        os.write(down_w, b"M")
        said = os.read(up_r, 4096)
    os.close(down_w)
    os.close(up_r)
    if said != b"R":
        os.waitpid(pid, 0)
        raise OSError("could not start the program: %s" % said.decode(errors="replace"))
    return pid


def die_with_zygote():
    # The kernel kills this process when the zygote dies; unless the zygote
    # died before it was asked to, which the zygote's pidfd tells.
    check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
    if select.select([ZYGOTE], [], [], 0)[0]:
        os._exit(1)


def quiet_stdio():
    # S speaks only on its two pipes: its standard streams (the zygote's,
    # the last of them the host's stderr) become /dev/null.
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def sandbox_init(req, fds, inherited):
    # S: PID 1 of the new PID namespace, still host root.
    control, events, stdio, trees = fds[0], fds[1], fds[2:6], fds[6:9]
    try:
        die_with_zygote()
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in inherited:
            os.close(fd)
        quiet_stdio()
        check(libc.setns(TEMPLATE, CLONE_NEWNS), "enter the template")
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "namespaces")
        os.close(TEMPLATE)
        build_mounts(trees)
        socket.sethostname(config["hostname"])
        loopback_up()
        os.chdir("/")
        # The host moves this process into the sandbox's cgroups, then says
        # so; the cgroup namespace is rooted where this process is when it
        # is made, so only now. End of file: the host let go.
        if not os.read(control, 64):
            os._exit(0)
        check(libc.unshare(CLONE_NEWCGROUP), "cgroup namespace")
        new_time_namespace()
        pid = start_program(req, stdio)
        for fd in stdio:
            os.close(fd)
        # Nothing left to do needs privileges: reap and report.
        init_id = req["ids"][0]
        os.setgroups([])
        os.setresgid(init_id, init_id, init_id)
        os.setresuid(init_id, init_id, init_id)
        check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        die_with_zygote()  # a change of uid cleared the signal
        os.close(ZYGOTE)
        os.write(events, b'{"ready": true}\n')
    except BaseException as e:
        try:
            report(events, {"error": "sandbox init: %s" % e})
        finally:
            os._exit(1)
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if got == pid:
            break
    if os.WIFSIGNALED(status):
        code, sig = -1, os.WTERMSIG(status)
    else:
        code, sig = os.WEXITSTATUS(status), 0
    os.write(events, b'{"exit": {"code": %d, "signal": %d}}\n' % (code, sig))
    os._exit(0)


def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def spawn(req, fds, inherited, own_pid_ns):
    # Fork S as PID 1 of a new PID namespace. SIGCHLD stays blocked until S
    # has a pidfd, so that S cannot be reaped (and its pid reused) before.
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
    try:
        check(libc.unshare(CLONE_NEWPID), "PID namespace")
        try:
            pid = os.fork()
        except BaseException:
            pid = -1
            raise
        finally:
            if pid != 0 and libc.setns(own_pid_ns, CLONE_NEWPID) != 0:
                os._exit(3)  # this process must not fork into another namespace again
        if pid == 0:
            sandbox_init(req, fds, inherited)  # never returns
        return pid, os.pidfd_open(pid)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])


# Every fork inherits this pidfd of the zygote, readable once it has exited.
ZYGOTE = os.pidfd_open(os.getpid())
gc.freeze()  # the forks' collections leave the zygote's objects (and their pages) alone


def main():
    sock = socket.socket(fileno=3)
    own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock.send(b"R")
    buf = bytearray(1 << 20)  # one buffer for every request
    ancillary = socket.CMSG_SPACE(16 * 4)
    while True:
        n, anc, flags, _ = sock.recvmsg_into([buf], ancillary)
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(struct.unpack("%di" % (len(data) // 4), data[:len(data) - len(data) % 4]))
        if n == 0 and not fds:
            return  # the host let go
        msg = bytes(buf[:n])
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ValueError("request too large")
            if len(fds) != 9:
                raise ValueError("want 9 descriptors, got %d" % len(fds))
            pid, pidfd = spawn(json.loads(msg), fds, (sock.fileno(), own_pid_ns), own_pid_ns)
            try:
                socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
            finally:
                os.close(pidfd)
        except Exception as e:
            sock.send(json.dumps({"error": "zygote: %s" % e}).encode())
        finally:
            for fd in fds:
                os.close(fd)


main()

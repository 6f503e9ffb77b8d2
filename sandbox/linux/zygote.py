# coderun's Python zygote: one interpreter, started once by the host (as
# root, in the host's namespaces) with the bootstrap loaded, that forks a
# ready interpreter into each new sandbox instead of starting one there.
# Forking skips the interpreter's start-up, its largest cost per run.
#
# argv: the bootstrap's source, the seccomp filter (hex, struct sock_filter[]),
# the program's uid. fd 3: a SOCK_SEQPACKET socket to the host. Each message
# is JSON {"init": PID, "env": [...]} with five descriptors: the program's
# stdin, stdout, stderr, request pipe, and the sandbox's events pipe.
#
# For each, the zygote forks C, which enters every namespace of the sandbox
# whose init is PID (user first, then mount, network, IPC, UTS, cgroup, PID)
# and forks G, the first process in it that is not init. G drops to the
# unprivileged uid with no groups, an empty bounding set, no_new_privs and
# the sandbox's seccomp filter, keeps only its four descriptors, and runs the
# bootstrap, which waits for its code on fd 3. C reports G's pid and, later,
# its exit status on the events pipe, in init's format. The zygote never runs
# user code; it holds no secrets, and nothing in a sandbox can reach it.
import ctypes
import json
import os
import signal
import socket
import sys

boot_src, bpf, uid = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
boot = {"__name__": "_coderun_zygote"}
exec(compile(boot_src, "<coderun-bootstrap>", "exec"), boot)
import gc
gc.freeze()  # the children's collections leave the zygote's objects (and their pages) alone

libc = ctypes.CDLL(None, use_errno=True)
NAMESPACES = [("user", 0x10000000), ("mnt", 0x00020000), ("net", 0x40000000), ("ipc", 0x08000000),
              ("uts", 0x04000000), ("cgroup", 0x02000000), ("pid", 0x20000000)]
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 4, 24, 22, 38
SECCOMP_MODE_FILTER = 2


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


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
FILTER = ctypes.create_string_buffer(bpf, len(bpf))


def report(fd, msg):
    os.write(fd, (json.dumps(msg) + "\n").encode())


def grandchild(env, fds, status):
    # Descriptors first: the five arrive at arbitrary numbers; park them
    # high, then put the program's four at 0-3 and close everything else
    # but the status pipe, closed once privileges are gone.
    high = [os.dup2(fd, 100 + i) for i, fd in enumerate(fds[:4])]
    status = os.dup2(status, 104)
    for i, fd in enumerate(high):
        os.dup2(fd, i)
    os.closerange(4, 104)
    os.closerange(105, os.sysconf("SC_OPEN_MAX"))
    os.setsid()
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    for cap in range(LAST_CAP + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    # Entering the user namespace left this process with every capability
    # there but under an unmapped uid; the kernel clears the capability sets
    # only on a change from uid 0 to non-zero, so pass through 0 on the way.
    os.setresuid(0, 0, 0)
    os.setresuid(uid, uid, uid)
    with open("/proc/self/status") as f:
        caps = [line.split()[1] for line in f if line.startswith(("CapPrm", "CapEff", "CapAmb", "CapBnd"))]
    if len(caps) != 4 or any(int(c, 16) for c in caps):
        raise OSError("capabilities left after dropping privileges: %s" % caps)
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    prog = SockFprog(len(bpf) // 8, ctypes.addressof(FILTER))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.umask(0o022)
    os.environ.clear()
    os.environ.update(kv.split("=", 1) for kv in env)
    os.chdir("/work")
    os.write(status, b"R")
    os.close(status)
    boot["_coderun_run"]()


def child(req, fds):
    events = fds[4]
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        ns = [(os.open("/proc/%d/ns/%s" % (req["init"], name), os.O_RDONLY | os.O_CLOEXEC), flag)
              for name, flag in NAMESPACES]
        for fd, flag in ns:
            check(libc.setns(fd, flag), "setns")
            os.close(fd)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                grandchild(req["env"], fds, w)
            except BaseException as e:
                os.write(w, ("grandchild: %s" % e).encode())
            finally:
                os._exit(127)
        os.close(w)
        said = os.read(r, 4096)
        os.close(r)
        if said != b"R":
            os.waitpid(pid, 0)
            raise OSError("could not drop privileges: %s" % said.decode(errors="replace"))
        report(events, {"spawned": pid})
        for fd in fds[:4]:
            os.close(fd)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            report(events, {"exit": {"code": -1, "signal": os.WTERMSIG(status)}})
        else:
            report(events, {"exit": {"code": os.WEXITSTATUS(status), "signal": 0}})
    except BaseException as e:
        try:
            report(events, {"error": "zygote: %s" % e})
        except OSError:
            pass
    os._exit(0)


def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    sock = socket.socket(fileno=3)
    signal.signal(signal.SIGCHLD, reap)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock.send(b"R")
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
        if not msg:
            return  # the host let go
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            sock.close()
            child(json.loads(msg), fds)
        for fd in fds:
            os.close(fd)


main()

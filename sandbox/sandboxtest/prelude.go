//go:build linux

package sandboxtest

import (
	"encoding/json"
	"strconv"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// syscallNumbers are passed to attack programs (as NR), which call system
// calls directly through ctypes: the numbers are those of the architecture
// the suite was built for.
var syscallNumbers = map[string]int{
	"acct": unix.SYS_ACCT, "add_key": unix.SYS_ADD_KEY, "bpf": unix.SYS_BPF, "chroot": unix.SYS_CHROOT, "clone": unix.SYS_CLONE,
	"clock_settime": unix.SYS_CLOCK_SETTIME, "delete_module": unix.SYS_DELETE_MODULE,
	"finit_module": unix.SYS_FINIT_MODULE, "fsmount": unix.SYS_FSMOUNT, "fsopen": unix.SYS_FSOPEN,
	"init_module": unix.SYS_INIT_MODULE, "io_uring_setup": unix.SYS_IO_URING_SETUP, "kcmp": unix.SYS_KCMP,
	"kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "kexec_load": unix.SYS_KEXEC_LOAD, "keyctl": unix.SYS_KEYCTL,
	"mount": unix.SYS_MOUNT, "mount_setattr": unix.SYS_MOUNT_SETATTR, "move_mount": unix.SYS_MOVE_MOUNT,
	"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	"open_tree": unix.SYS_OPEN_TREE, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
	"pidfd_getfd": unix.SYS_PIDFD_GETFD, "pidfd_open": unix.SYS_PIDFD_OPEN, "pivot_root": unix.SYS_PIVOT_ROOT,
	"process_vm_readv": unix.SYS_PROCESS_VM_READV, "ptrace": unix.SYS_PTRACE, "reboot": unix.SYS_REBOOT,
	"request_key": unix.SYS_REQUEST_KEY, "setdomainname": unix.SYS_SETDOMAINNAME,
	"setgid": unix.SYS_SETGID, "setgroups": unix.SYS_SETGROUPS, "sethostname": unix.SYS_SETHOSTNAME,
	"setns": unix.SYS_SETNS, "setresgid": unix.SYS_SETRESGID, "setresuid": unix.SYS_SETRESUID,
	"settimeofday": unix.SYS_SETTIMEOFDAY, "setuid": unix.SYS_SETUID, "swapon": unix.SYS_SWAPON,
	"syslog": unix.SYS_SYSLOG, "umount2": unix.SYS_UMOUNT2, "unshare": unix.SYS_UNSHARE,
	"userfaultfd": unix.SYS_USERFAULTFD,
}

// preludeImports and preludeHelpers frame every attack program. Between them
// the suite defines ARGS (the parameters, decoded from JSON) and NR.
const preludeImports = `import ctypes, errno, json, os, signal, socket, struct, sys, time
`

const preludeHelpers = `
NR = ARGS.pop("_nr")
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

def ename(e):
    return errno.errorcode.get(e, str(e))

def escaped(what):
    """A step that must fail succeeded: the suite fails the test."""
    print("ESCAPED:", str(what)[:500], flush=True)

def blocked(what, why=""):
    print("blocked:", what, "->", str(why)[:200], flush=True)

def must_fail(what, fn, *a, **kw):
    """Calls fn, which must raise; returns the errno (or -1), 0 if it escaped."""
    try:
        r = fn(*a, **kw)
    except OSError as e:
        blocked(what, ename(e.errno) if e.errno else repr(e))
        return e.errno or -1
    except Exception as e:
        blocked(what, type(e).__name__ + ": " + str(e))
        return -1
    escaped(what + " succeeded: " + repr(r)[:300])
    return 0

def sc(nr, *args):
    """A raw system call: returns (result, errno)."""
    ctypes.set_errno(0)
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = _libc.syscall(ctypes.c_long(nr), *conv)
    return r, (ctypes.get_errno() if r == -1 else 0)

def sc_must_fail(what, nr, *args):
    r, e = sc(nr, *args)
    if r == -1:
        blocked(what, ename(e))
        return e
    escaped("%s returned %d" % (what, r))
    return 0

DENIED = {errno.EPERM, errno.EACCES, errno.ENOSYS}

def sc_must_deny(what, nr, *args):
    """The call must be refused for want of privilege (EPERM, EACCES or
    ENOSYS): any other outcome means the kernel went on to act on it."""
    r, e = sc(nr, *args)
    if r == -1 and e in DENIED:
        blocked(what, ename(e))
        return e
    escaped("%s was not refused: %s" % (what, ename(e) if r == -1 else "returned %d" % r))
    return 0

def read(path, n=1 << 20):
    with open(path, "rb") as f:
        return f.read(n)

def pids():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())

def open_for_write(path):
    """Opens path for writing without writing anything."""
    fd = os.open(path, os.O_WRONLY)
    os.close(fd)
    return "opened for writing"

def done():
    print("DONE", flush=True)

`

// attackPy is a Python attack program: the prelude, ARGS set to args, then body.
func attackPy(args map[string]any, body string) sandbox.Request {
	all := map[string]any{"_nr": syscallNumbers}
	for k, v := range args {
		all[k] = v
	}
	j, err := json.Marshal(all)
	if err != nil {
		panic(err)
	}
	code := preludeImports + "ARGS = json.loads(" + strconv.Quote(string(j)) + ")\n" + preludeHelpers + body
	return py(code)
}

// pyQuote formats s as a Python string literal (Go's quoting is a subset
// of Python's escapes).
func pyQuote(s string) string { return strconv.Quote(s) }

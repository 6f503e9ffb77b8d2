//go:build linux

package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// forkBomb models the classic bash fork bomb, kept alive by a parent that
// waits without forking: the process limit must cap it (the host, sampling
// its own process table throughout, never sees more bomb processes than
// the limit), the host must still be able to start processes, the run
// must end at its wall-time limit with reason timeout, and no bomb process
// may survive the run.
func (h *harness) forkBomb(t *testing.T) {
	const procs = 24
	marker := "coderun-forkbomb-" + randomHex(6)
	req := attackPy(map[string]any{"marker": marker}, `
if os.fork() == 0:
    fd = os.open("/dev/null", os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv("/bin/bash", [ARGS["marker"], "-c", "bomb() { bomb | bomb & }; bomb"])
time.sleep(3600)  # waits without forking
`)
	req.Limits = limits(sandbox.Limits{WallTime: 3 * time.Second, Processes: procs})

	var peak atomic.Int32
	var hostForkErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			if n := int32(len(hostPIDsWith(marker))); n > peak.Load() {
				peak.Store(n)
			}
			if i%20 == 10 {
				if err := exec.Command("/bin/true").Run(); err != nil {
					hostForkErr.Store(err)
				}
			}
		}
	}()
	res := h.run(t, req)
	close(stop)
	wg.Wait()

	if res.Reason != sandbox.ReasonTimeout {
		t.Errorf("fork bomb: reason %s, want timeout (the parent waits until the wall-time limit)\n%s", res.Reason, describe(res))
	}
	if p := peak.Load(); p > procs {
		t.Errorf("CONTAINMENT FAILURE: the host saw %d bomb processes at once; the limit is %d", p, procs)
	} else {
		t.Logf("peak of %d bomb processes seen from the host (limit %d)", p, procs)
	}
	if err := hostForkErr.Load(); err != nil {
		t.Errorf("the host could not start a process during the fork bomb: %v", err)
	}
	requireNoSurvivors(t, marker, "fork bomb")
}

// processLimit models exhausting the process table by forking, and the
// thread table by spawning threads, in a controlled loop: both must stop
// with EAGAIN at the configured limit (which counts processes and threads
// together), and the program must still be able to report it.
func (h *harness) processLimit(t *testing.T) {
	const procs = 16
	req := attackPy(nil, `
import threading
kids, err = [], None
while len(kids) < 500:
    try:
        pid = os.fork()
    except OSError as e:
        err = ename(e.errno)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print("FORKS:" + json.dumps({"n": len(kids), "error": err}), flush=True)
for k in kids:
    os.kill(k, signal.SIGKILL)
    os.waitpid(k, 0)
ev, threads, terr = threading.Event(), [], None
while len(threads) < 500:
    th = threading.Thread(target=ev.wait)
    try:
        th.start()
    except RuntimeError as e:
        terr = str(e)
        break
    threads.append(th)
ev.set()
for th in threads:
    th.join()
print("THREADS:" + json.dumps({"n": len(threads), "error": terr}), flush=True)
done()
`)
	req.Limits = limits(sandbox.Limits{Processes: procs})
	res := h.attack(t, req)
	var forks, threads struct {
		N     int
		Error *string
	}
	jsonLine(t, res, "FORKS:", &forks)
	jsonLine(t, res, "THREADS:", &threads)
	// The program itself is one of the limit's processes.
	if forks.N > procs-1 || forks.Error == nil {
		t.Errorf("CONTAINMENT FAILURE: the program forked %d children (error %v); the limit of %d processes allows %d", forks.N, forks.Error, procs, procs-1)
	} else if forks.N < procs/2 {
		t.Errorf("forking stopped after %d children (%s), well below the limit of %d: something else is limiting", forks.N, *forks.Error, procs)
	} else if *forks.Error != "EAGAIN" {
		t.Errorf("forking failed with %s, want EAGAIN", *forks.Error)
	}
	if threads.N > procs-1 || threads.Error == nil {
		t.Errorf("CONTAINMENT FAILURE: the program started %d threads (error %v); the limit of %d allows %d", threads.N, threads.Error, procs, procs-1)
	}
	t.Logf("forks stopped at %d (%s), threads at %d (%s)", forks.N, deref(forks.Error), threads.N, deref(threads.Error))
}

// daemonOutlivesRun models code leaving a process behind to act after its
// run: a double-forked daemon in its own session, ignoring every catchable
// signal, with its output detached. The run must end when the main program
// exits (reason exited, not a timeout), and the daemon must be gone from
// the host the moment Run returns.
func (h *harness) daemonOutlivesRun(t *testing.T) {
	marker := "coderun-daemon-" + randomHex(6)
	req := attackPy(map[string]any{"marker": marker}, `
r, w = os.pipe()  # close-on-exec: EOF once the daemon has exec'd
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for s in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGUSR1):
            signal.signal(s, signal.SIG_IGN)
        fd = os.open("/dev/null", os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(fd, i)
        os.chdir("/")
        os.execv("/bin/sleep", [ARGS["marker"], "3600"])
    os._exit(0)
os.close(w)
os.read(r, 1)
os.wait()
seen = [p for p in pids() if ARGS["marker"].encode() in read("/proc/%d/cmdline" % p)]
print("DAEMON:" + json.dumps(seen), flush=True)
done()
`)
	req.Limits = limits(sandbox.Limits{WallTime: 15 * time.Second})
	start := time.Now()
	res := h.attack(t, req)
	requireNoSurvivors(t, marker, "a double-forked daemon")
	var seen []int
	jsonLine(t, res, "DAEMON:", &seen)
	if len(seen) == 0 {
		t.Errorf("the daemon was not running when the program exited, so its survival was not tested")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the run took %v: it waited for the daemon instead of ending with the program", d)
	}
}

// signalHostProcesses models code killing processes outside its sandbox:
// kill(-1) (every process it may signal), and SIGKILL aimed at the host
// pids of a root and a nobody sentinel process and of the test process.
// Afterwards the sentinels must still be alive.
func (h *harness) signalHostProcesses(t *testing.T) {
	targets := append(append([]int{}, h.sentinel.pids...), os.Getpid())
	h.attack(t, attackPy(map[string]any{"pids": targets}, `
for pid in ARGS["pids"]:
    if pid == os.getpid():
        continue
    must_fail("SIGKILL host pid %d" % pid, os.kill, pid, signal.SIGKILL)
    r, e = sc(NR["pidfd_open"], pid, 0)
    if r >= 0:
        escaped("pidfd_open(%d) gave a handle on a host process" % pid)
    else:
        blocked("pidfd_open(%d)" % pid, ename(e))
try:
    os.kill(-1, signal.SIGKILL)
    print("kill(-1, SIGKILL) sent to whatever this program may signal")
except OSError as e:
    blocked("kill(-1, SIGKILL)", ename(e.errno))
done()
`))
	// The shell's "kill -9 -1", and a literal kill of each host pid.
	res := h.run(t, sh(fmt.Sprintf(`kill -9 -1; for p in %s; do kill -9 "$p" 2>/dev/null && echo "ESCAPED: killed host pid $p"; done; echo DONE`,
		strings.Trim(fmt.Sprint(targets), "[]"))))
	requireContained(t, res)
	for _, pid := range h.sentinel.pids {
		if !alive(pid) {
			t.Errorf("CONTAINMENT FAILURE: host sentinel process %d was killed during the run", pid)
		}
	}
}

// ptraceOutside models code attaching to processes outside its sandbox to
// read their memory or hijack them: the sandbox's init (pid 1, when it is
// not the program's own process), its parent, and the host pids of the
// sentinels and the test process, through ptrace, /proc/<pid>/mem and
// process_vm_readv.
func (h *harness) ptraceOutside(t *testing.T) {
	h.attack(t, attackPy(map[string]any{"pids": h.hostPIDs()}, `
me, uid = os.getpid(), os.getuid()
targets = []
for pid in [1, os.getppid()] + ARGS["pids"]:
    if pid in targets or pid == me:
        continue
    try:
        if os.stat("/proc/%d" % pid).st_uid == uid:
            print("pid %d is the program's own (uid %d), not a target" % (pid, uid))
            continue
    except OSError:
        pass
    targets.append(pid)
buf = ctypes.create_string_buffer(64)
local = struct.pack("QQ", ctypes.addressof(buf), 64)
remote = struct.pack("QQ", 0x400000, 64)
for pid in targets:
    sc_must_fail("ptrace(PTRACE_ATTACH, %d)" % pid, NR["ptrace"], 16, pid, 0, 0)
    sc_must_fail("ptrace(PTRACE_SEIZE, %d)" % pid, NR["ptrace"], 0x4206, pid, 0, 0)
    must_fail("open /proc/%d/mem" % pid, os.open, "/proc/%d/mem" % pid, os.O_RDONLY)
    r, e = sc(NR["process_vm_readv"], pid, ctypes.create_string_buffer(local, 16), 1, ctypes.create_string_buffer(remote, 16), 1, 0)
    if r >= 0 or e == errno.EFAULT:
        escaped("process_vm_readv(%d) was allowed to read (%s)" % (pid, "ok" if r >= 0 else ename(e)))
    else:
        blocked("process_vm_readv(%d)" % pid, ename(e))
done()
`))
}

// seeHostProcesses models reconnaissance of the host's processes: the
// sandbox's /proc must list only its own few processes, none of the
// host's (the sentinels, the test process, the host's init), and it must
// not share the host's PID, network, mount, IPC or UTS namespace.
func (h *harness) seeHostProcesses(t *testing.T) {
	exe, _ := os.Executable()
	hostInit, _ := os.ReadFile("/proc/1/cmdline")
	ns := map[string]string{}
	for _, n := range []string{"pid", "net", "mnt", "ipc", "uts"} {
		if l, err := os.Readlink("/proc/self/ns/" + n); err == nil {
			ns[n] = l
		}
	}
	res := h.attack(t, attackPy(map[string]any{
		"marker": h.sentinel.marker, "exe": exe, "host_init": strings.ReplaceAll(string(hostInit), "\x00", " "), "ns": ns,
	}, `
procs = {}
for pid in pids():
    try:
        procs[pid] = read("/proc/%d/cmdline" % pid).replace(b"\0", b" ").decode(errors="replace")
    except OSError as e:
        procs[pid] = "? (" + ename(e.errno) + ")"
print("PROCS:" + json.dumps(procs), flush=True)
for pid, cmd in procs.items():
    if ARGS["marker"] in cmd:
        escaped("a host sentinel process is visible as pid %d: %s" % (pid, cmd))
    if ARGS["exe"] and ARGS["exe"] in cmd:
        escaped("the host's test process is visible as pid %d: %s" % (pid, cmd))
if len(procs) > 8:
    escaped("%d processes are visible; a fresh sandbox has a handful" % len(procs))
if ARGS["host_init"] and procs.get(1) == ARGS["host_init"]:
    escaped("pid 1 is the host's init: %s" % procs[1])
for name, host in ARGS["ns"].items():
    mine = os.readlink("/proc/self/ns/" + name)
    if mine == host:
        escaped("the sandbox shares the host's %s namespace (%s)" % (name, mine))
    else:
        blocked("share the host's %s namespace" % name, "%s differs from the host's %s" % (mine, host))
done()
`))
	var procs map[string]string
	jsonLine(t, res, "PROCS:", &procs)
	t.Logf("processes visible in the sandbox: %v", procs)
}

// sysvIPC models code attaching to the host's System V shared memory
// (databases and other services keep data there): the test creates a
// world-readable segment; the sandbox must neither attach to it by key or
// id nor see it listed.
func (h *harness) sysvIPC(t *testing.T) {
	key := int(uint32(time.Now().UnixNano())&0x3fffffff) | 0x10000
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666)
	if err != nil {
		t.Skipf("cannot create a System V shared memory segment on the host: %v", err)
	}
	defer unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	h.attack(t, attackPy(map[string]any{"key": key, "id": id}, `
_libc.shmget.restype = ctypes.c_int
_libc.shmat.restype = ctypes.c_void_p
r = _libc.shmget(ctypes.c_int(ARGS["key"]), ctypes.c_size_t(0), ctypes.c_int(0))
if r >= 0:
    escaped("shmget found the host's segment (key %#x) as id %d" % (ARGS["key"], r))
else:
    blocked("shmget of the host's key %#x" % ARGS["key"], ename(ctypes.get_errno()))
p = _libc.shmat(ctypes.c_int(ARGS["id"]), None, ctypes.c_int(0o10000))
if p is not None and p != ctypes.c_void_p(-1).value:
    escaped("shmat attached the host's segment id %d" % ARGS["id"])
else:
    blocked("shmat of the host's segment id %d" % ARGS["id"], ename(ctypes.get_errno()))
try:
    listing = read("/proc/sysvipc/shm").decode().split("\n")[1:]
    if [l for l in listing if l.split() and l.split()[0] == str(ARGS["key"])]:
        escaped("/proc/sysvipc/shm lists the host's segment")
except OSError as e:
    blocked("read /proc/sysvipc/shm", ename(e.errno))
done()
`))
}

func deref(s *string) string {
	if s == nil {
		return "no error"
	}
	return *s
}

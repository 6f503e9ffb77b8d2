//go:build linux

package sandboxtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// oomScoreAdj models a program that undoes the host's protection against
// it: the host sets the program's oom_score_adj to 1000 so that, when the
// machine runs out of memory, the kernel kills sandboxed code first. A
// process may lower its own score (down to the floor only a privileged
// writer sets), so a program that writes 0 to /proc/self/oom_score_adj (or
// the legacy oom_adj), itself or through a child it executes, would make
// the host's own services the OOM killer's victims instead. Every such
// write must fail, and the score must stay where the host put it.
func (h *harness) oomScoreAdj(t *testing.T) {
	h.attack(t, attackPy(nil, `
import subprocess
def write(path, value):
    with open(path, "w") as f:
        f.write(value)
    return "wrote " + value
before = int(read("/proc/self/oom_score_adj"))
for path, value in [("/proc/self/oom_score_adj", "0"), ("/proc/self/oom_adj", "0"),
                    ("/proc/thread-self/oom_score_adj", "0"), ("/proc/%d/oom_score_adj" % os.getpid(), "-1000")]:
    must_fail("write %s to %s" % (value, path), write, path, value)
after = int(read("/proc/self/oom_score_adj"))
if after < before:
    escaped("oom_score_adj lowered from %d to %d" % (before, after))
for shell in ["echo 0 > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj",
              "exec 3>/proc/$$/oom_score_adj && echo 0 >&3 && cat /proc/$$/oom_score_adj"]:
    r = subprocess.run(["sh", "-c", shell], capture_output=True, text=True)
    if r.returncode == 0:
        escaped("a child it executes lowered its oom_score_adj (%s): %s" % (shell, r.stdout.strip()))
    else:
        blocked("child: sh -c %r" % shell, r.stderr.strip())
done()
`))
}

// hostIdentity models a program that identifies the machine it runs on,
// to correlate runs of different tenants or to recognise a host across
// runs: the kernel command line (root disk UUID, boot image), the boot id
// (unique to the host's current boot), the machine id and the firmware's
// product UUID. None may be the host's. The boot id is one programs read,
// so it must still be there, as a well-formed id of the sandbox's own.
func (h *harness) hostIdentity(t *testing.T) {
	cmdline, _ := os.ReadFile("/proc/cmdline")
	bootID, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	machineID, _ := os.ReadFile("/etc/machine-id")
	req := attackPy(map[string]any{
		"cmdline":    strings.TrimSpace(string(cmdline)),
		"boot_id":    strings.TrimSpace(string(bootID)),
		"machine_id": strings.TrimSpace(string(machineID)),
	}, `
import re
try:
    cmdline = read("/proc/cmdline").decode().strip()
except OSError as e:
    blocked("read /proc/cmdline", ename(e.errno))
    cmdline = ""
if ARGS["cmdline"] and cmdline == ARGS["cmdline"]:
    escaped("/proc/cmdline is the host's: %s" % cmdline)
else:
    blocked("read the host's /proc/cmdline", "got %r" % cmdline)
boot_id = read("/proc/sys/kernel/random/boot_id").decode().strip()
if boot_id == ARGS["boot_id"]:
    escaped("/proc/sys/kernel/random/boot_id is the host's: %s" % boot_id)
else:
    blocked("read the host's boot_id", "got the sandbox's own")
if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", boot_id):
    print("BADBOOTID: %r" % boot_id)
if read("/proc/sys/kernel/random/boot_id").decode().strip() != boot_id:
    print("BADBOOTID: it changes from one read to the next")
print("BOOTID:" + boot_id)
must_fail("write boot_id", open_for_write, "/proc/sys/kernel/random/boot_id")
for p in ["/etc/machine-id", "/var/lib/dbus/machine-id", "/run/machine-id", "/sys/class/dmi/id/product_uuid"]:
    try:
        data = read(p).decode(errors="replace").strip()
    except OSError as e:
        blocked("read " + p, ename(e.errno))
        continue
    if ARGS["machine_id"] and ARGS["machine_id"] in data:
        escaped("%s is the host's machine id" % p)
    else:
        blocked("read the host's id in " + p, "not the host's")
done()
`)
	var ids []string
	for range 2 {
		res := h.attack(t, req)
		if bad := lines(res.Stdout, "BADBOOTID: "); len(bad) > 0 {
			t.Errorf("the sandbox's boot_id is not a stable, well-formed id: %s", bad[0])
		}
		ids = append(ids, strings.Join(lines(res.Stdout, "BOOTID:"), ""))
	}
	if ids[0] == ids[1] {
		t.Errorf("two sandboxes have the same boot_id %q: it identifies the host (or links runs)", ids[0])
	}
}

// inotifyOnSystemTree models watching the system files that are shared
// with the host (and, under a zygote, with every other sandbox): an
// inotify or fanotify watch on /usr sees which programs and libraries the
// host or another tenant opens, when, and how often. The watch interfaces
// must be refused.
func (h *harness) inotifyOnSystemTree(t *testing.T) {
	h.attack(t, attackPy(map[string]any{"nr": map[string]int{
		"inotify_init": unix.SYS_INOTIFY_INIT, "inotify_init1": unix.SYS_INOTIFY_INIT1, "fanotify_init": unix.SYS_FANOTIFY_INIT,
	}}, `
nr = ARGS["nr"]
sc_must_deny("inotify_init", nr["inotify_init"])
sc_must_deny("inotify_init1", nr["inotify_init1"], 0)
sc_must_deny("fanotify_init", nr["fanotify_init"], 0, 0)
done()
`))
}

// locksOnSystemTree models a lock on a system file reaching across the
// boundary: a program that flocks a /usr file the host also locks would
// block the host (a denial of service), and a program that sees the
// host's lock learns what the host is doing (a side channel). A lock taken
// in the sandbox must not block the host's lock on the same file, and the
// host's lock must not be visible to the sandbox. The system tree is /usr
// and the host's /etc directories the sandbox sees (certificates, fonts,
// Python's configuration).
//
// A runtime whose system tree is not the host's (a container image) may
// lack the file: the sandbox cannot lock what it cannot open, so a /usr
// file it lacks is tried again with another, until one it has shows that
// its lock does not reach the host's file of the same path.
func (h *harness) locksOnSystemTree(t *testing.T) {
	t.Run("usr", func(t *testing.T) {
		for range 5 {
			if h.locksOn(t, randomUsrFile(t)) {
				return
			}
		}
		t.Log("none of five host files of /usr/bin is in the sandbox: its /usr is not the host's")
	})
	t.Run("etc", func(t *testing.T) { h.locksOn(t, etcSharedFile(t)) })
}

// locksOn checks a lock on one host file from both sides, and reports
// whether the sandbox has a file at that path.
func (h *harness) locksOn(t *testing.T, path string) bool {
	host, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	// Suites running at once in other test processes (one per runtime)
	// lock the same host files: each holds this lock while it does, so
	// that another's lock is never taken for the sandbox's.
	serial, err := os.OpenFile(filepath.Join(os.TempDir(), "coderun-sandboxtest-locks"), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer serial.Close()
	if err := syscall.Flock(int(serial.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	code := `
import fcntl
try:
    fd = os.open(ARGS["path"], os.O_RDONLY)
except FileNotFoundError:
    print("ABSENT", flush=True)
    done()
    sys.exit(0)
try:
    fcntl.flock(fd, ARGS["op"])
    print("LOCKED", flush=True)
except OSError as e:
    if ARGS["host_holds"]:
        escaped("the host's lock on %s is visible in the sandbox: %s" % (ARGS["path"], ename(e.errno)))
    else:
        escaped("flock %s: %s" % (ARGS["path"], ename(e.errno)))
else:
    if ARGS["host_holds"]:
        blocked("see the host's lock on " + ARGS["path"], "not seen")
    time.sleep(ARGS["hold"])
done()
`
	// The host holds a lock; the sandbox must not see it.
	if err := syscall.Flock(int(host.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	res := h.attack(t, attackPy(map[string]any{"path": path, "op": syscall.LOCK_EX | syscall.LOCK_NB, "host_holds": true, "hold": 0}, code))
	if err := syscall.Flock(int(host.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if hasLine(res.Stdout, "ABSENT") {
		t.Logf("the sandbox has no %s", path)
		return false
	}
	// The sandbox holds a lock; the host must still get its own.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	blockedHost := make(chan int)
	go func() { blockedHost <- pollLock(ctx, host) }()
	res = h.attack(t, attackPy(map[string]any{"path": path, "op": syscall.LOCK_EX, "host_holds": false, "hold": 1.5}, code))
	cancel()
	if n := <-blockedHost; n > 0 {
		t.Errorf("CONTAINMENT FAILURE: the sandbox's lock on %s blocked the host's lock on it %d times", path, n)
	}
	if !hasLine(res.Stdout, "LOCKED") {
		t.Errorf("the program never held its lock:\n%s", describe(res))
	}
	return true
}

// pollLock tries to take and release an exclusive lock on f until ctx is
// done, and returns how often another holder blocked it.
func pollLock(ctx context.Context, f *os.File) int {
	n := 0
	for ctx.Err() == nil {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			n++
		} else if err == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

// randomUsrFile picks a regular file of the host's /usr/bin, at random so
// that test processes running at once do not lock the same one.
func randomUsrFile(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir("/usr/bin")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			files = append(files, filepath.Join("/usr/bin", e.Name()))
		}
	}
	if len(files) == 0 {
		t.Skip("no regular file in /usr/bin")
	}
	return files[rand.IntN(len(files))]
}

// etcSharedFile is a regular file in one of the host's /etc directories
// that sandboxes see (mount.go's etcDirs).
func etcSharedFile(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/etc/ssl/openssl.cnf", "/etc/ssl/certs/ca-certificates.crt", "/etc/fonts/fonts.conf", "/etc/python3/sitecustomize.py"} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	t.Skip("no shared /etc file on this host")
	return ""
}

// kernelUevents models listening to the host's device events: a netlink
// socket of the NETLINK_KOBJECT_UEVENT family bound to its multicast group
// hears every device the host attaches or removes (disks, USB keys,
// network interfaces), where the kernel broadcasts them into the
// sandbox's network namespace. Netlink families other than route reach
// kernel state beyond the sandbox as well (audit, sock_diag, generic,
// netfilter). The socket must not be made, or not bound.
func (h *harness) kernelUevents(t *testing.T) {
	h.attack(t, attackPy(nil, `
NETLINK_KOBJECT_UEVENT = 15
for typ in (socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC):
    try:
        s = socket.socket(socket.AF_NETLINK, typ, NETLINK_KOBJECT_UEVENT)
    except OSError as e:
        blocked("NETLINK_KOBJECT_UEVENT socket, type %d" % typ, ename(e.errno))
        continue
    try:
        s.bind((0, 1))
        escaped("bound a NETLINK_KOBJECT_UEVENT socket (type %d) to the host's device events" % typ)
    except OSError as e:
        blocked("bind NETLINK_KOBJECT_UEVENT", ename(e.errno))
    finally:
        s.close()
for proto, name in [(4, "sock_diag"), (9, "audit"), (12, "netfilter"), (16, "generic")]:
    must_fail("netlink %s socket" % name, socket.socket, socket.AF_NETLINK, socket.SOCK_DGRAM, proto)
done()
`))
}

// randomAcrossRuns models one run predicting the next: programs forked from one
// interpreter (the zygote) start from its memory, and so would share its
// random module's state (one run would know the next one's "random"
// numbers). Two runs must draw different random numbers, and hashing must
// stay consistent within a run, including for the dictionaries the
// interpreter built before the run (module and attribute names). The
// string-hash secret, which a fork cannot change (see the linux runtime's
// package doc), must be fresh for a request that asks for it by setting
// PYTHONHASHSEED (which sends it to a fresh interpreter).
func (h *harness) randomAcrossRuns(t *testing.T) {
	req := attackPy(nil, `
import random, sys
s = "".join(chr(c) for c in b"coderun-hash-") + str(len(sys.argv) * 12345)
b = s.encode() + b"!"
if hash(s) != hash(s[:] + "") or hash(s) != hash("".join(list(s))):
    escaped("hash is not consistent within the run")
names = ["".join(["built", "ins"]), "".join(["o", "s"]), "".join(["sy", "s"])]
for n in names:
    if n not in sys.modules:
        escaped("a module the interpreter loaded is not found under a fresh string: %r" % n)
if getattr(os, "".join(["get", "pid"])) is not os.getpid:
    escaped("attribute lookup by a fresh string is inconsistent")
d = {k: i for i, k in enumerate(sys.modules)}
if any(d["".join(list(k))] != i for i, k in enumerate(sys.modules)):
    escaped("a dictionary built in the run is inconsistent")
print("HASH:%d %d %r" % (hash(s), hash(b), random.random()))
done()
`)
	run := func(env map[string]string) [2][]string {
		var got [2][]string
		for i := range got {
			r := req
			r.Env = env
			res := h.attack(t, r)
			got[i] = strings.Fields(strings.Join(lines(res.Stdout, "HASH:"), ""))
			if len(got[i]) != 3 {
				t.Fatalf("want three values, got %q", got[i])
			}
		}
		return got
	}
	plain := run(nil)
	if plain[0][2] == plain[1][2] {
		t.Errorf("two runs drew the same random.random() %s: one run predicts the next", plain[0][2])
	}
	fresh := run(map[string]string{"PYTHONHASHSEED": "random"})
	for i, what := range []string{"str hash", "bytes hash"} {
		if fresh[0][i] == fresh[1][i] {
			t.Errorf("two runs with PYTHONHASHSEED=random share their %s %s: one run predicts the next", what, fresh[0][i])
		}
	}
}

//go:build linux

package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// readHostShadow models code stealing the host's password hashes, sudo
// rules and SSH host keys from /etc.
func (h *harness) readHostShadow(t *testing.T) {
	res := h.attack(t, attackPy(nil, `
for p in ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers",
          "/etc/security/opasswd", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
          "/etc/ssh/ssh_host_ed25519_key"]:
    must_fail("read " + p, read, p)
done()
`))
	for _, pw := range facts().shadowPWs {
		if strings.Contains(res.Stdout+res.Stderr, pw) {
			t.Errorf("CONTAINMENT FAILURE: a password hash from the host's /etc/shadow appears in the sandbox's output")
		}
	}
}

// probeHostPaths runs a program that looks for host files: each of files
// must be invisible (even stat fails), none of names may be listed in dirs,
// and the canary secret must not be in any file under walk.
func (h *harness) probeHostPaths(t *testing.T, files, dirs, names, walk []string) *sandbox.Result {
	t.Helper()
	return h.attack(t, attackPy(map[string]any{
		"files": files, "dirs": dirs, "names": names, "walk": walk, "secret": h.canary.secret,
	}, `
import stat
secret = ARGS["secret"].encode()
for p in ARGS["files"] or []:
    try:
        os.lstat(p)
    except OSError as e:
        blocked("stat host path " + p, ename(e.errno))
        continue
    try:
        data = read(p) if os.path.isfile(p) else os.listdir(p)
        escaped("host path %s is readable inside the sandbox: %r" % (p, data[:80]))
    except OSError as e:
        escaped("host path %s exists inside the sandbox (unreadable: %s)" % (p, ename(e.errno)))
for d in ARGS["dirs"] or []:
    try:
        listing = os.listdir(d)
    except OSError as e:
        blocked("list " + d, ename(e.errno))
        continue
    leaked = [n for n in ARGS["names"] or [] if n in listing]
    if leaked:
        escaped("listing %s shows the host's entries %s" % (d, leaked))
    else:
        blocked("list " + d, "%d entries, none of the host's" % len(listing))
searched = 0
for top in ARGS["walk"] or []:
    for root, subdirs, fnames in os.walk(top):
        for f in fnames:
            p = os.path.join(root, f)
            try:
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode) and st.st_size < (1 << 20):
                    searched += 1
                    if secret in read(p):
                        escaped("the host's canary secret is in " + p)
            except OSError:
                pass
blocked("search %s for the host's canary secret" % ARGS["walk"], "%d files searched" % searched)
done()
`))
}

// canariesIn returns the planted canaries whose directory satisfies keep.
func (h *harness) canariesIn(keep func(dir string) bool) (files, dirs, names []string) {
	for i, d := range h.canary.dirs {
		if keep(d) {
			files = append(files, h.canary.files[i])
			dirs = append(dirs, d)
			names = append(names, h.canary.names[i])
		}
	}
	return files, dirs, names
}

// readHostHomes models code reading the host's home directories (/root
// and /home): SSH keys, shell history, cloud credentials. The suite plants
// a canary file in each; it must be neither listed nor readable, and its
// secret must not be found anywhere under /root or /home.
func (h *harness) readHostHomes(t *testing.T) {
	files, dirs, names := h.canariesIn(func(d string) bool { return d == "/root" || d == "/home" })
	if len(files) == 0 {
		t.Log("no canary could be planted in /root or /home (not root?); checking only that the secret is absent")
	}
	res := h.probeHostPaths(t, files, append(dirs, "/root", "/home"), names, []string{"/root", "/home"})
	h.requireNoCanarySecret(t, res)
}

// readHostCanaries models code reading host files in shared places: the
// host's /tmp and $TMPDIR, /var/tmp, /run, /etc, /opt and /srv, where other
// users and services keep sockets, tokens and configuration.
func (h *harness) readHostCanaries(t *testing.T) {
	files, dirs, names := h.canariesIn(func(d string) bool { return d != "/root" && d != "/home" })
	walk := []string{"/tmp", "/var/tmp", "/run", "/etc", "/opt", "/srv", "/mnt", "/media"}
	res := h.probeHostPaths(t, files, dirs, names, walk)
	h.requireNoCanarySecret(t, res)
}

func (h *harness) requireNoCanarySecret(t *testing.T, res *sandbox.Result) {
	t.Helper()
	if strings.Contains(res.Stdout+res.Stderr, h.canary.secret) {
		t.Errorf("CONTAINMENT FAILURE: the secret of a host canary file appears in the sandbox's output")
	}
}

// readProjectFiles models code reading the source tree of the service
// that runs it (this Go module: go.mod, sources, configuration with keys).
func (h *harness) readProjectFiles(t *testing.T) {
	mod := moduleRoot()
	if mod == "" {
		t.Skip("not run from inside a Go module")
	}
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(mod, "go.mod"), mod, filepath.Join(mod, "sandbox"), filepath.Join(mod, ".git")}
	res := h.probeHostPaths(t, files, []string{filepath.Dir(mod)}, []string{filepath.Base(mod)}, nil)
	first, _, _ := strings.Cut(string(gomod), "\n")
	if strings.Contains(res.Stdout+res.Stderr, first) {
		t.Errorf("CONTAINMENT FAILURE: the project's go.mod (%q) was read from inside the sandbox", first)
	}
}

// readHostEnvironment models code harvesting secrets from the environment
// of the service that runs it (API keys are commonly passed that way). The
// suite sets a secret variable in the test process before the runtime
// starts; neither it nor any other host variable may reach the program, its
// children, or any process it can see in /proc.
func (h *harness) readHostEnvironment(t *testing.T) {
	// Host variables that a clean environment may legitimately share.
	common := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "LANGUAGE": true, "TERM": true,
		"USER": true, "LOGNAME": true, "SHELL": true, "HOSTNAME": true, "PWD": true, "OLDPWD": true,
		"SHLVL": true, "_": true, "TMPDIR": true, "TZ": true, "LC_ALL": true, "LC_CTYPE": true}
	var hashes []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		// Short values ("1", "Agg") coincide with the sandbox's own
		// defaults and carry no secret.
		if common[k] || strings.HasPrefix(k, "LC_") || len(v) < 4 {
			continue
		}
		sum := sha256.Sum256([]byte(kv))
		hashes = append(hashes, hex.EncodeToString(sum[:]))
	}
	res := h.attack(t, attackPy(map[string]any{"key": h.envKey, "host_env": hashes}, `
import hashlib, subprocess
key = ARGS["key"]
host = set(ARGS["host_env"])
def check(env, where):
    if key in env:
        escaped("the host's secret variable %s is in %s" % (key, where))
    for k, v in env.items():
        if hashlib.sha256(("%s=%s" % (k, v)).encode()).hexdigest() in host:
            escaped("host variable %s (same value as on the host) is in %s" % (k, where))
check(os.environ, "the program's environment")
child = subprocess.run(["/usr/bin/env", "-0"], capture_output=True).stdout
check(dict(kv.split("=", 1) for kv in child.decode().split("\0") if "=" in kv), "a child's environment")
print("ENV:" + json.dumps(sorted(os.environ)))
for pid in pids():
    try:
        data = read("/proc/%d/environ" % pid)
    except OSError as e:
        blocked("read /proc/%d/environ" % pid, ename(e.errno))
        continue
    print("PROCENV %d: %r" % (pid, data[:2000]))
    if key.encode() in data:
        escaped("the host's secret variable is in /proc/%d/environ" % pid)
done()
`))
	if strings.Contains(res.Stdout+res.Stderr, h.envValue) {
		t.Errorf("CONTAINMENT FAILURE: the value of the host's secret variable %s appears in the sandbox's output", h.envKey)
	}
	var keys []string
	jsonLine(t, res, "ENV:", &keys)
	sort.Strings(keys)
	t.Logf("sandbox environment: %v", keys)
}

// readOtherRunWorkspace models a tenant spying on another tenant: run A
// writes a secret to its /work, /tmp and /dev/shm and keeps running; run B,
// at the same time, searches the whole file system and /proc for it, then
// tries to kill every process it can see. B must find nothing, and A must
// live until the test cancels it (reason killed, not an early SIGKILL).
func (h *harness) readOtherRunWorkspace(t *testing.T) {
	secret := "run-a-secret-" + randomHex(16)
	marker := "coderun-run-a-" + randomHex(6)
	reqA := attackPy(map[string]any{"secret": secret, "marker": marker}, `
for d in ["/work", "/tmp", "/dev/shm"]:
    with open(d + "/run-a-secret.txt", "w") as f:
        f.write(ARGS["secret"])
os.execv("/bin/sleep", [ARGS["marker"], "60"])
`)
	reqA.Limits = limits(sandbox.Limits{WallTime: 60 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	doneA := make(chan *sandbox.Result, 1)
	go func() {
		res, err := h.rt.Run(ctx, reqA)
		if err != nil {
			t.Errorf("run A: %v", err)
		}
		doneA <- res
	}()
	if _, ok := waitHostPID(marker, 15*time.Second); !ok {
		t.Log("run A's process is not visible on the host; giving it 2 s to start")
		time.Sleep(2 * time.Second)
	}

	reqB := attackPy(map[string]any{"marker": marker}, `
import stat
S = sys.stdin.buffer.read()
skip = {"/proc", "/sys", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}
n = 0
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in skip]
    for f in files:
        p = os.path.join(root, f)
        try:
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and st.st_size < (1 << 20):
                n += 1
                if S in read(p):
                    escaped("run A's secret is readable at " + p)
        except OSError:
            pass
blocked("search the file system for run A's secret", "%d files searched" % n)
for pid in pids():
    for what in ["cmdline", "environ"]:
        try:
            data = read("/proc/%d/%s" % (pid, what))
        except OSError:
            continue
        if ARGS["marker"].encode() in data or S in data:
            escaped("run A's process is visible as pid %d (%s)" % (pid, what))
    for sub in ["root/work", "root/tmp", "root/dev/shm", "cwd"]:
        try:
            names = os.listdir("/proc/%d/%s" % (pid, sub))
        except OSError:
            continue
        if "run-a-secret.txt" in names:
            escaped("run A's workspace is reachable through /proc/%d/%s" % (pid, sub))
blocked("look for run A in /proc", "%d processes visible" % len(pids()))
try:
    os.kill(-1, signal.SIGKILL)
    blocked("kill every visible process", "sent")
except OSError as e:
    blocked("kill every visible process", ename(e.errno))
done()
`)
	reqB.Stdin = []byte(secret)
	resB := h.attack(t, reqB)
	if strings.Contains(resB.Stdout+resB.Stderr, secret) {
		t.Errorf("CONTAINMENT FAILURE: run A's secret appears in run B's output")
	}

	cancel()
	var resA *sandbox.Result
	select {
	case resA = <-doneA:
	case <-time.After(30 * time.Second):
		t.Fatal("run A did not return within 30 s of being cancelled")
	}
	if resA != nil && resA.Reason != sandbox.ReasonKilled {
		t.Errorf("run A ended as %s, want killed (by the test's cancellation): did run B reach it?\n%s", resA.Reason, describe(resA))
	}
	requireNoSurvivors(t, marker, "run A after cancellation")
}

// readRuntimeBinaryAndState models code looking for the runtime itself: its
// binary (to find vulnerabilities or credentials in it), its state
// directory (other sandboxes' workspaces), through their host paths and
// through the /proc entries of every process it can see (exe links, open
// file descriptors: the runtime's init may hold its own binary open).
func (h *harness) readRuntimeBinaryAndState(t *testing.T) {
	paths := append(h.privatePaths(), "/run/coderun")
	res := h.attack(t, attackPy(map[string]any{"paths": paths}, `
import hashlib, stat
for p in ARGS["paths"]:
    try:
        os.lstat(p)
    except OSError as e:
        blocked("stat " + p, ename(e.errno))
        continue
    escaped("host path %s is visible in the sandbox" % p)
for pid in pids():
    try:
        fds = ["/proc/%d/fd/%s" % (pid, f) for f in os.listdir("/proc/%d/fd" % pid)]
    except OSError as e:
        blocked("list /proc/%d/fd" % pid, ename(e.errno))
        fds = []
    for c in ["/proc/%d/exe" % pid, "/proc/%d/root/proc/1/exe" % pid] + fds:
        try:
            fd = os.open(c, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError as e:
            blocked("open " + c, ename(e.errno))
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                head = hashlib.sha256(os.pread(fd, 65536, 0)).hexdigest()
                print("OPENED:" + json.dumps({"path": c, "size": st.st_size, "head": head}), flush=True)
        finally:
            os.close(fd)
done()
`))
	f := facts()
	for _, l := range lines(res.Stdout, "OPENED:") {
		if f.exeHead != "" && strings.Contains(l, f.exeHead) {
			t.Errorf("CONTAINMENT FAILURE: the runtime's own binary (the test executable) is readable from inside the sandbox: %s", l)
		}
	}
}

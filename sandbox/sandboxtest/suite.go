//go:build linux

package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// Suite configures a run of the conformance and security suite.
type Suite struct {
	// NewRuntime returns the runtime under test. It is called once per Run,
	// and should register the runtime's Close with t.Cleanup.
	NewRuntime func(t *testing.T) sandbox.Runtime
	// PrivatePaths are host paths (files or directories) that code in the
	// sandbox must neither reach nor see named, in addition to those the
	// suite always checks: the test binary, the Go module's source tree,
	// and canary files it plants in /root, /home, /etc, /run, /var/tmp and
	// the host's temporary directory. A runtime adds its state directory.
	PrivatePaths []string
	// Known are the scenarios the runtime is known to fail, by group and
	// name ("Security/SpecialFilesOut"), each with the reason, as the
	// README's runtimes table states it. Each is skipped with its reason
	// printed, so that the rest of the suite still holds the runtime to
	// the contract: a difference is documented, never hidden.
	Known map[string]string
}

// Run runs the whole suite against the runtime newRuntime returns.
func Run(t *testing.T, newRuntime func(t *testing.T) sandbox.Runtime) {
	(&Suite{NewRuntime: newRuntime}).Run(t)
}

// Run runs the conformance and security subtests against one runtime,
// and the long-lived ones (sandbox.Interactive) when it implements them.
func (s *Suite) Run(t *testing.T) {
	h := &harness{suite: s}
	// The host secret is in the environment before the runtime exists, so
	// that nothing the runtime starts could have been spawned without it.
	h.envKey = "CODERUN_TEST_HOST_SECRET_" + strings.ToUpper(randomHex(4))
	h.envValue = "host-secret-" + randomHex(16)
	if err := os.Setenv(h.envKey, h.envValue); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Unsetenv(h.envKey) })
	h.rt = s.NewRuntime(t)
	if h.rt == nil {
		t.Fatal("NewRuntime returned nil")
	}
	h.plantCanaries(t)
	h.startSentinels(t)
	t.Run("Conformance", h.conformance)
	t.Run("Security", h.security)
	t.Run("Interactive", h.interactive)
}

// harness is what the subtests share: the runtime and the host-side bait.
type harness struct {
	suite    *Suite
	rt       sandbox.Runtime
	envKey   string // a variable set in the host's environment
	envValue string
	canary   canaries
	sentinel sentinels
}

type scenario struct {
	name string
	fn   func(t *testing.T)
}

// runAll runs each scenario as a parallel subtest, but those the suite
// lists as known failures of the runtime (Suite.Known), which it skips.
func (h *harness) runAll(t *testing.T, scenarios []scenario) {
	group := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if why, ok := h.suite.Known[group+"/"+sc.name]; ok {
				t.Skipf("a known difference of runtime %s: %s", h.rt.Name(), why)
			}
			t.Parallel()
			sc.fn(t)
		})
	}
}

// quick are the limits most subtests run with: small enough that a mistake
// ends fast, large enough for Python to start several times over.
var quick = sandbox.Limits{
	WallTime:       20 * time.Second,
	CPUTime:        20 * time.Second,
	Memory:         256 << 20,
	Processes:      32,
	OutputBytes:    1 << 20,
	WorkspaceBytes: 64 << 20,
	OpenFiles:      256,
}

// limits returns quick with the non-zero fields of over.
func limits(over sandbox.Limits) sandbox.Limits { return over.WithDefaults(quick) }

func py(code string) sandbox.Request {
	return sandbox.Request{Language: sandbox.Python, Code: code, Limits: quick}
}

func sh(code string) sandbox.Request {
	return sandbox.Request{Language: sandbox.Bash, Code: code, Limits: quick}
}

// run runs req and fails the test when no result comes back or the sandbox
// could not be set up.
func (h *harness) run(t *testing.T, req sandbox.Request) *sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return h.runCtx(t, ctx, req)
}

func (h *harness) runCtx(t *testing.T, ctx context.Context, req sandbox.Request) *sandbox.Result {
	t.Helper()
	res, err := h.rt.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res == nil {
		t.Fatal("Run returned neither a result nor an error")
	}
	if res.Reason == sandbox.ReasonSetupError {
		t.Fatalf("sandbox setup failed: %s", res.Error)
	}
	return res
}

// describe is a result's outcome and output, for failure messages.
func describe(res *sandbox.Result) string {
	return fmt.Sprintf("reason=%s exit=%d signal=%q error=%q\n--- stdout ---\n%s\n--- stderr ---\n%s",
		res.Reason, res.ExitCode, res.Signal, res.Error, clip(res.Stdout, 4000), clip(res.Stderr, 4000))
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n... (%d more bytes)", len(s)-n)
}

// attack runs an attack program and checks that it was contained: it ran
// to its end ("DONE"), exited 0, and reported no step that got through.
func (h *harness) attack(t *testing.T, req sandbox.Request) *sandbox.Result {
	t.Helper()
	res := h.run(t, req)
	requireContained(t, res)
	return res
}

// requireContained fails the test for every "ESCAPED:" line and when the
// program did not run to its end (its checks would then be incomplete).
func requireContained(t *testing.T, res *sandbox.Result) {
	t.Helper()
	var blocked int
	for _, line := range strings.Split(res.Stdout+"\n"+res.Stderr, "\n") {
		if what, ok := strings.CutPrefix(line, "ESCAPED:"); ok {
			t.Errorf("CONTAINMENT FAILURE: the sandbox let this through:%s", what)
		}
		if strings.HasPrefix(line, "blocked:") {
			blocked++
		}
	}
	if !hasLine(res.Stdout, "DONE") {
		t.Errorf("the attack program did not run to its end, so some of its steps were never tried:\n%s", describe(res))
	} else if res.Reason != sandbox.ReasonExited || res.ExitCode != 0 {
		t.Errorf("the attack program finished but the run was reported as %s (exit %d, signal %q), want exited with 0:\n%s",
			res.Reason, res.ExitCode, res.Signal, describe(res))
	}
	t.Logf("%d attack steps blocked", blocked)
}

func hasLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// lines returns the lines of out that start with prefix, prefix removed.
func lines(out, prefix string) []string {
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			got = append(got, v)
		}
	}
	return got
}

// jsonLine decodes the line of out that starts with prefix into v.
func jsonLine(t *testing.T, res *sandbox.Result, prefix string, v any) {
	t.Helper()
	var got []string
	for _, l := range lines(res.Stdout, prefix) {
		if strings.TrimSpace(l) != "" {
			got = append(got, l)
		}
	}
	if len(got) == 0 {
		t.Fatalf("the program printed no %q line:\n%s", prefix, describe(res))
	}
	if err := json.Unmarshal([]byte(got[len(got)-1]), v); err != nil {
		t.Fatalf("decode %q line: %v\n%s", prefix, err, describe(res))
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ---- host-side observation -------------------------------------------------

// hostPIDsWith lists the host's processes whose command line contains
// marker (the test process itself excluded).
func hostPIDsWith(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmd, []byte(marker)) && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitHostPID waits up to d for a host process whose command line contains
// marker. Runtimes whose sandboxed processes are not host processes (a
// user-space kernel) never show one; callers treat that as "unknown".
func waitHostPID(marker string, d time.Duration) (int, bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if pids := hostPIDsWith(marker); len(pids) > 0 {
			return pids[0], true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, false
}

// isZombie reports whether pid has exited but not been reaped.
func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] == 'Z' || data[i+2] == 'X'
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !isZombie(pid)
}

// requireNoSurvivors fails the test for each host process of the run that
// is still alive once Run has returned.
func requireNoSurvivors(t *testing.T, marker, what string) {
	t.Helper()
	for _, pid := range hostPIDsWith(marker) {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		t.Errorf("CONTAINMENT FAILURE: %s: host process %d (%q) is still alive after the run returned",
			what, pid, strings.ReplaceAll(string(cmd), "\x00", " "))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ---- host-side bait ----------------------------------------------------------

// canaries are secret files the suite plants on the host where a sandbox
// must not reach: their names and contents must never show up inside.
type canaries struct {
	secret string   // the content of every planted file
	names  []string // base names, to look for in directory listings
	files  []string // host paths of the planted files
	dirs   []string // the host directories they were planted in
}

func (h *harness) plantCanaries(t *testing.T) {
	c := &h.canary
	c.secret = "canary-secret-" + randomHex(16)
	plant := func(dir string) {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return
		}
		name := ".coderun-canary-" + randomHex(6)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.secret+"\n"), 0o644); err != nil {
			t.Logf("cannot plant a canary in %s (%v); that directory goes unchecked", dir, err)
			return
		}
		t.Cleanup(func() { os.Remove(p) })
		c.names = append(c.names, name)
		c.files = append(c.files, p)
		c.dirs = append(c.dirs, dir)
	}
	tmp, err := os.MkdirTemp("", "coderun-canary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	for _, d := range []string{tmp, os.TempDir(), "/tmp", "/var/tmp", "/root", "/home", "/etc", "/run", "/opt", "/srv"} {
		plant(d)
	}
}

// sentinels are host processes that a sandbox must not be able to see,
// signal or trace: one running as root, one as nobody.
type sentinels struct {
	marker string
	pids   []int
}

func (h *harness) startSentinels(t *testing.T) {
	h.sentinel.marker = "coderun-sentinel-" + randomHex(6)
	for _, cred := range []*syscall.Credential{nil, {Uid: 65534, Gid: 65534}} {
		cmd := exec.Command("/bin/sleep", "3600")
		cmd.Args[0] = h.sentinel.marker
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Logf("cannot start a sentinel process (%v); signal checks use the test process only", err)
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		h.sentinel.pids = append(h.sentinel.pids, cmd.Process.Pid)
	}
}

// hostPIDs are host processes attacks aim at: the sentinels, this test
// process, and the host's init.
func (h *harness) hostPIDs() []int {
	return append(append([]int{}, h.sentinel.pids...), os.Getpid(), 1)
}

// privatePaths are host paths that must not be reachable from a sandbox.
func (h *harness) privatePaths() []string {
	paths := append([]string{}, h.suite.PrivatePaths...)
	if exe, err := os.Executable(); err == nil {
		paths = append(paths, exe, filepath.Dir(exe))
	}
	if mod := moduleRoot(); mod != "" {
		paths = append(paths, mod, filepath.Join(mod, "go.mod"))
	}
	return append(paths, h.canary.files...)
}

// moduleRoot finds the directory of the go.mod above the working directory
// (the package under test), or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// hostIPs are this host's addresses, loopback included.
func hostIPs() []string {
	out := []string{"127.0.0.1", "::1"}
	addrs, err := netInterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if a.IsLinkLocalUnicast() || a.IsLoopback() {
			continue
		}
		out = append(out, a.String())
	}
	return out
}

// hostGateways are the next hops of the host's routes (IPv4), from /proc/net/route.
func hostGateways() []string {
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 3 || f[2] == "00000000" {
			continue
		}
		v, err := strconv.ParseUint(f[2], 16, 32)
		if err != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%d.%d.%d.%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24))
	}
	return out
}

// hostResolvers are the name servers in the host's /etc/resolv.conf.
func hostResolvers() []string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

// hostInfo are host facts that several subtests compare against.
type hostInfo struct {
	exeHead   string   // sha256 of the first 64 KiB of the test binary
	exeSize   int64    // its size
	hostname  string   // the host's name
	shadowPWs []string // password hashes in the host's /etc/shadow
}

var (
	hostOnce sync.Once
	host     hostInfo
)

func facts() *hostInfo {
	hostOnce.Do(func() {
		if exe, err := os.Executable(); err == nil {
			if fi, err := os.Stat(exe); err == nil {
				host.exeSize = fi.Size()
			}
			host.exeHead, _ = headHash(exe)
		}
		host.hostname, _ = os.Hostname()
		if data, err := os.ReadFile("/etc/shadow"); err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				f := strings.Split(l, ":")
				if len(f) > 1 && len(f[1]) > 3 {
					host.shadowPWs = append(host.shadowPWs, f[1])
				}
			}
		}
	})
	return &host
}

// headHash is the hex sha256 of the first 64 KiB of a file.
func headHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, 64<<10)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// netInterfaceAddrs are the host's interface addresses.
func netInterfaceAddrs() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP)
		}
	}
	return out, nil
}

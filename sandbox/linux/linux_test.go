package linux_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/linux"
	"github.com/coderun/coderun/sandbox/sandboxtest"
	"golang.org/x/sys/unix"
)

// requireHost skips the test when this host cannot run the linux runtime.
func requireHost(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the linux runtime needs root (cgroups, workspace mounts, id maps): run the tests as root")
	}
	if err := linux.Probe().Require(nil); err != nil {
		t.Skipf("this host lacks isolation the linux runtime requires:\n%v", err)
	}
}

// harness is one runtime under test and what it must leave behind: nothing.
type harness struct {
	rt       *linux.Runtime
	stateDir string
	name     string // the runtime's, which its state directory and cgroups bear
	boxes    *boxWatch
	logs     *logBuffer
}

// newRuntime starts a runtime with its own state directory under /run
// (t.TempDir's parents are not traversable by the sandbox's ids) and
// registers a cleanup that closes it and checks that no mount, cgroup or
// state file of it remains.
func newRuntime(t *testing.T, opts linux.Options) *harness {
	t.Helper()
	requireHost(t)
	state, err := os.MkdirTemp("/run", "coderun-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o711); err != nil {
		t.Fatal(err)
	}
	h := &harness{stateDir: state, logs: &logBuffer{}}
	opts.StateDir = state
	opts.Logf = h.logs.logf
	h.rt, err = linux.New(opts)
	if err != nil {
		os.Remove(state)
		t.Fatalf("linux.New: %v", err)
	}
	h.name = runtimeName(t, state)
	h.boxes = watchBoxes(t, state)
	t.Cleanup(func() {
		if err := h.close(t); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, l := range h.logs.lines() {
			t.Logf("runtime log: %s", l)
		}
	})
	return h
}

// close closes the runtime once and checks it left nothing behind.
func (h *harness) close(t *testing.T) error {
	t.Helper()
	err := h.rt.Close()
	ids := h.boxes.stop()
	if t.Failed() && len(ids) == 0 {
		return err
	}
	for _, m := range mountsUnder(h.stateDir) {
		t.Errorf("after Close, %s is still mounted", m)
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	for _, dir := range runtimeCgroups(h.name) {
		t.Errorf("after Close, the runtime's cgroup %s remains", dir)
	}
	ents, _ := os.ReadDir(h.stateDir)
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "init-") { // the runtimes' shared init program stays
			names = append(names, e.Name())
		}
	}
	if len(names) > 0 {
		t.Errorf("after Close, the state directory still holds %v", names)
	}
	if len(mountsUnder(h.stateDir)) == 0 {
		os.RemoveAll(h.stateDir)
	}
	return err
}

// logBuffer collects the runtime's background log lines, which may come
// after a test has finished (so they cannot go to t.Logf directly).
type logBuffer struct {
	mu sync.Mutex
	l  []string
}

func (b *logBuffer) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.l = append(b.l, fmt.Sprintf(format, args...))
}

func (b *logBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.l...)
}

// boxWatch records the id of every sandbox the runtime creates: each gets
// a cgroup named after it in the runtime's own group (runtimeCgroups).
type boxWatch struct {
	fd   int
	mu   sync.Mutex
	ids  map[string]bool
	quit chan struct{}
	done chan struct{}
}

func watchBoxes(t *testing.T, state string) *boxWatch {
	t.Helper()
	w := &boxWatch{fd: -1, ids: map[string]bool{}, quit: make(chan struct{}), done: make(chan struct{})}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	w.fd = fd
	for _, dir := range runtimeCgroups(runtimeName(t, state)) {
		if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE); err != nil {
			t.Fatalf("inotify: %v", err)
		}
		// Sandboxes the pool made before the watch began are still waiting.
		list, _ := os.ReadDir(dir)
		for _, e := range list {
			if e.IsDir() {
				w.ids[e.Name()] = true
			}
		}
	}
	go w.loop()
	return w
}

func (w *boxWatch) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if n > 0 {
			w.parse(buf[:n])
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			return
		}
		if n <= 0 {
			select {
			case <-w.quit:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func (w *boxWatch) parse(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(b) >= unix.SizeofInotifyEvent {
		nameLen := int(uint32(b[12]) | uint32(b[13])<<8 | uint32(b[14])<<16 | uint32(b[15])<<24)
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(b) {
			return
		}
		if name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00")); name != "" {
			w.ids[name] = true
		}
		b = b[end:]
	}
}

// stop ends the watch and returns the ids seen.
func (w *boxWatch) stop() []string {
	if w.fd >= 0 {
		close(w.quit)
		<-w.done
		unix.Close(w.fd)
		w.fd = -1
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []string
	for id := range w.ids {
		ids = append(ids, id)
	}
	return ids
}

// mountsUnder lists the host's mount points under dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupParents are the directories under which the runtime makes its
// sandboxes' groups: "coderun" beside this process, in every hierarchy.
func cgroupParents() []string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var bases []string
		if parts[1] == "" {
			bases = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}
		} else {
			for _, c := range strings.Split(parts[1], ",") {
				bases = append(bases, filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(c, "name=")))
			}
		}
		for _, b := range bases {
			p := filepath.Join(b, parts[2], "coderun")
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				out = append(out, p)
			}
		}
	}
	return out
}

// runtimeName is the name of the one runtime whose state directory is
// under state, which its cgroups bear too. (The sandbox init program the
// runtimes share, init-*, is beside it.)
func runtimeName(t *testing.T, state string) string {
	t.Helper()
	ents, _ := os.ReadDir(state)
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "init-") {
			names = append(names, e.Name())
		}
	}
	if len(names) != 1 {
		t.Fatalf("state directory %s holds %v, want the runtime's one", state, names)
	}
	return names[0]
}

// runtimeCgroups are the existing groups of the runtime named name: in
// each hierarchy, coderun/<name>.
func runtimeCgroups(name string) []string {
	var out []string
	for _, parent := range cgroupParents() {
		if fi, err := os.Stat(filepath.Join(parent, name)); err == nil && fi.IsDir() {
			out = append(out, filepath.Join(parent, name))
		}
	}
	return out
}

func (h *harness) run(t *testing.T, req sandbox.Request) *sandbox.Result {
	t.Helper()
	res, err := h.rt.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Reason == sandbox.ReasonSetupError {
		t.Fatalf("setup error: %s", res.Error)
	}
	return res
}

var quick = sandbox.Limits{WallTime: 20 * time.Second, CPUTime: 20 * time.Second, Memory: 256 << 20, Processes: 32}

func py(code string) sandbox.Request {
	return sandbox.Request{Language: sandbox.Python, Code: code, Limits: quick}
}

// ---- the shared suite ---------------------------------------------------------

// TestSuite runs the conformance and security suite against the runtime
// without a pool: every run starts a sandbox from scratch.
func TestSuite(t *testing.T) {
	runSuite(t, linux.Options{})
}

// TestSuitePooled runs the suite against the runtime with a pool of two
// pre-started Python sandboxes: most Python runs are served from it.
func TestSuitePooled(t *testing.T) {
	runSuite(t, linux.Options{Pool: 2})
}

// TestSuiteZygote runs the suite with Python programs forked from the
// zygote into each sandbox, pooled and not.
func TestSuiteZygote(t *testing.T) {
	t.Run("Cold", func(t *testing.T) { runSuite(t, linux.Options{Zygote: true}) })
	t.Run("Pooled", func(t *testing.T) { runSuite(t, linux.Options{Zygote: true, Pool: 2}) })
}

// runSuite runs the shared suite; the runtime's state directory (where
// every sandbox's workspace is mounted on the host) and the default one
// are among the paths no sandbox may see.
func runSuite(t *testing.T, opts linux.Options) {
	requireHost(t)
	s := &sandboxtest.Suite{PrivatePaths: []string{"/run/coderun"}}
	var counted *countingRuntime
	s.NewRuntime = func(t *testing.T) sandbox.Runtime {
		h := newRuntime(t, opts)
		s.PrivatePaths = append(s.PrivatePaths, h.stateDir)
		counted = &countingRuntime{Runtime: h.rt}
		return counted
	}
	s.Run(t)
	runs, pooled := counted.runs.Load(), counted.pooled.Load()
	t.Logf("%d runs, %d served by the pool", runs, pooled)
	if opts.Pool > 0 && pooled == 0 {
		t.Errorf("with a pool of %d, no run of the suite was served by it", opts.Pool)
	}
	if opts.Pool == 0 && pooled > 0 {
		t.Errorf("without a pool, %d runs say Pooled", pooled)
	}
}

// countingRuntime counts the results that a pre-started sandbox served.
type countingRuntime struct {
	*linux.Runtime
	runs, pooled atomic.Int64
}

func (c *countingRuntime) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	res, err := c.Runtime.Run(ctx, req)
	if res != nil {
		c.runs.Add(1)
		if res.Pooled {
			c.pooled.Add(1)
		}
	}
	return res, err
}

// ---- what is specific to the linux runtime --------------------------------------

// runPooled runs req until a pre-started sandbox serves it (the pool
// refills in the background); every attempt's result goes to check.
func runPooled(t *testing.T, h *harness, req sandbox.Request, check func(*sandbox.Result)) *sandbox.Result {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		res := h.run(t, req)
		check(res)
		if res.Pooled {
			return res
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no run was served by the pool within 20 s")
	return nil
}

// TestPooledRunsAreIsolated: results served from the pool say so, and a
// pooled run sees nothing of the pooled run before it, although both
// interpreters were started before either request arrived.
func TestPooledRunsAreIsolated(t *testing.T) {
	t.Run("Init", func(t *testing.T) { pooledRunsAreIsolated(t, linux.Options{Pool: 2}) })
	t.Run("Zygote", func(t *testing.T) { pooledRunsAreIsolated(t, linux.Options{Pool: 2, Zygote: true}) })
}

func pooledRunsAreIsolated(t *testing.T, opts linux.Options) {
	h := newRuntime(t, opts)
	write := py(`import os, sys
for d in ["/work", "/tmp", "/dev/shm"]:
    open(d + "/pooled-state", "w").write("x")
os.environ["POOLED_LEFTOVER"] = "1"
sys.modules["json"] = None  # poison this interpreter's imports
open(os.path.expanduser("~/.pythonrc"), "w").write("x")
print("ok")
`)
	check := py(`import os, json
found = [os.path.join(r, f) for d in ["/work", "/tmp", "/dev/shm"] for r, ds, fs in os.walk(d) for f in fs + ds]
print(json.dumps({"found": found, "env": os.environ.get("POOLED_LEFTOVER")}))
`)
	for round := range 3 {
		runPooled(t, h, write, func(res *sandbox.Result) {
			if !res.OK() || res.Stdout != "ok\n" {
				t.Fatalf("writer: %+v", res)
			}
		})
		runPooled(t, h, check, func(res *sandbox.Result) {
			if !res.OK() || res.Stdout != `{"found": [], "env": null}`+"\n" {
				t.Errorf("round %d (pooled=%v): a run saw state from an earlier one: %q %s", round, res.Pooled, res.Stdout, res.Stderr)
			}
		})
	}
}

// TestPoolColdStarts: requests the pool cannot serve start a sandbox of
// their own and say Pooled=false: another language, and a variable that
// only takes effect when the interpreter starts (which must take effect).
func TestPoolColdStarts(t *testing.T) {
	h := newRuntime(t, linux.Options{Pool: 1})
	time.Sleep(200 * time.Millisecond)
	res := h.run(t, sandbox.Request{Language: sandbox.Bash, Code: "echo hi", Limits: quick})
	if !res.OK() || res.Pooled {
		t.Errorf("bash with a Python pool: pooled=%v %+v", res.Pooled, res)
	}
	req := py("import mod; print(mod.X)")
	req.Env = map[string]string{"PYTHONPATH": "/work/lib"}
	req.Files = []sandbox.File{{Path: "lib/mod.py", Content: []byte("X = 'from PYTHONPATH'\n")}}
	res = h.run(t, req)
	if !res.OK() || res.Pooled || res.Stdout != "from PYTHONPATH\n" {
		t.Errorf("PYTHONPATH request: pooled=%v stdout=%q stderr=%q; want a cold start that honours it", res.Pooled, res.Stdout, res.Stderr)
	}
}

// TestCloseCleansUp: after runs that ended every way (and with sandboxes
// still waiting in the pool), Close leaves no mount under the state
// directory, no cgroup, no state files; Run then fails with ErrClosed.
func TestCloseCleansUp(t *testing.T) {
	t.Run("Init", func(t *testing.T) { closeCleansUp(t, linux.Options{Pool: 2}) })
	t.Run("Zygote", func(t *testing.T) { closeCleansUp(t, linux.Options{Pool: 2, Zygote: true}) })
}

func closeCleansUp(t *testing.T, opts linux.Options) {
	h := newRuntime(t, opts)
	var wg sync.WaitGroup
	for _, c := range []struct {
		code string
		lim  sandbox.Limits
	}{
		{"print(1)", quick},
		{"import time; time.sleep(60)", sandbox.Limits{WallTime: 300 * time.Millisecond}},
		{"x = []\nwhile True: x.append(b'x' * (1 << 20))", sandbox.Limits{Memory: 32 << 20}},
		{"while True: print('y' * 1000)", sandbox.Limits{OutputBytes: 1000}},
		{"import os\nwhile True: os.fork()", sandbox.Limits{Processes: 8, WallTime: 500 * time.Millisecond}},
	} {
		for _, lang := range []sandbox.Language{sandbox.Python, sandbox.Python, sandbox.Bash} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := sandbox.Request{Language: lang, Code: c.code, Limits: c.lim}
				if lang == sandbox.Bash {
					req.Code = "echo bash"
				}
				if _, err := h.rt.Run(context.Background(), req); err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond) // let the pool refill
	if err := h.close(t); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(h.boxes.stop()); n < 15 {
		t.Errorf("watched only %d sandboxes being created for 15 runs", n)
	}
	_, err := h.rt.Run(context.Background(), py("print(1)"))
	if !errors.Is(err, linux.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	if err := h.rt.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestCloseDuringRun: a run in progress when the runtime closes is stopped
// and reported as killed (sandbox.ReasonKilled: "context cancelled or
// runtime closed"), and Close returns promptly.
func TestCloseDuringRun(t *testing.T) {
	h := newRuntime(t, linux.Options{})
	req := py("import time; time.sleep(60)")
	req.Limits.WallTime = 3 * time.Second
	done := make(chan *sandbox.Result, 1)
	go func() {
		res, _ := h.rt.Run(context.Background(), req)
		done <- res
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := h.close(t); err != nil {
		t.Errorf("Close: %v", err)
	}
	closeTook := time.Since(start)
	res := <-done
	if res == nil || res.Reason != sandbox.ReasonKilled || closeTook > 2*time.Second {
		reason := sandbox.Reason("none")
		if res != nil {
			reason = res.Reason
		}
		t.Errorf("Close took %v and the in-flight run ended as %q; want it killed promptly", closeTook, reason)
	}
}

// TestProbe: the report names every layer once, marks the required ones,
// finds them all on a host that passed requireHost, and Require refuses
// to waive what cannot be waived.
func TestProbe(t *testing.T) {
	requireHost(t)
	r := linux.Probe()
	want := map[string]bool{ // layer → required
		linux.LayerRoot: true, linux.LayerUserNS: true, linux.LayerPIDNS: true, linux.LayerNetNS: true,
		linux.LayerMountNS: true, linux.LayerIPCNS: true, linux.LayerUTSNS: true, linux.LayerCgroupNS: true,
		linux.LayerMountSetattr: true, linux.LayerSeccomp: true, linux.LayerCgroup: true, linux.LayerLandlock: false,
		linux.LayerTimeNS: false,
	}
	seen := map[string]bool{}
	for _, l := range r.Layers {
		if seen[l.Name] {
			t.Errorf("layer %s reported twice", l.Name)
		}
		seen[l.Name] = true
		req, ok := want[l.Name]
		if !ok {
			t.Errorf("unexpected layer %q", l.Name)
			continue
		}
		if l.Required != req {
			t.Errorf("layer %s: required=%v, want %v", l.Name, l.Required, req)
		}
		if l.Required && !l.Available {
			t.Errorf("layer %s unavailable on a host that passed Require: %s", l.Name, l.Detail)
		}
		if l.Detail == "" {
			t.Errorf("layer %s has no detail", l.Name)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("layer %s missing from the report", name)
		}
	}
	if err := r.Require(nil); err != nil {
		t.Errorf("Require(nil): %v", err)
	}
	if err := r.Require([]string{linux.LayerSeccomp, linux.LayerCgroup}); err != nil {
		t.Errorf("waiving the waivable layers: %v", err)
	}
	for _, l := range []string{linux.LayerUserNS, linux.LayerNetNS, "no-such-layer"} {
		if err := r.Require([]string{l}); err == nil {
			t.Errorf("Require accepted waiving %q", l)
		}
	}
	if _, err := linux.New(linux.Options{AllowWeaker: []string{linux.LayerPIDNS}}); err == nil {
		t.Errorf("New accepted waiving the PID namespace")
	}
}

// TestHostViewOfSandbox checks a running sandbox from the host: its
// program runs under an unprivileged host uid of its own (distinct for
// concurrent sandboxes), with no capabilities, no_new_privs and a seccomp
// filter, in user, PID, network, mount, IPC, UTS and cgroup namespaces of
// its own, inside a cgroup of the runtime.
func TestHostViewOfSandbox(t *testing.T) {
	t.Run("Init", func(t *testing.T) { hostView(t, false) })
	// The zygote's programs are forked from a process that is root on the
	// host: seen from the host, they must be as unprivileged as the others.
	t.Run("Zygote", func(t *testing.T) { hostView(t, true) })
}

func hostView(t *testing.T, zygote bool) {
	const uidBase = 1_000_000
	h := newRuntime(t, linux.Options{UIDBase: uidBase, Zygote: zygote})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	markers := []string{"coderun-hostview-a-" + strconv.Itoa(os.Getpid()), "coderun-hostview-b-" + strconv.Itoa(os.Getpid())}
	var wg sync.WaitGroup
	for _, m := range markers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: fmt.Sprintf("import os\nos.execv('/usr/bin/sleep', [%q, '60'])", m), Limits: quick})
			if err != nil || res.Reason != sandbox.ReasonKilled {
				t.Errorf("sandbox %s: %v %+v", m, err, res)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	uids := map[string]bool{}
	for _, m := range markers {
		pid := waitPID(t, m)
		status := readStatus(t, pid)
		for _, k := range []string{"Uid", "Gid"} {
			for _, v := range strings.Fields(status[k]) {
				if id, _ := strconv.Atoi(v); id < uidBase {
					t.Errorf("%s: host %s %v is not an unprivileged sandbox id (≥ %d)", m, k, status[k], uidBase)
				}
			}
		}
		uids[status["Uid"]] = true
		for k, v := range map[string]string{"CapEff": "0000000000000000", "CapPrm": "0000000000000000",
			"CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
			if status[k] != v {
				t.Errorf("%s: %s = %q, want %q", m, k, status[k], v)
			}
		}
		for _, ns := range []string{"user", "pid", "net", "mnt", "ipc", "uts", "cgroup"} {
			mine, _ := os.Readlink("/proc/self/ns/" + ns)
			theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
			if err != nil || mine == theirs {
				t.Errorf("%s: %s namespace %q (err %v) is the host's %q", m, ns, theirs, err, mine)
			}
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if !strings.Contains(string(cg), "/coderun/") {
			t.Errorf("%s: not in a coderun cgroup:\n%s", m, cg)
		}
		if zygote {
			// The zygote's fork that is the sandbox's PID 1 set it all up as
			// host root; once the program is ready it must be root no more.
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			ppid, _ := strconv.Atoi(strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[1])
			init := readStatus(t, ppid)
			if id, _ := strconv.Atoi(strings.Fields(init["Uid"])[0]); id < uidBase {
				t.Errorf("%s: its init (host pid %d) runs as host uid %s", m, ppid, init["Uid"])
			}
			for k, v := range map[string]string{"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "NoNewPrivs": "1"} {
				if init[k] != v {
					t.Errorf("%s: its init's %s = %q, want %q", m, k, init[k], v)
				}
			}
		}
	}
	if len(uids) != len(markers) {
		t.Errorf("concurrent sandboxes share a host uid: %v", uids)
	}
}

func waitPID(t *testing.T, marker string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.HasPrefix(cmd, []byte(marker)) {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no host process %s appeared", marker)
	return 0
}

func readStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestMountTable pins the sandbox's file system down to its design
// (mount.go): exactly these mount points, only the workspace, /tmp,
// /dev/shm, procfs and the device nodes writable, and no /sys.
func TestMountTable(t *testing.T) {
	t.Run("Init", func(t *testing.T) { mountTable(t, linux.Options{}) })
	// The zygote's sandboxes are copies of a template root, with /proc and
	// the workspace mounted by the zygote's fork: the same table.
	t.Run("Zygote", func(t *testing.T) { mountTable(t, linux.Options{Zygote: true}) })
}

func mountTable(t *testing.T, opts linux.Options) {
	h := newRuntime(t, opts)
	res := h.run(t, py(`import os, json
print(json.dumps({"mounts": open("/proc/self/mountinfo").read(), "sys": os.path.exists("/sys")}))`))
	if !res.OK() {
		t.Fatalf("%+v", res)
	}
	var got struct {
		Mounts string
		Sys    bool
	}
	if err := jsonUnmarshal(res.Stdout, &got); err != nil {
		t.Fatal(err)
	}
	if got.Sys {
		t.Errorf("/sys exists in the sandbox")
	}
	writable := map[string]bool{"/work": true, "/tmp": true, "/dev/shm": true, "/proc": true,
		"/dev/null": true, "/dev/zero": true, "/dev/full": true, "/dev/random": true, "/dev/urandom": true}
	masked := map[string]bool{}
	for _, n := range []string{"cmdline", "kcore", "keys", "key-users", "timer_list", "sched_debug", "kallsyms", "kpagecount", "kpageflags", "kpagecgroup", "sysrq-trigger"} {
		masked["/proc/"+n] = true
	}
	allowed := func(mp string) bool {
		switch {
		case writable[mp], masked[mp], mp == "/", mp == "/usr", mp == "/dev":
			return true
		case mp == "/proc/sys/kernel/random/boot_id":
			return true // the sandbox's own boot id (mount.go)
		case strings.HasPrefix(mp, "/etc/") && strings.Count(mp, "/") == 2:
			return true // read-only binds of /etc directories
		case mp == "/proc/sys" || mp == "/proc/irq" || mp == "/proc/bus" || mp == "/proc/fs" || mp == "/proc/acpi" || mp == "/proc/scsi":
			return true
		case mp == "/bin" || mp == "/sbin" || strings.HasPrefix(mp, "/lib"):
			return true // non-merged-/usr systems
		}
		return false
	}
	for _, line := range strings.Split(strings.TrimSpace(got.Mounts), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		mp, opts := unescapeMount(f[4]), strings.Split(f[5], ",")
		if !allowed(mp) {
			t.Errorf("unexpected mount point %s: %s", mp, line)
		}
		rw := opts[0] == "rw"
		if rw && !writable[mp] && !masked[mp] {
			t.Errorf("%s is mounted writable: %s", mp, line)
		}
		if !rw && (mp == "/work" || mp == "/tmp" || mp == "/dev/shm") {
			t.Errorf("%s is not writable: %s", mp, line)
		}
		if mp != "/proc" && !strings.HasPrefix(mp, "/proc/") && !strings.Contains(f[5], "nosuid") {
			t.Errorf("%s lacks nosuid: %s", mp, line)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestZygoteKeepsNothingOfARun: every sandbox's program is a fork of the
// zygote, so whatever a request hands the zygote stays in the memory every
// later program starts with. A run's environment (where API keys go) must
// therefore reach its program with its code, never through the zygote: a
// later run that scans all of its own memory finds no trace of it.
func TestZygoteKeepsNothingOfARun(t *testing.T) {
	h := newRuntime(t, linux.Options{Zygote: true})
	secret := fmt.Sprintf("%x", time.Now().UnixNano()) + "feedc0de"
	first := py("import os; print(len(os.environ['TOKEN']))")
	first.Env = map[string]string{"TOKEN": "CODERUN_LEAK_" + secret}
	if res := h.run(t, first); !res.OK() || res.Stdout != fmt.Sprintf("%d\n", len("CODERUN_LEAK_")+len(secret)) {
		t.Fatalf("first run: %+v", res)
	}
	res := h.run(t, py(`import re
found = set()
pattern = re.compile(rb"CODERUN_LEAK_([0-9a-f]{8,40})")
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        f = line.split()
        if "r" not in f[1] or (len(f) > 5 and f[5].startswith("[v")):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        found.update(m.group(1).decode() for m in pattern.finditer(data))
print(sorted(found))`))
	if !res.OK() {
		t.Fatalf("scan: %+v", res)
	}
	if strings.Contains(res.Stdout, secret) {
		t.Errorf("a later run found the earlier run's environment in its memory: %s", res.Stdout)
	}
}

// TestZygoteRestarts: when the zygote dies (killed from outside), the
// sandboxes it was serving end with an error, not a hang, and the next runs
// get a new zygote.
func TestZygoteRestarts(t *testing.T) {
	t.Run("Cold", func(t *testing.T) { zygoteRestarts(t, linux.Options{Zygote: true}) })
	// The pool's sandboxes die with the zygote: runs must not get them.
	t.Run("Pooled", func(t *testing.T) { zygoteRestarts(t, linux.Options{Zygote: true, Pool: 2}) })
}

func zygoteRestarts(t *testing.T, opts linux.Options) {
	h := newRuntime(t, opts)
	if res := h.run(t, py("print(1)")); !res.OK() {
		t.Fatalf("first run: %+v", res)
	}
	zygote := findZygote(t)
	done := make(chan *sandbox.Result, 1)
	go func() {
		res, _ := h.rt.Run(context.Background(), py("import time; time.sleep(30)"))
		done <- res
	}()
	time.Sleep(500 * time.Millisecond)
	if err := unix.Kill(zygote, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res == nil || res.OK() {
			t.Errorf("a run whose zygote died: %+v, want a failure", res)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a run whose zygote died did not end")
	}
	// The runtime learns of the death from the zygote's exit, a moment
	// after the kernel has begun to kill the sandboxes it made; from then
	// on, the pool's sandboxes of that zygote are dropped, not used.
	time.Sleep(100 * time.Millisecond)
	for i := range 4 {
		if res := h.run(t, py("print(2)")); !res.OK() || res.Stdout != "2\n" {
			t.Fatalf("run %d after the zygote died: %+v", i, res)
		}
	}
	if again := findZygote(t); again == zygote {
		t.Errorf("the zygote (pid %d) was not replaced", zygote)
	}
}

// findZygote returns the pid of this process's zygote (its child).
func findZygote(t *testing.T) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmd, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || err2 != nil || !bytes.Contains(cmd, []byte("coderun's Python zygote")) {
			continue
		}
		// Field 4, after the parenthesised command: the parent's pid.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	t.Fatal("no zygote among this process's children")
	return 0
}

// TestOOMSparesInit: memory that belongs to no process (files in the
// workspace's tmpfs count against the memory limit) leaves the kernel's
// OOM killer to pick by size, and the sandbox's init must never be its
// pick: the program is killed, init reports it, the run ends as
// memory_limit.
func TestOOMSparesInit(t *testing.T) {
	for _, c := range []struct {
		name string
		opts linux.Options
	}{{"Init", linux.Options{}}, {"Zygote", linux.Options{Zygote: true}}} {
		t.Run(c.name, func(t *testing.T) {
			h := newRuntime(t, c.opts)
			for range 3 {
				req := py(`f = open("/dev/shm/fill", "wb")
for i in range(400):
    f.write(b"x" * (1 << 20))
print("survived")`)
				req.Limits = sandbox.Limits{WallTime: 20 * time.Second, CPUTime: 20 * time.Second, Memory: 48 << 20,
					Processes: 32, WorkspaceBytes: 512 << 20}
				res := h.run(t, req)
				if res.Reason != sandbox.ReasonMemoryLimit || strings.Contains(res.Error, "init ended") {
					t.Errorf("want memory_limit reported by init: %s %s %q", res.Reason, res.Signal, res.Error)
				}
			}
		})
	}
}

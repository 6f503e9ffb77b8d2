//go:build linux

package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// interactive checks the contract of sandbox.Interactive, the long-lived
// sandboxes sessions use: programs started one at a time in one workspace,
// talked to over their pipes, signalled, restarted, bounded by the
// sandbox's limits, and sandboxes kept apart from each other.
func (h *harness) interactive(t *testing.T) {
	irt, ok := h.rt.(sandbox.Interactive)
	if !ok {
		t.Skipf("runtime %s does not implement sandbox.Interactive: no long-lived sandboxes to check", h.rt.Name())
	}
	l := &longLived{h: h, rt: irt}
	h.runAll(t, []scenario{
		{"Conversation", l.conversation},
		{"EndsOnItsOwn", l.endsOnItsOwn},
		{"OneProgramAtATime", l.oneProgramAtATime},
		{"Signals", l.signals},
		{"Kill", l.kill},
		{"WaitCancelled", l.waitCancelled},
		{"Restart", l.restart},
		{"Close", l.close},
		{"MemoryLimit", l.memoryLimit},
		{"ProcessLimit", l.processLimit},
		{"WallLimit", l.wallLimit},
		{"CPULimit", l.cpuLimit},
		{"OutputBackpressure", l.outputBackpressure},
		{"FilesWhileRunning", l.filesWhileRunning},
		{"Isolation", l.isolation},
		{"AwaitingInput", l.awaitingInput},
		{"CPUTime", l.cpuTime},
		{"Archive", l.archive},
		{"HostilePaths", l.hostilePaths}, // interactive_hostile.go
		{"SwappedLinks", l.swappedLinks},
		{"Uptime", l.uptime},
		{"ClosedSandboxFiles", l.closedSandboxFiles},
	})
}

// longLived is what the long-lived scenarios share.
type longLived struct {
	h  *harness
	rt sandbox.Interactive
}

// liveLimits are the limits of the scenarios' sandboxes: quick's, with no
// wall or CPU bound on a program (a session's interpreter lives long).
var liveLimits = sandbox.Limits{
	Memory:         quick.Memory,
	Processes:      quick.Processes,
	OutputBytes:    quick.OutputBytes,
	WorkspaceBytes: quick.WorkspaceBytes,
	OpenFiles:      quick.OpenFiles,
}

// newSandbox creates a sandbox that the test closes when it ends.
func (l *longLived) newSandbox(t *testing.T, spec sandbox.Spec) sandbox.Sandbox {
	t.Helper()
	if spec.Limits == (sandbox.Limits{}) {
		spec.Limits = liveLimits
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := l.rt.NewSandbox(ctx, spec)
	if err != nil {
		t.Fatalf("NewSandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb
}

// live is a program running in a sandbox, as a test talks to it: its
// stdout read line by line, its stderr gathered in the background.
type live struct {
	t      *testing.T
	p      sandbox.Process
	out    *bufio.Reader
	stderr *lockedBuffer
	errEOF chan struct{}
}

// start starts prog in sb; the test kills it when it ends.
func start(t *testing.T, sb sandbox.Sandbox, prog sandbox.Program) *live {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := sb.Start(ctx, prog)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	lp := &live{t: t, p: p, out: bufio.NewReader(p.Stdout()), stderr: &lockedBuffer{}, errEOF: make(chan struct{})}
	go func() {
		_, _ = io.Copy(lp.stderr, p.Stderr())
		close(lp.errEOF)
	}()
	t.Cleanup(func() {
		p.Kill()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p.Wait(ctx)
	})
	return lp
}

// pyProg and shProg are programs in Python and bash.
func pyProg(code string) sandbox.Program {
	return sandbox.Program{Language: sandbox.Python, Code: code}
}

func shProg(code string) sandbox.Program { return sandbox.Program{Language: sandbox.Bash, Code: code} }

// line reads the program's next line of stdout; a program that says
// nothing for 30 s is killed and the test fails.
func (lp *live) line() string {
	lp.t.Helper()
	type read struct {
		s   string
		err error
	}
	ch := make(chan read, 1)
	go func() {
		s, err := lp.out.ReadString('\n')
		ch <- read{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.s == "" {
			lp.t.Fatalf("the program's stdout ended (%v) where a line was expected; stderr:\n%s", r.err, lp.stderr)
		}
		return r.s
	case <-time.After(30 * time.Second):
		lp.p.Kill()
		lp.t.Fatalf("no line from the program in 30 s; stderr:\n%s", lp.stderr)
		return ""
	}
}

// expect reads a line and fails the test unless it is want (plus "\n").
func (lp *live) expect(want string) {
	lp.t.Helper()
	if got := lp.line(); got != want+"\n" {
		lp.t.Fatalf("the program said %q, want %q; stderr:\n%s", got, want, lp.stderr)
	}
}

// send writes s to the program's stdin.
func (lp *live) send(s string) {
	lp.t.Helper()
	if _, err := io.WriteString(lp.p.Stdin(), s); err != nil {
		lp.t.Fatalf("write to the program's stdin: %v", err)
	}
}

// wait waits (at most a minute) for the program to end.
func (lp *live) wait() *sandbox.Result {
	lp.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := lp.p.Wait(ctx)
	if res == nil {
		lp.t.Fatal("Wait returned no result")
	}
	return res
}

// rest reads the program's stdout to its end (within 30 s) and its stderr.
func (lp *live) rest() (stdout, stderr string) {
	lp.t.Helper()
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(lp.out)
		done <- b
	}()
	select {
	case b := <-done:
		stdout = string(b)
	case <-time.After(30 * time.Second):
		lp.t.Fatal("the program's stdout did not end within 30 s")
	}
	select {
	case <-lp.errEOF:
	case <-time.After(30 * time.Second):
		lp.t.Fatal("the program's stderr did not end within 30 s")
	}
	return stdout, lp.stderr.String()
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// liveDescribe is a long-lived program's outcome, for failure messages.
func liveDescribe(res *sandbox.Result) string {
	return fmt.Sprintf("reason=%s exit=%d signal=%q error=%q", res.Reason, res.ExitCode, res.Signal, res.Error)
}

// conversation: the caller and a running program talk over its pipes,
// line by line, stdout and stderr apart; closing stdin ends it normally.
func (l *longLived) conversation(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{Files: []sandbox.File{{Path: "seed.txt", Content: []byte("seed")}}})
	lp := start(t, sb, pyProg(`import sys
for line in sys.stdin:
    print("got", line.strip(), open("seed.txt").read(), flush=True)
    print("err", line.strip(), file=sys.stderr, flush=True)
print("bye", flush=True)
`))
	for _, word := range []string{"hello", "world"} {
		lp.send(word + "\n")
		lp.expect("got " + word + " seed")
	}
	if err := lp.p.Stdin().Close(); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	res := lp.wait()
	stdout, stderr := lp.rest()
	if !res.OK() {
		t.Fatalf("closing its stdin should end the program normally: %s\nstderr:\n%s", liveDescribe(res), stderr)
	}
	if stdout != "bye\n" || stderr != "err hello\nerr world\n" {
		t.Errorf("stdout %q (want \"bye\\n\"), stderr %q", stdout, stderr)
	}
	if res.Stdout != "" || res.Stderr != "" || len(res.Files) != 0 {
		t.Errorf("Wait's result carries output or files (%q, %q, %v); they belong to the pipes and Files", res.Stdout, res.Stderr, res.Files)
	}
}

// endsOnItsOwn: a program that ends by itself reports its exit code, and
// what it wrote just before is still read after Wait has returned.
func (l *longLived) endsOnItsOwn(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	for _, tc := range []struct {
		prog sandbox.Program
		code int
	}{
		{pyProg("import sys\nprint('last words')\nprint('on stderr', file=sys.stderr)\nsys.exit(3)"), 3},
		{shProg("echo 'last words'; echo 'on stderr' >&2; exit 0"), 0},
	} {
		lp := start(t, sb, tc.prog)
		res := lp.wait()
		stdout, stderr := lp.rest()
		if res.Reason != sandbox.ReasonExited || res.ExitCode != tc.code || res.Signal != "" {
			t.Errorf("%s: want exited with %d: %s", tc.prog.Language, tc.code, liveDescribe(res))
		}
		if stdout != "last words\n" || stderr != "on stderr\n" {
			t.Errorf("%s: after Wait, stdout %q and stderr %q; want what the program wrote", tc.prog.Language, stdout, stderr)
		}
		if res.Usage.Wall <= 0 {
			t.Errorf("%s: no wall time in the usage: %+v", tc.prog.Language, res.Usage)
		}
		if res.Runtime != l.h.rt.Name() {
			t.Errorf("Result.Runtime = %q, want %q", res.Runtime, l.h.rt.Name())
		}
	}
}

// oneProgramAtATime: Start refuses while a program runs, and works again
// once it has ended.
func (l *longLived) oneProgramAtATime(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	lp := start(t, sb, pyProg("import sys\nprint('up', flush=True)\nsys.stdin.read()"))
	lp.expect("up")
	if p, err := sb.Start(context.Background(), shProg("true")); err == nil {
		p.Kill()
		p.Wait(context.Background())
		t.Fatal("a second program started while the first was running")
	}
	lp.p.Stdin().Close()
	if res := lp.wait(); !res.OK() {
		t.Fatalf("first program: %s", liveDescribe(res))
	}
	lp2 := start(t, sb, shProg("echo second"))
	lp2.expect("second")
	if res := lp2.wait(); !res.OK() {
		t.Fatalf("second program: %s", liveDescribe(res))
	}
}

// signals: SIGINT reaches the running program (as Ctrl-C would), as often
// as it is sent; SIGKILL ends it, reported as the program's own end by
// that signal (reason exited, signal SIGKILL: Kill is what says killed); and a
// program that has ended cannot be signalled.
func (l *longLived) signals(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	lp := start(t, sb, pyProg(`import os, signal, time
def onint(*a):
    os.write(1, b"interrupted\n")
signal.signal(signal.SIGINT, onint)
print("ready", flush=True)
while True:
    time.sleep(0.05)
`))
	lp.expect("ready")
	for range 2 {
		if err := lp.p.Signal(syscall.SIGINT); err != nil {
			t.Fatalf("Signal(SIGINT): %v", err)
		}
		lp.expect("interrupted")
	}
	if err := lp.p.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal(SIGKILL): %v", err)
	}
	res := lp.wait()
	if res.Signal != "SIGKILL" || res.ExitCode != -1 || res.Reason != sandbox.ReasonExited {
		t.Errorf("after Signal(SIGKILL): want reason exited by signal SIGKILL, exit code -1: %s", liveDescribe(res))
	}
	if err := lp.p.Signal(syscall.SIGINT); err == nil {
		t.Error("Signal on a program that has ended returned no error")
	}
}

// kill: Kill stops the program and every process it started, at once; the
// result says it was killed.
func (l *longLived) kill(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	marker := "coderun-live-kill-" + randomHex(6)
	lp := start(t, sb, shProg(fmt.Sprintf("(exec -a %s sleep 1000) & echo started; exec -a %s sleep 1000", marker, marker)))
	lp.expect("started")
	waitHostPID(marker, 5*time.Second)
	begin := time.Now()
	lp.p.Kill()
	res := lp.wait()
	if res.Reason != sandbox.ReasonKilled {
		t.Errorf("after Kill: want reason killed: %s", liveDescribe(res))
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("Wait took %v to return after Kill", d)
	}
	requireNoSurvivors(t, marker, "a killed program")
}

// waitCancelled: Wait with a context that ends kills the program and every
// process it made, and says so.
func (l *longLived) waitCancelled(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	marker := "coderun-live-cancel-" + randomHex(6)
	lp := start(t, sb, shProg(fmt.Sprintf("(exec -a %s sleep 1000) & exec -a %s sleep 1000", marker, marker)))
	waitHostPID(marker, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res := lp.p.Wait(ctx)
	if res.Reason != sandbox.ReasonKilled {
		t.Errorf("Wait with a context that ended: want reason killed: %s", liveDescribe(res))
	}
	requireNoSurvivors(t, marker, "a program whose Wait was cancelled")
}

// restart: a new program in the same sandbox sees the workspace (/work,
// /tmp, /dev/shm) as the last one left it, and none of its processes.
func (l *longLived) restart(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{Files: []sandbox.File{{Path: "in.txt", Content: []byte("given")}}})
	marker := "coderun-live-restart-" + randomHex(6)
	lp := start(t, sb, shProg(fmt.Sprintf(`echo first > /work/out.txt; echo tmp > /tmp/t.txt; echo shm > /dev/shm/s.txt
mkdir -p /work/dir && echo nested > /work/dir/n.txt
(exec -a %s sleep 1000) &
echo done`, marker)))
	lp.expect("done")
	if res := lp.wait(); !res.OK() {
		t.Fatalf("first program: %s", liveDescribe(res))
	}
	requireNoSurvivors(t, marker, "a process the first program left in the background")
	lp = start(t, sb, pyProg(fmt.Sprintf(`import os
for p in ["/work/in.txt", "/work/out.txt", "/work/dir/n.txt", "/tmp/t.txt", "/dev/shm/s.txt"]:
    print(p, open(p).read().strip())
seen = 0
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            seen += %q.encode() in open("/proc/%%s/cmdline" %% pid, "rb").read()
        except OSError:
            pass
print("processes of the first program:", seen)
`, marker)))
	for _, want := range []string{"/work/in.txt given", "/work/out.txt first", "/work/dir/n.txt nested", "/tmp/t.txt tmp",
		"/dev/shm/s.txt shm", "processes of the first program: 0"} {
		lp.expect(want)
	}
	if res := lp.wait(); !res.OK() {
		t.Fatalf("second program: %s\n%s", liveDescribe(res), lp.stderr)
	}
}

// close: Close ends the running program and every process of it, and
// later calls on the sandbox fail with an error instead of acting.
func (l *longLived) close(t *testing.T) {
	ctx := context.Background()
	sb, err := l.rt.NewSandbox(ctx, sandbox.Spec{Limits: liveLimits, Files: []sandbox.File{{Path: "a.txt", Content: []byte("a")}}})
	if err != nil {
		t.Fatal(err)
	}
	marker := "coderun-live-close-" + randomHex(6)
	lp := start(t, sb, shProg(fmt.Sprintf("(exec -a %s sleep 1000) & echo started; exec -a %s sleep 1000", marker, marker)))
	lp.expect("started")
	waitHostPID(marker, 5*time.Second)
	closed := make(chan error, 1)
	go func() { closed <- sb.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s with a program running")
	}
	res := lp.wait()
	if res.Reason != sandbox.ReasonKilled {
		t.Errorf("a program running when its sandbox closed: want reason killed: %s", liveDescribe(res))
	}
	requireNoSurvivors(t, marker, "a program whose sandbox was closed")
	if p, err := sb.Start(ctx, shProg("echo alive")); err == nil {
		p.Kill()
		p.Wait(ctx)
		t.Error("Start after Close started a program")
	}
	if err := sb.WriteFile("b.txt", []byte("b"), 0o644); err == nil {
		t.Error("WriteFile after Close succeeded")
	}
	if data, _, err := sb.ReadFile("a.txt", 100); err == nil {
		t.Errorf("ReadFile after Close read %q", data)
	}
	if files, _, err := sb.Files(); err == nil {
		t.Errorf("Files after Close listed %v", files)
	}
	_ = sb.Close() // a second Close may report an error, but must not panic or hang
}

// memoryLimit: the sandbox's memory limit bounds its program, which is
// reported as stopped by it; the sandbox then runs the next program.
func (l *longLived) memoryLimit(t *testing.T) {
	lim := liveLimits
	lim.Memory = 64 << 20
	sb := l.newSandbox(t, sandbox.Spec{Limits: lim})
	lp := start(t, sb, pyProg("x = []\nwhile True: x.append(b'm' * (1 << 20))"))
	res := lp.wait()
	if res.Reason != sandbox.ReasonMemoryLimit {
		t.Errorf("want memory_limit: %s\n%s", liveDescribe(res), lp.stderr)
	}
	lp = start(t, sb, pyProg("print('after')"))
	lp.expect("after")
	if res := lp.wait(); !res.OK() {
		t.Errorf("the program after an OOM kill: %s", liveDescribe(res))
	}
}

// processLimit: the sandbox's process limit bounds how many processes its
// program has at once, and none of them outlives the program.
func (l *longLived) processLimit(t *testing.T) {
	lim := liveLimits
	lim.Processes = 16
	sb := l.newSandbox(t, sandbox.Spec{Limits: lim})
	marker := "coderun-live-procs-" + randomHex(6)
	lp := start(t, sb, pyProg(fmt.Sprintf(`import os
made = 0
for i in range(64):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        try:
            os.execv("/bin/sleep", [%q, "1000"])
        finally:
            os._exit(1)
    made += 1
print("made", made, flush=True)
`, marker)))
	var made int
	if _, err := fmt.Sscanf(lp.line(), "made %d", &made); err != nil {
		t.Fatalf("the program did not say how many processes it made: %v", err)
	}
	if made >= lim.Processes || made == 0 {
		t.Errorf("the program made %d processes under a limit of %d", made, lim.Processes)
	}
	lp.wait()
	requireNoSurvivors(t, marker, "a process of a program that ended")
}

// wallLimit: a sandbox's wall-time limit bounds each program from its own
// start: a slow one is stopped with reason timeout, and the next one gets
// the whole budget again.
func (l *longLived) wallLimit(t *testing.T) {
	lim := liveLimits
	lim.WallTime = time.Second
	sb := l.newSandbox(t, sandbox.Spec{Limits: lim})
	lp := start(t, sb, pyProg("import time; time.sleep(60)"))
	res := lp.wait()
	if res.Reason != sandbox.ReasonTimeout {
		t.Errorf("want timeout: %s", liveDescribe(res))
	}
	if res.Usage.Wall < lim.WallTime || res.Usage.Wall > 10*time.Second {
		t.Errorf("wall %v for a limit of %v", res.Usage.Wall, lim.WallTime)
	}
	for i := range 2 {
		lp = start(t, sb, pyProg("import time; time.sleep(0.6); print('slept')"))
		lp.expect("slept")
		if res := lp.wait(); !res.OK() {
			t.Errorf("program %d, within its own budget: %s", i+2, liveDescribe(res))
		}
	}
}

// cpuLimit: a sandbox's CPU-time limit bounds each program.
func (l *longLived) cpuLimit(t *testing.T) {
	lim := liveLimits
	lim.CPUTime = 700 * time.Millisecond
	sb := l.newSandbox(t, sandbox.Spec{Limits: lim})
	lp := start(t, sb, pyProg("while True: pass"))
	res := lp.wait()
	if res.Reason != sandbox.ReasonCPULimit {
		t.Errorf("want cpu_limit: %s", liveDescribe(res))
	}
}

// outputBackpressure: a long-lived program's output is not captured by the
// runtime (Limits.OutputBytes is the caller's to apply): it flows through
// the pipes, and a program whose reader does not read waits instead of
// making the host buffer without end.
func (l *longLived) outputBackpressure(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	lp := start(t, sb, pyProg(`import os
chunk = b"y" * 65536
n = 0
while True:
    os.write(1, chunk)
    n += len(chunk)
    with open("progress.tmp", "w") as f:
        f.write(str(n))
    os.replace("progress.tmp", "progress")
`))
	time.Sleep(1500 * time.Millisecond)
	data, _, err := sb.ReadFile("progress", 100)
	if err != nil {
		t.Fatalf("ReadFile(progress): %v (stderr: %s)", err, lp.stderr)
	}
	var written int64
	fmt.Sscan(string(data), &written)
	if written > 16<<20 {
		t.Errorf("with nobody reading, the program wrote %s to its stdout: the runtime buffers without bound",
			sandbox.FormatBytes(written))
	}
	// Reading lets it go on.
	if _, err := io.CopyN(io.Discard, lp.out, written+1<<20); err != nil {
		t.Fatalf("read its output: %v", err)
	}
	lp.p.Kill()
	lp.wait()
}

// filesWhileRunning: files go in and out of the workspace while a program
// runs; what comes out is a regular file's content, never a link followed
// or a FIFO opened, and never more than asked for.
func (l *longLived) filesWhileRunning(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	lp := start(t, sb, pyProg(`import os, sys
print("ready", flush=True)
sys.stdin.readline()
data = open("data/in.txt").read()
open("data/in.txt", "a").write("!")
open("out.txt", "w").write(data.upper())
os.symlink("/etc/passwd", "link")
os.mkfifo("fifo")
print("written", flush=True)
sys.stdin.readline()
`))
	lp.expect("ready")
	if err := sb.WriteFile("data/in.txt", []byte("hello"), 0o644); err != nil {
		t.Fatalf("WriteFile while the program runs: %v", err)
	}
	for _, bad := range []string{"../escape.txt", "/etc/escape.txt", ""} {
		if err := sb.WriteFile(bad, []byte("x"), 0o644); err == nil {
			t.Errorf("WriteFile(%q) was accepted", bad)
		}
	}
	lp.send("go\n")
	lp.expect("written")
	if data, truncated, err := sb.ReadFile("out.txt", 100); err != nil || truncated || string(data) != "HELLO" {
		t.Errorf("ReadFile(out.txt) = %q, %v, %v; want \"HELLO\"", data, truncated, err)
	}
	if data, _, err := sb.ReadFile("data/in.txt", 100); err != nil || string(data) != "hello!" {
		t.Errorf("ReadFile(data/in.txt) = %q, %v; want the program's append to the host's file", data, err)
	}
	if data, truncated, err := sb.ReadFile("out.txt", 2); err != nil || !truncated || string(data) != "HE" {
		t.Errorf("ReadFile(out.txt, 2) = %q, truncated=%v, %v; want \"HE\", truncated", data, truncated, err)
	}
	if data, _, err := sb.ReadFile("link", 1<<20); err == nil {
		t.Errorf("CONTAINMENT FAILURE: ReadFile followed a link to /etc/passwd out of the workspace: %q", clip(string(data), 200))
	}
	fifo := make(chan error, 1)
	go func() { _, _, err := sb.ReadFile("fifo", 100); fifo <- err }()
	select {
	case err := <-fifo:
		if err == nil {
			t.Error("ReadFile read a FIFO")
		}
	case <-time.After(10 * time.Second):
		t.Error("ReadFile blocked on a FIFO the program made")
	}
	for _, bad := range []string{"../etc/passwd", "/etc/passwd"} {
		if data, _, err := sb.ReadFile(bad, 100); err == nil {
			t.Errorf("ReadFile(%q) read %q", bad, clip(string(data), 100))
		}
	}
	files, truncated, err := sb.Files()
	if err != nil || truncated {
		t.Fatalf("Files: %v, truncated=%v", err, truncated)
	}
	kinds := map[string]sandbox.FileInfo{}
	for _, f := range files {
		kinds[f.Path] = f
	}
	for path, kind := range map[string]sandbox.FileKind{"data": sandbox.KindDir, "data/in.txt": sandbox.KindFile,
		"out.txt": sandbox.KindFile, "link": sandbox.KindSymlink, "fifo": sandbox.KindOther} {
		if f, ok := kinds[path]; !ok || f.Kind != kind {
			t.Errorf("Files: %s is %+v, want a %s", path, f, kind)
		}
	}
	if f := kinds["link"]; f.LinkTarget != "/etc/passwd" || len(f.Content) != 0 {
		t.Errorf("Files: the link is %+v, want its target and no content", f)
	}
	lp.send("end\n")
	if res := lp.wait(); !res.OK() {
		t.Errorf("%s\n%s", liveDescribe(res), lp.stderr)
	}
}

// isolation: two sandboxes alive at once see neither each other's files
// (/work, /tmp, /dev/shm) nor each other's processes.
func (l *longLived) isolation(t *testing.T) {
	a := l.newSandbox(t, sandbox.Spec{})
	b := l.newSandbox(t, sandbox.Spec{})
	if a.ID() == b.ID() {
		t.Errorf("two sandboxes share the ID %q", a.ID())
	}
	marker := "coderun-live-iso-" + randomHex(6)
	lpa := start(t, a, shProg(fmt.Sprintf(`for d in /work /tmp /dev/shm; do echo secret > $d/from-a.txt; done
echo ready; exec -a %s sleep 1000`, marker)))
	lpa.expect("ready")
	_, visible := waitHostPID(marker, 5*time.Second)
	lpb := start(t, b, pyProg(fmt.Sprintf(`import json, os, signal
seen = [os.path.join(d, f) for d in ["/work", "/tmp", "/dev/shm"] for f in os.listdir(d)]
procs, killed = [], []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            cmd = open("/proc/%%s/cmdline" %% pid, "rb").read()
        except OSError:
            continue
        if %q.encode() in cmd:
            procs.append(int(pid))
for pid in range(2, 200):
    try:
        os.kill(pid, signal.SIGKILL) if pid != os.getpid() else None
    except OSError:
        pass
for d in ["/work", "/tmp", "/dev/shm"]:
    open(d + "/from-b.txt", "w").write("b")
print("SEEN:" + json.dumps(seen))
print("PROCS:" + json.dumps(procs))
`, marker)))
	seen, procs := lpb.line(), lpb.line()
	if res := lpb.wait(); !res.OK() {
		t.Fatalf("the program in the second sandbox: %s\n%s", liveDescribe(res), lpb.stderr)
	}
	if seen != "SEEN:[]\n" {
		t.Errorf("CONTAINMENT FAILURE: a second sandbox saw files: %s", seen)
	}
	if procs != "PROCS:[]\n" {
		t.Errorf("CONTAINMENT FAILURE: a second sandbox saw the first one's program: %s", procs)
	}
	if data, _, err := b.ReadFile("from-a.txt", 100); err == nil {
		t.Errorf("the second sandbox's ReadFile read the first one's file: %q", data)
	}
	files, _, err := a.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f.Path, "from-b") {
			t.Errorf("CONTAINMENT FAILURE: the first sandbox's workspace holds %s, which the second wrote", f.Path)
		}
	}
	if visible && len(hostPIDsWith(marker)) == 0 {
		t.Error("CONTAINMENT FAILURE: the first sandbox's program is gone after the second one tried to kill every process it could")
	}
	lpa.p.Kill()
	if res := lpa.wait(); res.Reason != sandbox.ReasonKilled {
		t.Errorf("the first sandbox's program was not running until killed (the second one reached it?): %s", liveDescribe(res))
	}
	lpa2 := start(t, a, shProg("cat /work/from-a.txt /tmp/from-a.txt /dev/shm/from-a.txt; ls /work /tmp /dev/shm | grep -c from-b"))
	for _, want := range []string{"secret", "secret", "secret", "0"} {
		lpa2.expect(want)
	}
	lpa2.wait()
}

// awaitingInput: AwaitingInput is true only while the program is blocked
// reading its stdin: not while it computes, nor while it is blocked reading
// another pipe, whatever it writes; the program cannot write to its stdin
// to wake itself (on Linux it cannot open it for writing; gVisor opens it,
// on the pipe's read end, where a write fails); and a program that has
// ended reports an error.
func (l *longLived) awaitingInput(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	prog := pyProg(`import os
r, w = os.pipe()
try:
    open("/proc/self/fd/0", "wb", buffering=0).write(b"x")
    os.write(1, b"stdin writable\n")
except OSError as e:
    os.write(1, b"stdin not writable\n")
while True:
    cmd = os.read(0, 100).strip()
    os.write(1, cmd + b"\n")
    if cmd == b"other":
        os.read(r, 1)  # blocked, but not on stdin
    elif cmd == b"spin":
        while True:
            pass
`)
	lp := start(t, sb, prog)
	if _, err := lp.p.AwaitingInput(); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the runtime cannot observe a program awaiting input: %v", err)
	}
	lp.expect("stdin not writable")
	if !awaiting(t, lp.p, true) {
		t.Fatal("a program blocked reading its stdin is not seen awaiting input")
	}
	for _, cmd := range []string{"other", "spin"} {
		if cmd == "spin" {
			lp.p.Kill()
			lp.wait()
			lp = start(t, sb, prog)
			lp.expect("stdin not writable")
		}
		lp.send(cmd + "\n")
		lp.expect(cmd)
		for range 50 {
			if awaiting(t, lp.p, true) {
				t.Fatalf("%s: seen awaiting input", cmd)
			}
		}
	}
	lp.p.Kill()
	lp.wait()
	if _, err := lp.p.AwaitingInput(); err == nil {
		t.Fatal("AwaitingInput reported no error for a program that has ended")
	}
}

// cpuTime: a program's CPU time, as the host accounts it, grows while it
// computes, hardly at all while it waits, and counts its children.
func (l *longLived) cpuTime(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	lp := start(t, sb, pyProg(`import os, subprocess, sys, time
while True:
    cmd = os.read(0, 100).strip()
    if cmd == b"spin":
        end = time.process_time() + 0.4
        while time.process_time() < end:
            pass
    elif cmd == b"child":
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"])
    os.write(1, cmd + b" done\n")
`))
	cpu := func() time.Duration {
		t.Helper()
		d, err := lp.p.CPUTime()
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skipf("the runtime cannot measure a program's CPU time: %v", err)
		}
		if err != nil {
			t.Fatalf("CPUTime: %v", err)
		}
		return d
	}
	before := cpu()
	for _, cmd := range []string{"spin", "child"} {
		lp.send(cmd + "\n")
		lp.expect(cmd + " done")
		after := cpu()
		if after-before < 300*time.Millisecond {
			t.Errorf("%s: CPU time grew by %s for 0.4 s of computing", cmd, after-before)
		}
		before = after
	}
	time.Sleep(300 * time.Millisecond)
	if idle := cpu() - before; idle > 100*time.Millisecond {
		t.Errorf("CPU time grew by %s while the program waited", idle)
	}
	lp.p.Kill()
	lp.wait()
}

// awaiting asks p whether it awaits input, a few times over 10 ms when
// want is true (the program may not have reached its read yet), and
// reports the last answer.
func awaiting(t *testing.T, p sandbox.Process, want bool) bool {
	t.Helper()
	for range 20 {
		ok, err := p.AwaitingInput()
		if err != nil {
			t.Fatalf("AwaitingInput: %v", err)
		}
		if ok == want {
			return ok
		}
		time.Sleep(500 * time.Microsecond)
	}
	return !want
}

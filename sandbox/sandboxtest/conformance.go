//go:build linux

package sandboxtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
)

// conformance checks the contract of sandbox.Runtime.
func (h *harness) conformance(t *testing.T) {
	h.runAll(t, []scenario{
		{"HelloPython", h.helloPython},
		{"HelloBash", h.helloBash},
		{"HelloNode", h.helloNode},
		{"WorkingDirectory", h.workingDirectory},
		{"ExitCodes", h.exitCodes},
		{"Stdin", h.stdin},
		{"Env", h.env},
		{"InputFiles", h.inputFiles},
		{"OutputFiles", h.outputFiles},
		{"BinaryOutput", h.binaryOutput},
		{"LoopbackNetworking", h.loopbackNetworking},
		{"OutputLimit", h.outputLimit},
		{"Usage", h.usage},
		{"ProcessBudget", h.processBudget},
		{"Reasons", h.reasons},
		{"Validation", h.validation},
		{"LargeCode", h.largeCode},
		{"FreshSandbox", h.freshSandbox},
		{"Concurrent", h.concurrent},
	})
}

func (h *harness) helloPython(t *testing.T) {
	res := h.run(t, py(`print("hello from python")`))
	requireOK(t, res)
	if res.Stdout != "hello from python\n" || res.Stderr != "" {
		t.Errorf("stdout %q, stderr %q; want the greeting and nothing else", res.Stdout, res.Stderr)
	}
	if res.Runtime != h.rt.Name() {
		t.Errorf("Result.Runtime = %q, want the runtime's Name() %q", res.Runtime, h.rt.Name())
	}
	if len(res.Files) != 0 || res.FilesTruncated {
		t.Errorf("a program that wrote no file reported files: %+v", res.Files)
	}
}

func (h *harness) helloBash(t *testing.T) {
	res := h.run(t, sh(`echo "hello from $0"; echo to-stderr >&2`))
	requireOK(t, res)
	if !strings.HasPrefix(res.Stdout, "hello from ") || res.Stderr != "to-stderr\n" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
}

func (h *harness) helloNode(t *testing.T) {
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no /usr/bin/node on this host")
	}
	res := h.run(t, sandbox.Request{Language: sandbox.Node, Code: `console.log("hello from node"); console.error("e")`, Limits: quick})
	requireOK(t, res)
	if res.Stdout != "hello from node\n" || res.Stderr != "e\n" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
	res = h.run(t, sandbox.Request{Language: sandbox.Node, Code: `process.exit(7)`, Limits: quick})
	if res.Reason != sandbox.ReasonExited || res.ExitCode != 7 {
		t.Errorf("process.exit(7): %s", describe(res))
	}
}

func requireOK(t *testing.T, res *sandbox.Result) {
	t.Helper()
	if !res.OK() {
		t.Fatalf("the run failed:\n%s", describe(res))
	}
}

// The program runs in the workspace, sandbox.WorkDir, and relative paths land there.
func (h *harness) workingDirectory(t *testing.T) {
	res := h.run(t, py(`import os; print(os.getcwd()); open("rel.txt", "w").write("x")`))
	requireOK(t, res)
	if got := strings.TrimSpace(res.Stdout); got != sandbox.WorkDir {
		t.Errorf("working directory %q, want %q", got, sandbox.WorkDir)
	}
	if len(res.Files) != 1 || res.Files[0].Path != "rel.txt" {
		t.Errorf("files %+v, want rel.txt", res.Files)
	}
}

func (h *harness) exitCodes(t *testing.T) {
	for _, c := range []struct {
		name   string
		req    sandbox.Request
		code   int
		signal string
		stderr string
	}{
		{"python sys.exit(3)", py("import sys; sys.exit(3)"), 3, "", ""},
		{"python exception", py("raise ValueError('boom')"), 1, "", "ValueError: boom"},
		{"python syntax error", py("def f(:\n  pass"), 1, "", "SyntaxError"},
		{"python exit with message", py("import sys; sys.exit('bye')"), 1, "", "bye"},
		{"bash exit 42", sh("exit 42"), 42, "", ""},
		{"bash command not found", sh("no-such-command-xyz"), 127, "", "not found"},
		{"bash killed by its own SIGTERM", sh("kill -TERM $$"), -1, "SIGTERM", ""},
		{"python killed by its own SIGKILL", py("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"), -1, "SIGKILL", ""},
		{"python segfault", py("import ctypes; ctypes.string_at(0)"), -1, "SIGSEGV", ""},
	} {
		res := h.run(t, c.req)
		// A program that ends by its own hand, signals included, has exited:
		// no limit was involved.
		if res.Reason != sandbox.ReasonExited || res.ExitCode != c.code || res.Signal != c.signal {
			t.Errorf("%s: got reason %s, exit %d, signal %q; want exited, exit %d, signal %q\n%s",
				c.name, res.Reason, res.ExitCode, res.Signal, c.code, c.signal, describe(res))
		}
		if !strings.Contains(res.Stderr, c.stderr) {
			t.Errorf("%s: stderr %q does not mention %q", c.name, res.Stderr, c.stderr)
		}
		if res.OK() {
			t.Errorf("%s: OK() is true for a failed run", c.name)
		}
	}
}

func (h *harness) stdin(t *testing.T) {
	req := py("import sys; print(sys.stdin.read().upper(), end='')")
	req.Stdin = []byte("hello\nworld")
	res := h.run(t, req)
	requireOK(t, res)
	if res.Stdout != "HELLO\nWORLD" {
		t.Errorf("stdin echo: %q", res.Stdout)
	}

	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	req = sh("wc -c")
	req.Stdin = big
	res = h.run(t, req)
	requireOK(t, res)
	if strings.TrimSpace(res.Stdout) != fmt.Sprint(len(big)) {
		t.Errorf("wc -c of %d bytes of stdin: %q", len(big), res.Stdout)
	}

	// A program that never reads its input must not hang the run.
	req = py("print('ignored')")
	req.Stdin = make([]byte, 4<<20)
	res = h.run(t, req)
	requireOK(t, res)

	// No stdin: reading gets end of file at once.
	res = h.run(t, py("import sys; print(repr(sys.stdin.read()))"))
	requireOK(t, res)
	if res.Stdout != "''\n" {
		t.Errorf("empty stdin read %q", res.Stdout)
	}
}

func (h *harness) env(t *testing.T) {
	vars := map[string]string{
		"GREETING":    "hello world",
		"UNICODE":     "héllo ✓",
		"WITH_EQUALS": "a=b=c",
		"EMPTY":       "",
		"MULTILINE":   "line1\nline2",
	}
	req := py(`import os, json; print(json.dumps({k: os.environ.get(k) for k in ["GREETING", "UNICODE", "WITH_EQUALS", "EMPTY", "MULTILINE"]}))`)
	req.Env = vars
	res := h.run(t, req)
	requireOK(t, res)
	var got map[string]string
	jsonLine(t, res, "", &got)
	for k, v := range vars {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
	req = sh(`echo "$GREETING|$WITH_EQUALS"; test -n "$PATH" && echo has-path`)
	req.Env = vars
	res = h.run(t, req)
	requireOK(t, res)
	if res.Stdout != "hello world|a=b=c\nhas-path\n" {
		t.Errorf("bash env: %q", res.Stdout)
	}
}

func (h *harness) inputFiles(t *testing.T) {
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	sum := sha256.Sum256(bin)
	req := sh(`set -e
./bin/run.sh
cat nested/deep/dir/file.txt
stat -c '%a %s %n' data.csv bin/run.sh private.key nested/deep/dir/file.txt binary.bin
sha256sum binary.bin
test -O data.csv && echo owned
echo appended >> data.csv`)
	req.Files = []sandbox.File{
		{Path: "data.csv", Content: []byte("a,b\n1,2\n")},
		{Path: "nested/deep/dir/file.txt", Content: []byte("deep content\n")},
		{Path: "bin/run.sh", Content: []byte("#!/bin/sh\necho script ran\n"), Mode: 0o755},
		{Path: "private.key", Content: []byte("k"), Mode: 0o600},
		{Path: "binary.bin", Content: bin},
	}
	res := h.run(t, req)
	requireOK(t, res)
	want := "script ran\ndeep content\n" +
		"644 8 data.csv\n755 26 bin/run.sh\n600 1 private.key\n644 13 nested/deep/dir/file.txt\n644 256 binary.bin\n" +
		hex.EncodeToString(sum[:]) + "  binary.bin\nowned\n"
	if res.Stdout != want {
		t.Errorf("input files as the program sees them:\n%s\nwant:\n%s", res.Stdout, want)
	}
	// Only the appended-to input changed.
	if len(res.Files) != 1 || res.Files[0].Path != "data.csv" || res.Files[0].Created {
		t.Errorf("changed files %+v, want only data.csv (not created)", res.Files)
	}
}

func (h *harness) outputFiles(t *testing.T) {
	req := py(`import os
open("change.txt", "a").write("more")
open("new.txt", "w").write("hello")
os.makedirs("out/sub")
open("out/sub/result.json", "w").write("x" * 200)
open("big.bin", "wb").write(b"b" * 10000)
open("secret.txt", "w").write("s")
os.chmod("secret.txt", 0o600)
os.chmod("mode.txt", 0o640)
os.remove("gone.txt")
`)
	req.Files = []sandbox.File{
		{Path: "keep.txt", Content: []byte("unchanged")},
		{Path: "change.txt", Content: []byte("base-")},
		{Path: "mode.txt", Content: []byte("m")},
		{Path: "gone.txt", Content: []byte("g")},
	}
	req.FileContents = 100
	res := h.run(t, req)
	requireOK(t, res)
	byPath := map[string]sandbox.FileInfo{}
	var paths []string
	for _, f := range res.Files {
		byPath[f.Path] = f
		paths = append(paths, f.Path)
	}
	wantPaths := []string{"big.bin", "change.txt", "mode.txt", "new.txt", "out", "out/sub", "out/sub/result.json", "secret.txt"}
	if strings.Join(paths, " ") != strings.Join(wantPaths, " ") {
		t.Errorf("reported files %v, want %v (sorted; unchanged and deleted inputs omitted)", paths, wantPaths)
	}
	if strings.Join(res.Removed, " ") != "gone.txt" {
		t.Errorf("removed inputs %q, want [gone.txt]", res.Removed)
	}
	check := func(p string, kind sandbox.FileKind, created bool, size int64, content string, truncated bool) {
		t.Helper()
		f, ok := byPath[p]
		if !ok {
			return
		}
		if f.Kind != kind || f.Created != created || (kind == sandbox.KindFile && f.Size != size) ||
			string(f.Content) != content || f.ContentTruncated != truncated {
			t.Errorf("%s: got kind=%s created=%v size=%d content=%q truncated=%v; want %s %v %d %q %v",
				p, f.Kind, f.Created, f.Size, clip(string(f.Content), 40), f.ContentTruncated, kind, created, size, clip(content, 40), truncated)
		}
	}
	check("change.txt", sandbox.KindFile, false, 9, "base-more", false)
	check("new.txt", sandbox.KindFile, true, 5, "hello", false)
	check("out", sandbox.KindDir, true, 0, "", false)
	check("out/sub", sandbox.KindDir, true, 0, "", false)
	check("out/sub/result.json", sandbox.KindFile, true, 200, strings.Repeat("x", 100), true)
	check("big.bin", sandbox.KindFile, true, 10000, strings.Repeat("b", 100), true)
	check("mode.txt", sandbox.KindFile, false, 1, "m", false)
	if f := byPath["secret.txt"]; f.Mode.Perm() != 0o600 {
		t.Errorf("secret.txt mode %v, want 0600", f.Mode)
	}
	if f := byPath["mode.txt"]; f.Mode.Perm() != 0o640 {
		t.Errorf("mode.txt mode %v, want 0640 (a mode change alone counts as a change)", f.Mode)
	}

	// Without FileContents, metadata only.
	req.FileContents = 0
	res = h.run(t, req)
	requireOK(t, res)
	for _, f := range res.Files {
		if f.Content != nil || f.ContentTruncated {
			t.Errorf("%s: content returned although none was asked for", f.Path)
		}
	}
}

func (h *harness) binaryOutput(t *testing.T) {
	res := h.run(t, py("import sys; sys.stdout.buffer.write(bytes(range(256))); sys.stderr.buffer.write(b'\\xff\\xfe')"))
	requireOK(t, res)
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	if res.Stdout != string(want) || res.Stderr != "\xff\xfe" {
		t.Errorf("binary output not preserved byte for byte: stdout %q stderr %q", clip(res.Stdout, 100), res.Stderr)
	}
}

// loopbackNetworking: programs may use sockets among themselves: TCP and
// UDP over the sandbox's own loopback, Unix sockets, and asyncio (which
// needs a socket pair). Only the way out is closed.
func (h *harness) loopbackNetworking(t *testing.T) {
	res := h.run(t, py(`import asyncio, os, socket, threading
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1)
def serve():
    c, _ = srv.accept()
    c.sendall(c.recv(100).upper())
    c.close()
threading.Thread(target=serve).start()
cl = socket.create_connection(srv.getsockname())
cl.sendall(b"tcp")
print(cl.recv(100).decode())
u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u1.bind(("127.0.0.1", 0))
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"udp", u1.getsockname())
print(u1.recv(100).decode())
us = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
us.bind("/tmp/s.sock")
us.listen(1)
uc = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
uc.connect("/tmp/s.sock")
uc.sendall(b"unix")
print(us.accept()[0].recv(100).decode())
async def main():
    r, w = await asyncio.open_connection(*srv2.getsockname())
    w.write(b"async\n")
    return (await r.readline()).decode().strip()
srv2 = socket.socket()
srv2.bind(("127.0.0.1", 0))
srv2.listen(1)
def echo():
    c, _ = srv2.accept()
    c.sendall(c.recv(100))
threading.Thread(target=echo).start()
print(asyncio.run(main()))
`))
	requireOK(t, res)
	if res.Stdout != "TCP\nudp\nunix\nasync\n" {
		t.Errorf("loopback networking: stdout %q, want TCP, udp, unix, async", res.Stdout)
	}
}

func (h *harness) outputLimit(t *testing.T) {
	const limit = 1000
	lim := limits(sandbox.Limits{OutputBytes: limit})
	// Exactly the limit: complete, not truncated.
	req := py(fmt.Sprintf("import sys; sys.stdout.write('a' * %d)", limit))
	req.Limits = lim
	res := h.run(t, req)
	requireOK(t, res)
	if len(res.Stdout) != limit || res.StdoutTruncated {
		t.Errorf("output of exactly the limit: %d bytes, truncated=%v; want %d, false", len(res.Stdout), res.StdoutTruncated, limit)
	}
	for _, stream := range []string{"stdout", "stderr"} {
		req := py(fmt.Sprintf("import sys\nfor i in range(100): sys.%s.write('%%04d' %% i + 'x' * 96); sys.%s.flush()\nprint('unreachable?', file=sys.stderr)", stream, stream))
		req.Limits = lim
		res := h.run(t, req)
		if res.Reason != sandbox.ReasonOutputLimit {
			t.Errorf("%s past the limit: reason %s, want output_limit\n%s", stream, res.Reason, describe(res))
		}
		out, trunc, otherTrunc := res.Stdout, res.StdoutTruncated, res.StderrTruncated
		if stream == "stderr" {
			out, trunc, otherTrunc = res.Stderr, res.StderrTruncated, res.StdoutTruncated
		}
		if len(out) != limit || !trunc || !strings.HasPrefix(out, "0000xxxx") {
			t.Errorf("%s: kept %d bytes, truncated=%v; want the first %d bytes and the flag", stream, len(out), trunc, limit)
		}
		if otherTrunc {
			t.Errorf("%s flood marked the other stream truncated", stream)
		}
	}
}

func (h *harness) usage(t *testing.T) {
	req := py(`import time
b = bytearray(48 << 20)
for i in range(0, len(b), 4096): b[i] = 1
end = time.process_time() + 0.4
while time.process_time() < end: pass
`)
	res := h.run(t, req)
	requireOK(t, res)
	u := res.Usage
	if u.Wall <= 0 || u.Wall > 15*time.Second {
		t.Errorf("wall %v implausible", u.Wall)
	}
	if u.CPU() < 300*time.Millisecond {
		t.Errorf("CPU %v (user %v, system %v) for a 0.4 s busy loop", u.CPU(), u.CPUUser, u.CPUSystem)
	}
	if u.CPU() > u.Wall*time.Duration(runtime.NumCPU())+time.Second {
		t.Errorf("CPU %v exceeds what the wall time %v allows", u.CPU(), u.Wall)
	}
	if u.PeakMemory < 48<<20 || u.PeakMemory > quick.Memory {
		t.Errorf("peak memory %s for a program that touched 48 MiB (limit %s)", sandbox.FormatBytes(u.PeakMemory), sandbox.FormatBytes(quick.Memory))
	}
	res = h.run(t, sh("true"))
	requireOK(t, res)
	if res.Usage.Wall <= 0 || res.Usage.PeakMemory <= 0 {
		t.Errorf("trivial run: usage %+v; want wall and peak memory above zero", res.Usage)
	}
}

// processBudget: Limits.Processes counts the program's processes and
// threads, so a program may start Processes-1 more (it is one itself) and
// no more.
func (h *harness) processBudget(t *testing.T) {
	const procs = 12
	req := py(`import os, time
n = 0
while n < 100:
    try:
        pid = os.fork()
    except OSError as e:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print(n)
`)
	req.Limits = limits(sandbox.Limits{Processes: procs})
	res := h.run(t, req)
	requireOK(t, res)
	var n int
	fmt.Sscan(res.Stdout, &n)
	switch {
	case n > procs-1:
		t.Errorf("with Processes=%d the program started %d more processes; at most %d fit", procs, n, procs-1)
	case n < procs-1:
		t.Errorf("with Processes=%d the program could start only %d more processes, not %d: "+
			"something else in the sandbox counts against the program's limit", procs, n, procs-1)
	}
}

// reasons reaches every termination reason a program can cause or suffer.
func (h *harness) reasons(t *testing.T) {
	t.Run("exited", func(t *testing.T) {
		t.Parallel()
		res := h.run(t, py("pass"))
		if res.Reason != sandbox.ReasonExited || res.ExitCode != 0 || res.Signal != "" {
			t.Errorf("%s", describe(res))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		req := py("import time; time.sleep(60)")
		req.Limits = limits(sandbox.Limits{WallTime: 700 * time.Millisecond})
		res := h.run(t, req)
		if res.Reason != sandbox.ReasonTimeout {
			t.Errorf("want timeout: %s", describe(res))
		}
		if res.Usage.Wall < 700*time.Millisecond || res.Usage.Wall > 5*time.Second {
			t.Errorf("wall %v for a 700ms limit", res.Usage.Wall)
		}
	})
	t.Run("cpu_limit", func(t *testing.T) {
		t.Parallel()
		req := py("while True: pass")
		req.Limits = limits(sandbox.Limits{CPUTime: 700 * time.Millisecond})
		res := h.run(t, req)
		if res.Reason != sandbox.ReasonCPULimit {
			t.Errorf("want cpu_limit: %s", describe(res))
		}
		if res.Usage.CPU() < 600*time.Millisecond {
			t.Errorf("cpu_limit after only %v of CPU", res.Usage.CPU())
		}
	})
	t.Run("memory_limit", func(t *testing.T) {
		t.Parallel()
		req := py("x = []\nwhile True: x.append(b'm' * (1 << 20))")
		req.Limits = limits(sandbox.Limits{Memory: 64 << 20})
		res := h.run(t, req)
		if res.Reason != sandbox.ReasonMemoryLimit {
			t.Errorf("want memory_limit: %s", describe(res))
		}
	})
	t.Run("output_limit", func(t *testing.T) {
		t.Parallel()
		req := py("while True: print('y' * 1000)")
		req.Limits = limits(sandbox.Limits{OutputBytes: 10000})
		res := h.run(t, req)
		if res.Reason != sandbox.ReasonOutputLimit || !res.StdoutTruncated || len(res.Stdout) != 10000 {
			t.Errorf("want output_limit with 10000 bytes kept: %d kept, %s", len(res.Stdout), describe(res))
		}
	})
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		marker := "coderun-cancel-" + randomHex(6)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req := sh(fmt.Sprintf("exec -a %s sleep 60", marker))
		go func() {
			// Cancel once the program runs (or after a while, for runtimes
			// whose processes the host cannot see).
			waitHostPID(marker, 5*time.Second)
			cancel()
		}()
		start := time.Now()
		res := h.runCtx(t, ctx, req)
		if res.Reason != sandbox.ReasonKilled {
			t.Errorf("want killed after the context was cancelled: %s", describe(res))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Run took %v to return after cancellation", d)
		}
		requireNoSurvivors(t, marker, "a cancelled run")
	})
}

// validation: malformed requests wrap sandbox.ErrInvalid and run nothing.
// Every request's code would sleep for 3 s if it ran; Run must return at once.
func (h *harness) validation(t *testing.T) {
	sleep := "import time; time.sleep(3)"
	base := func() sandbox.Request { return py(sleep) }
	with := func(f func(*sandbox.Request)) sandbox.Request { r := base(); f(&r); return r }
	file := func(p string, n int) sandbox.File { return sandbox.File{Path: p, Content: make([]byte, n)} }
	for _, c := range []struct {
		name string
		req  sandbox.Request
	}{
		{"unknown language", with(func(r *sandbox.Request) { r.Language = "cobol" })},
		{"no language", with(func(r *sandbox.Request) { r.Language = "" })},
		{"empty code", with(func(r *sandbox.Request) { r.Code = "" })},
		{"blank code", with(func(r *sandbox.Request) { r.Code = " \n\t\n" })},
		{"code over 1 MiB", with(func(r *sandbox.Request) { r.Code = sleep + "\n#" + strings.Repeat("x", sandbox.MaxCodeBytes) })},
		{"NUL in code", with(func(r *sandbox.Request) { r.Code = sleep + "\x00" })},
		{"memory below minimum", with(func(r *sandbox.Request) { r.Limits.Memory = 1 << 20 })},
		{"memory above maximum", with(func(r *sandbox.Request) { r.Limits.Memory = 1 << 50 })},
		{"negative memory", with(func(r *sandbox.Request) { r.Limits.Memory = -1 })},
		{"wall time above maximum", with(func(r *sandbox.Request) { r.Limits.WallTime = 2 * time.Hour })},
		{"negative CPU time", with(func(r *sandbox.Request) { r.Limits.CPUTime = -time.Second })},
		{"processes above maximum", with(func(r *sandbox.Request) { r.Limits.Processes = 1 << 20 })},
		{"negative processes", with(func(r *sandbox.Request) { r.Limits.Processes = -5 })},
		{"negative output bytes", with(func(r *sandbox.Request) { r.Limits.OutputBytes = -1 })},
		{"workspace below minimum", with(func(r *sandbox.Request) { r.Limits.WorkspaceBytes = 1000 })},
		{"open files below minimum", with(func(r *sandbox.Request) { r.Limits.OpenFiles = 3 })},
		{"absolute path", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("/etc/cron.d/x", 1)} })},
		{"dot-dot path", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("../escape.txt", 1)} })},
		{"dot-dot inside path", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("a/../../escape.txt", 1)} })},
		{"empty path", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("", 1)} })},
		{"path naming the workspace", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("./", 1)} })},
		{"NUL in path", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("a\x00b", 1)} })},
		{"name over 255 bytes", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file(strings.Repeat("n", 256), 1)} })},
		{"duplicate path", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("a.txt", 1), file("a.txt", 2)} })},
		{"duplicate after cleaning", with(func(r *sandbox.Request) { r.Files = []sandbox.File{file("d/a.txt", 1), file("./d//a.txt", 2)} })},
		{"uploads larger than the workspace", with(func(r *sandbox.Request) {
			r.Limits.WorkspaceBytes = 1 << 20
			r.Files = []sandbox.File{file("big.bin", 2<<20)}
		})},
		{"many uploads larger than the workspace together", with(func(r *sandbox.Request) {
			r.Limits.WorkspaceBytes = 1 << 20
			for i := range 5 {
				r.Files = append(r.Files, file(fmt.Sprintf("part%d", i), 300<<10))
			}
		})},
		{"environment name with =", with(func(r *sandbox.Request) { r.Env = map[string]string{"A=B": "c"} })},
		{"empty environment name", with(func(r *sandbox.Request) { r.Env = map[string]string{"": "c"} })},
		{"NUL in environment value", with(func(r *sandbox.Request) { r.Env = map[string]string{"A": "x\x00y"} })},
		{"negative file contents", with(func(r *sandbox.Request) { r.FileContents = -1 })},
	} {
		start := time.Now()
		res, err := h.rt.Run(context.Background(), c.req)
		if err == nil {
			t.Errorf("%s: accepted; result %s", c.name, describe(res))
			continue
		}
		if !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("%s: error %v does not wrap sandbox.ErrInvalid", c.name, err)
		}
		if res != nil {
			t.Errorf("%s: a result came with the validation error: %+v", c.name, res)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v to reject: the code may have run", c.name, d)
		}
	}
}

// largeCode: code of exactly sandbox.MaxCodeBytes is accepted and runs.
func (h *harness) largeCode(t *testing.T) {
	head := "print('big program ran')\n#"
	code := head + strings.Repeat("x", sandbox.MaxCodeBytes-len(head))
	res := h.run(t, py(code))
	requireOK(t, res)
	if res.Stdout != "big program ran\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

// freshSandbox: nothing one run leaves behind is visible to the next.
func (h *harness) freshSandbox(t *testing.T) {
	writeState := `import os
for d in ["/work", "/tmp", "/dev/shm"]:
    open(d + "/state-from-first-run", "w").write("state")
os.makedirs("/tmp/.cache/coderun-state", exist_ok=True)
open(os.path.expanduser("~/.bashrc"), "a").write("export LEFTOVER=1\n")
print("written")
`
	checkState := `import os, json
found = []
for d in ["/work", "/tmp", "/dev/shm"]:
    for root, dirs, files in os.walk(d):
        found += [os.path.join(root, f) for f in files + dirs]
print("FOUND:" + json.dumps(found))
print("ENV:" + json.dumps(os.environ.get("LEFTOVER")))
`
	for i := range 2 {
		res := h.run(t, py(writeState))
		requireOK(t, res)
		res = h.run(t, py(checkState))
		requireOK(t, res)
		var found []string
		jsonLine(t, res, "FOUND:", &found)
		if len(found) != 0 {
			t.Errorf("round %d: a later run saw files an earlier run left: %v", i, found)
		}
		res = h.run(t, sh(`ls -A /work /tmp /dev/shm | grep -v '^/' | grep . ; echo "LEFTOVER=$LEFTOVER"`))
		if strings.TrimSpace(res.Stdout) != "LEFTOVER=" {
			t.Errorf("round %d: bash saw state from an earlier run: %q", i, res.Stdout)
		}
	}
}

// concurrent: eight runs at once each get their own input and only their own output.
func (h *harness) concurrent(t *testing.T) {
	const n = 8
	results := make([]*sandbox.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := py(`import os, sys, time
me = open("id.txt").read()
time.sleep(0.3)
others = sorted(f for f in os.listdir(".") if f != "id.txt")
open("out-%s.txt" % me, "w").write(me * 3)
print(me, sys.stdin.read(), os.environ["RUN_ID"], others)
`)
			req.Files = []sandbox.File{{Path: "id.txt", Content: []byte(fmt.Sprint(i))}}
			req.Stdin = []byte(fmt.Sprintf("stdin-%d", i))
			req.Env = map[string]string{"RUN_ID": fmt.Sprint(i)}
			req.FileContents = 100
			results[i], errs[i] = h.rt.Run(context.Background(), req)
		}()
	}
	wg.Wait()
	for i := range n {
		res, err := results[i], errs[i]
		if err != nil {
			t.Errorf("run %d: %v", i, err)
			continue
		}
		want := fmt.Sprintf("%d stdin-%d %d []\n", i, i, i)
		if !res.OK() || res.Stdout != want {
			t.Errorf("run %d: stdout %q, want %q\n%s", i, res.Stdout, want, describe(res))
		}
		wantFile := fmt.Sprintf("out-%d.txt", i)
		if len(res.Files) != 1 || res.Files[0].Path != wantFile || string(res.Files[0].Content) != strings.Repeat(fmt.Sprint(i), 3) {
			t.Errorf("run %d: files %+v, want only %s", i, res.Files, wantFile)
		}
	}
}

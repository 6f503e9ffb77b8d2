//go:build linux

package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"golang.org/x/sys/unix"
)

// The scenarios of this file model a remote client of a long-lived sandbox
// (a session's file upload, download, listing and archives, as an HTTP
// server exposes them) working together with the code in the sandbox
// against the host: paths that name something outside the workspace, and
// links swapped in between the host's check of a path and its use.

// hostilePaths models a client naming files outside the workspace: every
// path below must be refused with an error saying why, before anything is
// read or written, and nothing may appear on the host.
func (l *longLived) hostilePaths(t *testing.T) {
	sb := l.newSandbox(t, sandbox.Spec{})
	ar, _ := sb.(sandbox.Archiver)
	tag := "coderun-hostile-" + randomHex(6)
	paths := []string{
		"../" + tag, "../../../../tmp/" + tag, "a/../../" + tag, "/tmp/" + tag, "/etc/passwd",
		"a\x00b", "\xff" + tag, "", ".", "./.", "a/..", strings.Repeat("x", 256),
		strings.Repeat("d/", 2049) + tag,
	}
	for _, p := range paths {
		if err := sb.WriteFile(p, []byte("escaped\n"), 0o644); err == nil {
			t.Errorf("WriteFile(%q) succeeded, want an error", clip(p, 60))
		} else if !errors.Is(err, sandbox.ErrInvalid) {
			t.Errorf("WriteFile(%q): %v, want an error wrapping sandbox.ErrInvalid", clip(p, 60), err)
		}
		if data, _, err := sb.ReadFile(p, 1<<20); err == nil {
			t.Errorf("ReadFile(%q) succeeded (%q), want an error", clip(p, 60), clip(string(data), 80))
		}
		if ar != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if rc, err := ar.GetArchive(ctx, []string{p}); err == nil {
				n, _ := io.Copy(io.Discard, rc)
				rc.Close()
				t.Errorf("GetArchive(%q) succeeded (%d bytes), want an error", clip(p, 60), n)
			}
			cancel()
		}
	}
	for _, dir := range []string{"/tmp", "/", os.TempDir()} {
		if _, err := os.Lstat(dir + "/" + tag); err == nil {
			t.Errorf("CONTAINMENT FAILURE: %s/%s was created on the host", dir, tag)
		}
	}
}

// swappedLinks models a time-of-check-to-time-of-use race: while the host
// serves file requests for the workspace, the program in it swaps, as fast
// as it can and atomically (renameat2 RENAME_EXCHANGE), a regular file for a
// link to the host's /etc/passwd and for a FIFO, and a directory for a link
// to / . Whatever the timing, the host must never read a file of its own
// (the program cannot: the link's target is the sandbox's /etc), never write
// one, and never block; a regular file read is read whole.
func (l *longLived) swappedLinks(t *testing.T) {
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skipf("no host /etc/passwd to compare with: %v", err)
	}
	tag := "coderun-swap-" + randomHex(6)
	sb := l.newSandbox(t, sandbox.Spec{})
	ar, _ := sb.(sandbox.Archiver)
	const regular = "regular-content\n"
	lp := start(t, sb, pyProg(fmt.Sprintf(`
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.syscall(%d, -100, a.encode(), -100, b.encode(), 2) != 0:  # renameat2(RENAME_EXCHANGE)
        raise OSError(ctypes.get_errno(), "renameat2 %%s %%s" %% (a, b))
os.chdir("/work")
with open("f", "w") as f:
    f.write(%q)
os.symlink("/etc/passwd", "f.link")
os.mkfifo("f.fifo")
os.makedirs("d/etc")
os.makedirs("d/tmp")
with open("d/etc/passwd", "w") as f:
    f.write("the sandbox's own\n")
os.symlink("/", "d.link")
print("ready", flush=True)
end = time.monotonic() + float(sys.stdin.readline())
n = 0
while time.monotonic() < end:
    exchange("f", "f.link")
    exchange("d", "d.link")
    exchange("f", "f.link")
    exchange("f", "f.fifo")
    exchange("d", "d.link")
    exchange("f", "f.fifo")
    n += 1
print("swapped", n, flush=True)
`, unix.SYS_RENAMEAT2, regular)))
	lp.expect("ready")
	const seconds = 3
	lp.send(fmt.Sprintf("%d\n", seconds))
	deadline := time.Now().Add(seconds * time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(what string) {
		mu.Lock()
		counts[what]++
		mu.Unlock()
	}
	host := func(what string, data []byte) {
		if len(hostPasswd) > 0 && bytes.Contains(data, hostPasswd[:min(len(hostPasswd), 64)]) {
			t.Errorf("CONTAINMENT FAILURE: %s returned the host's /etc/passwd", what)
		}
	}
	worker := func(name string, op func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				op()
				count(name)
			}
		}()
	}
	worker("ReadFile f", func() {
		data, _, err := sb.ReadFile("f", 1<<20)
		host("ReadFile(f)", data)
		if err == nil && string(data) != regular {
			count("wrong content")
			mu.Lock()
			if counts["wrong content"] == 1 {
				t.Errorf("ReadFile(f) = %q without an error: f was a regular file of %d bytes, or not a regular file at all", clip(string(data), 80), len(regular))
			}
			mu.Unlock()
		}
	})
	worker("ReadFile d/etc/passwd", func() {
		data, _, _ := sb.ReadFile("d/etc/passwd", 1<<20)
		host("ReadFile(d/etc/passwd)", data)
	})
	worker("WriteFile d/tmp", func() {
		_ = sb.WriteFile("d/tmp/"+tag, []byte("written\n"), 0o644)
	})
	worker("Files", func() {
		files, _, _ := sb.Files()
		for _, f := range files {
			host("Files", f.Content)
		}
	})
	if ar != nil {
		worker("GetArchive", func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rc, err := ar.GetArchive(ctx, []string{"f", "d"})
			if err != nil {
				return
			}
			defer rc.Close()
			tr := tar.NewReader(rc)
			for {
				hdr, err := tr.Next()
				if err != nil {
					return
				}
				data, _ := io.ReadAll(tr)
				host("GetArchive entry "+hdr.Name, data)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(seconds*time.Second + 30*time.Second):
		t.Fatalf("the host's file operations blocked (a FIFO swapped in?): %v done so far", counts)
	}
	swapped := lp.line()
	if !strings.HasPrefix(swapped, "swapped ") {
		t.Fatalf("the program said %q, want how many times it swapped; stderr:\n%s", swapped, lp.stderr)
	}
	t.Logf("host operations during %s rounds of swaps: %v", strings.TrimSpace(strings.TrimPrefix(swapped, "swapped ")), counts)
	for _, p := range []string{"/" + tag, "/tmp/" + tag} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("CONTAINMENT FAILURE: %s was written on the host through a swapped link", p)
		}
	}
}

// uptime is HostUptime (security_clock.go) for a long-lived sandbox's
// programs, as sessions start them: each sees the clocks of its own box.
func (l *longLived) uptime(t *testing.T) {
	if _, err := os.Stat("/proc/self/ns/time"); err != nil {
		t.Skip("this kernel has no time namespaces (Linux 5.6)")
	}
	hostBtime, hostUp := hostClocks(t)
	if hostUp < 120 {
		t.Skipf("the host has been up only %.0f s: its uptime cannot be told from a sandbox's", hostUp)
	}
	sb := l.newSandbox(t, sandbox.Spec{})
	for _, prog := range []sandbox.Program{
		pyProg(`print(open("/proc/uptime").read().split()[0], [l.split()[1] for l in open("/proc/stat") if l.startswith("btime ")][0])`),
		shProg(`read -r up _ < /proc/uptime; btime=$(grep '^btime ' /proc/stat); echo "$up ${btime#btime }"`),
	} {
		lp := start(t, sb, prog)
		var up float64
		var btime int64
		if _, err := fmt.Sscan(lp.line(), &up, &btime); err != nil {
			t.Fatalf("%s: %v", prog.Language, err)
		}
		lp.wait()
		if bound := processAge(t) + 5; up > bound || btime <= hostBtime+2 {
			t.Errorf("CONTAINMENT FAILURE: a %s program of a long-lived sandbox sees uptime %.1f s and boot time %d: the host's are %.1f s and %d", prog.Language, up, btime, hostUp, hostBtime)
		}
	}
}

// closedSandboxFiles models a server that still holds a closed (evicted)
// session's sandbox when a request for its files arrives, after another
// tenant's sandbox was made: the closed sandbox's file operations must
// fail, and must never reach the newer sandbox's workspace.
func (l *longLived) closedSandboxFiles(t *testing.T) {
	ctx := context.Background()
	old, err := l.rt.NewSandbox(ctx, sandbox.Spec{Limits: liveLimits})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	tag := "coderun-closed-" + randomHex(6)
	for i := range 4 { // newer sandboxes, which may reuse what the closed one let go
		other := l.newSandbox(t, sandbox.Spec{Files: []sandbox.File{{Path: "other.txt", Content: []byte("another tenant's")}}})
		name := fmt.Sprintf("%s-%d", tag, i)
		if err := old.WriteFile(name, []byte("written through a closed sandbox"), 0o644); err == nil {
			t.Errorf("WriteFile on a closed sandbox succeeded")
		}
		if data, _, err := other.ReadFile(name, 100); err == nil {
			t.Errorf("CONTAINMENT FAILURE: a write to a closed sandbox landed in another sandbox's workspace: %q", data)
		}
		if data, _, err := old.ReadFile("other.txt", 100); err == nil {
			t.Errorf("CONTAINMENT FAILURE: ReadFile on a closed sandbox read another sandbox's file: %q", data)
		}
		if files, _, err := old.Files(); err == nil {
			t.Errorf("Files on a closed sandbox listed %v", files)
		}
	}
}

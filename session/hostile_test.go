package session_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// The scenarios of this file model sessions exposed to remote tenants: a
// cell that leaves a daemon behind to outlive the interpreter it came from,
// and one tenant's session reaching for another's over the channels that
// sandboxes of one host might share.

func randomTag(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// hostProcessesNamed lists the host's processes whose command line holds tag.
func hostProcessesNamed(tag string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(tag)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNone waits up to d for no host process to hold tag, and returns
// those that still do.
func waitNone(tag string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := hostProcessesNamed(tag)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A cell may start a daemon that detaches itself (a new session, SIGHUP,
// SIGTERM and SIGINT ignored) to outlive the cell; it may live as long as
// the interpreter does (state persists between cells, processes too), but
// not longer: a restart, which promises a fresh interpreter, and closing
// the session leave none behind, in either language.
func TestDaemonDoesNotOutliveItsInterpreter(t *testing.T) {
	t.Parallel()
	for _, lang := range []sandbox.Language{sandbox.Bash, sandbox.Python} {
		t.Run(string(lang), func(t *testing.T) {
			s := newSession(t, session.Config{Language: lang})
			spawn := func(tag string) {
				t.Helper()
				daemon := fmt.Sprintf(`setsid bash -c 'trap "" HUP TERM INT; exec -a coderun-daemon-%s sleep 1000' </dev/null >/dev/null 2>&1 &`, tag)
				code := "( " + daemon + " )"
				if lang == sandbox.Python {
					code = fmt.Sprintf("import subprocess\nsubprocess.run(%q, shell=True, check=True)", code)
				}
				ok(t, s, code)
				deadline := time.Now().Add(10 * time.Second)
				for len(hostProcessesNamed("coderun-daemon-"+tag)) == 0 {
					if time.Now().After(deadline) {
						t.Fatalf("the daemon did not start")
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			first := randomTag(t)
			spawn(first)
			ok(t, s, map[sandbox.Language]string{sandbox.Bash: "true", sandbox.Python: "1"}[lang]) // the next cell: it lives on
			if len(hostProcessesNamed("coderun-daemon-"+first)) == 0 {
				t.Fatalf("the daemon died with its cell: this scenario needs it to outlive the cell")
			}
			if err := s.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			if left := waitNone("coderun-daemon-"+first, 5*time.Second); len(left) > 0 {
				t.Errorf("CONTAINMENT FAILURE: the daemon (host pids %v) outlived the restart of its interpreter", left)
			}
			second := randomTag(t)
			spawn(second)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if left := waitNone("coderun-daemon-"+second, 5*time.Second); len(left) > 0 {
				t.Errorf("CONTAINMENT FAILURE: the daemon (host pids %v) outlived its closed session", left)
			}
		})
	}
}

// Two tenants' sessions on one host share nothing a program could use to
// reach the other: a TCP port on loopback, an abstract or a path-named
// unix socket, System V and POSIX shared memory, /tmp, the process list.
// Tenant a's session listens and leaves things behind; tenant b's looks.
func TestTenantsShareNothing(t *testing.T) {
	t.Parallel()
	rt := runtimeFor(t)
	m := session.NewManager(rt, session.ManagerOptions{IdleTimeout: -1})
	defer m.Close()
	ctx := context.Background()
	create := func(name string) *session.Session {
		ts, err := m.Tenant(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ts.Create(ctx, session.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := create("tenant-a"), create("tenant-b")
	tag := randomTag(t)
	ok(t, a, fmt.Sprintf(`import os, socket, subprocess, mmap
tag = %q
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); tcp.bind(("127.0.0.1", 47123)); tcp.listen()
abstract = socket.socket(socket.AF_UNIX); abstract.bind("\0coderun-" + tag); abstract.listen()
named = socket.socket(socket.AF_UNIX); named.bind("/tmp/coderun-" + tag); named.listen()
open("/dev/shm/coderun-" + tag, "w").write("a's")
open("/tmp/coderun-file-" + tag, "w").write("a's")
sleeper = subprocess.Popen(["sleep", "4242"])
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0x5eed, 4096, 0o1666)  # IPC_CREAT | 0666
assert shmid >= 0, ctypes.get_errno()
`, tag))
	look := fmt.Sprintf(`import os, socket, ctypes
tag = %q
seen = []
def attempt(what, fn):
    try:
        fn()
        seen.append(what)
    except OSError:
        pass
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", 47123), timeout=2))
attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect("\0coderun-" + tag))
attempt("named", lambda: socket.socket(socket.AF_UNIX).connect("/tmp/coderun-" + tag))
attempt("shm", lambda: open("/dev/shm/coderun-" + tag).read())
attempt("tmp", lambda: open("/tmp/coderun-file-" + tag).read())
if any(b"4242" in open("/proc/%%s/cmdline" %% p, "rb").read() for p in os.listdir("/proc") if p.isdigit()):
    seen.append("process")
if ctypes.CDLL(None).shmget(0x5eed, 0, 0) >= 0:
    seen.append("sysv-shm")
sorted(seen)
`, tag)
	// The probe sees all of a's from a's own session (so it can tell)...
	if got := result(t, ok(t, a, look)); got != "['abstract', 'named', 'process', 'shm', 'sysv-shm', 'tcp', 'tmp']" {
		t.Fatalf("tenant a's own session sees %s", got)
	}
	// ...and none of it from b's.
	if got := result(t, ok(t, b, look)); got != "[]" {
		t.Errorf("CONTAINMENT FAILURE: tenant b's session reaches tenant a's %s", got)
	}
	if _, _, err := b.Download("../"+a.ID(), 10); err == nil || !strings.Contains(err.Error(), "..") {
		t.Errorf("a download naming another session's directory: %v, want refused for its ..", err)
	}
}

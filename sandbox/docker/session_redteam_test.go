package docker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// hostProcessesWith lists the host's processes whose command line holds s.
func hostProcessesWith(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmd), s) && e.Name() != fmt.Sprint(os.Getpid()) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return found
}

// TestDockerSessionsAsAnAdversary: two bash sessions on Docker at once,
// one hostile. The hostile one's files in /tmp and /dev/shm and its
// processes are not the other's to see; it cannot write the host's named
// pipe that is its stdin (by /proc/self/fd/0, nor on fd 0); a process it
// leaves behind (setsid, its own session) does not run on into its
// restarted interpreter's container nor outlive the session; and the
// signals it sends its container's init change nothing for the host: the
// host still interrupts its cells and closes it.
func TestDockerSessionsAsAnAdversary(t *testing.T) {
	rt := newRuntime(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	open := func() *session.Session {
		s, err := session.New(ctx, rt, session.Config{Language: sandbox.Bash, Grace: session.DefaultGrace})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	exec := func(s *session.Session, code string) *session.Cell {
		t.Helper()
		c, err := s.Execute(ctx, session.Exec{Code: code, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("%q: %v", code, err)
		}
		return c
	}
	hostile, victim := open(), open()
	defer victim.Close()
	tag := fmt.Sprintf("redteam%d", time.Now().UnixNano())

	if c := exec(victim, "echo secret > /tmp/v-"+tag+"; echo secret > /dev/shm/v-"+tag+"; sleep 300 & echo started"); c.Status != session.StatusOK {
		t.Fatalf("victim: %s %q", c.Status, c.Stderr())
	}
	c := exec(hostile, `ls /tmp /dev/shm | grep -c v-`+tag+`; for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; done | grep -c '[s]leep 300'; true`)
	if got := strings.Fields(c.Stdout()); c.Status != session.StatusOK || len(got) != 2 || got[0] != "0" || got[1] != "0" {
		t.Errorf("the hostile session sees the victim's files or processes: %s %q %q", c.Status, c.Stdout(), c.Stderr())
	}

	// The host's named pipe (root's, read-only to others) is some
	// process's descriptor in the container: none may be reopened for
	// writing.
	c = exec(hostile, `for f in /proc/[0-9]*/fd/*; do [ -p "$f" ] && [ "$(stat -L -c %U "$f")" = root ] || continue; echo "$f: $(readlink $f)" >&2; { echo x >"$f"; } 2>/dev/null && echo "reopened $f"; done; echo done`)
	if c.Status != session.StatusOK || strings.TrimSpace(c.Stdout()) != "done" || !strings.Contains(c.Stderr(), ".coderun/in") {
		t.Errorf("the host's pipe: %s %q %q", c.Status, c.Stdout(), c.Stderr())
	}
	t.Logf("root's pipes: %q", c.Stderr())

	// A process left behind, then the interpreter ends: the restarted
	// one's container must not have it, nor the host.
	c = exec(hostile, `setsid sh -c 'while :; do echo x >> /tmp/left-`+tag+`; sleep 0.1; done' </dev/null >/dev/null 2>&1 & sleep 0.5; exit 3`)
	if c.Status != session.StatusDied {
		t.Errorf("exit 3: %s", c.Status)
	}
	c = exec(hostile, `a=$(wc -l < /tmp/left-`+tag+`); sleep 1; b=$(wc -l < /tmp/left-`+tag+`); [ "$a" = "$b" ] && echo still || echo growing $a $b`)
	if strings.TrimSpace(c.Stdout()) != "still" {
		t.Errorf("what the ended interpreter left runs on: %s %q %q", c.Status, c.Stdout(), c.Stderr())
	}
	if left := hostProcessesWith("left-" + tag); len(left) > 0 {
		t.Errorf("on the host, after its interpreter ended: %v", left)
	}

	// Signals to the init, each a cell of its own; then the host must
	// still interrupt a cell and close the session.
	for _, sig := range []string{"TERM", "INT", "HUP", "QUIT", "USR1", "SEGV", "ABRT", "SYS", "PIPE", "STOP", "KILL"} {
		c = exec(hostile, "kill -"+sig+" 1 2>&1; sleep 0.2; kill -0 1 2>/dev/null && echo init alive || echo init gone")
		t.Logf("kill -%s 1: %s %q %q (restarted %v)", sig, c.Status, c.Stdout(), c.Stderr(), c.Restarted)
		if strings.Contains(c.Stdout(), "init gone") || c.Status != session.StatusOK {
			t.Errorf("kill -%s 1 from the program: %s %q %q", sig, c.Status, c.Stdout(), c.Stderr())
		}
	}
	go func() {
		time.Sleep(time.Second)
		hostile.Interrupt()
	}()
	if c = exec(hostile, "while :; do :; done"); c.Status != session.StatusInterrupted {
		t.Errorf("a busy cell after the signals: %s, want interrupted", c.Status)
	}
	exec(hostile, `setsid sh -c 'while :; do sleep 0.1; done; : left-`+tag+`' </dev/null >/dev/null 2>&1 & echo ok`)
	if err := hostile.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	if left := hostProcessesWith("left-" + tag); len(left) > 0 {
		t.Errorf("on the host, after the session closed: %v", left)
	}
	if c := exec(victim, "cat /tmp/v-"+tag+" /dev/shm/v-"+tag+"; jobs | wc -l"); c.Status != session.StatusOK || c.Stdout() != "secret\nsecret\n1\n" {
		t.Errorf("the victim after the hostile session: %s %q %q", c.Status, c.Stdout(), c.Stderr())
	}
}

package gvisor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/sandbox/gvisor"
	"github.com/coderun/coderun/session"
)

// The end of a session's cell on gVisor is a fact the host checks (the
// Sentry's report of the interpreter's main thread in read(2) on its
// stdin), not the driver's claim: a cell that writes the driver's
// protocol itself, a forged "done" included, and keeps running is still
// running, and its time limit applies (as session's forgery tests show on
// the linux runtime).

// pyForge finds the driver in the interpreter's memory and writes, on its
// protocol descriptor, a forged output and a forged "done" for the cell
// being run.
const pyForge = `import gc, json, os
drv = next(o for o in gc.get_objects() if type(o).__name__ == "Driver")
def forge(msg):
    os.write(drv.proto_out, (json.dumps(msg) + "\n").encode())
forge({"type": "stream", "id": drv.id, "name": "stdout", "text": "forged\n"})
forge({"type": "done", "id": drv.id, "status": "ok", "execution_count": 99, "truncated": False, "exiting": False})
`

func newSession(t *testing.T, cfg session.Config) *session.Session {
	t.Helper()
	rt := newRuntime(t, gvisor.Options{})
	s, err := session.New(context.Background(), rt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ok executes code and fails the test unless the cell ends ok.
func ok(t *testing.T, s *session.Session, code string) *session.Cell {
	t.Helper()
	c, err := s.Execute(context.Background(), session.Exec{Code: code})
	if err != nil {
		t.Fatalf("%q: %v", code, err)
	}
	if c.Status != session.StatusOK {
		t.Fatalf("%q: status %s: %s", code, c.Status, describe(c))
	}
	return c
}

func describe(c *session.Cell) string {
	var b strings.Builder
	for _, o := range c.Outputs {
		switch o.Type {
		case session.TypeStream:
			b.WriteString(o.Name + ": " + o.Text)
		case session.TypeError:
			b.WriteString("error: " + o.Ename + ": " + o.Evalue + "\n")
		default:
			b.WriteString(o.Type + "\n")
		}
	}
	if c.Ended != nil {
		b.WriteString("ended: " + c.Ended.Message + "\n")
	}
	return b.String()
}

func TestSessionPythonForgedDone(t *testing.T) {
	s := newSession(t, session.Config{Grace: 2 * time.Second})
	ok(t, s, "kept = 1")
	const limit = 700 * time.Millisecond
	for _, tc := range []struct {
		name, tail string
		killed     bool
	}{
		{"loop", "while True:\n    pass\n", false},
		{"blocked elsewhere", "r, w = os.pipe()\nos.read(r, 1)\n", false},
		// The main thread in read(2), on descriptor 0, of a pipe of its own.
		{"reading its own pipe as descriptor 0", "r, w = os.pipe()\nsaved = os.dup(0)\nos.dup2(r, 0)\ntry:\n    os.read(0, 1)\nfinally:\n    os.dup2(saved, 0)\n", false},
		// The main thread in and out of read(2) of another descriptor the
		// host passed in (stdout: a write end, EBADF at once).
		{"reading stdout", "while True:\n    try:\n        os.read(1, 1)\n    except OSError:\n        pass\n", false},
		{"ignoring SIGINT", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.Execute(context.Background(), session.Exec{Code: pyForge + tc.tail, Timeout: limit})
			if err != nil {
				t.Fatal(err)
			}
			if c.Status != session.StatusTimeout || c.Duration < limit || c.Restarted != tc.killed {
				t.Fatalf("a cell that forged its end: %s after %v (restarted %v): %s", c.Status, c.Duration, c.Restarted, describe(c))
			}
			if !strings.Contains(c.Stdout(), "forged") {
				t.Fatalf("the forged output is the forging cell's own: %s", describe(c))
			}
			c = ok(t, s, "print('mine')")
			if c.Stdout() != "mine\n" || len(c.Outputs) != 1 {
				t.Fatalf("next cell: %s", describe(c))
			}
			if tc.killed {
				ok(t, s, "kept = 1")
			}
			ok(t, s, "kept")
		})
	}
}

// A thread left behind by one cell cannot end a later one.
func TestSessionPythonForgedDoneOfLaterCell(t *testing.T) {
	s := newSession(t, session.Config{})
	ok(t, s, pyForge[:strings.Index(pyForge, "forge({")]+`import threading, time
first = drv.id
def later():
    while drv.id == first:
        time.sleep(0.01)
    time.sleep(0.2)
    forge({"type": "done", "id": drv.id, "status": "ok", "execution_count": 99, "truncated": False, "exiting": False})
threading.Thread(target=later, daemon=True).start()
`)
	start := time.Now()
	c := ok(t, s, "import time\ntime.sleep(1.5)\nprint('real end')")
	if d := time.Since(start); d < 1500*time.Millisecond || !strings.Contains(c.Stdout(), "real end") {
		t.Fatalf("a later cell was ended by an earlier cell's thread after %v: %s", d, describe(c))
	}
}

func TestSessionBashForgedDone(t *testing.T) {
	s := newSession(t, session.Config{Language: sandbox.Bash, Grace: 500 * time.Millisecond})
	ok(t, s, "kept=1")
	const limit = 700 * time.Millisecond
	// __cr_done is the driver's own function that writes the end marker,
	// nonce and all: the cell calls it and keeps running.
	c, err := s.Execute(context.Background(), session.Exec{Code: "echo forged; __cr_done; while true; do :; done", Timeout: limit})
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != session.StatusTimeout || c.Duration < limit || c.Restarted {
		t.Fatalf("a cell that forged its end: %s after %v: %s", c.Status, c.Duration, describe(c))
	}
	c = ok(t, s, "echo mine $kept")
	if c.Stdout() != "mine 1\n" {
		t.Fatalf("next cell: %s", describe(c))
	}
}

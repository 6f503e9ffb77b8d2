package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coderun/coderun/sandbox"
	"github.com/coderun/coderun/session"
)

// The end of a cell is a fact the host checks, not a message it believes:
// a cell that writes the driver's protocol itself (forged outputs and a
// forged "done") and keeps running is still running, and its time limit
// applies.

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

func TestPythonForgedDone(t *testing.T) {
	t.Parallel()
	// The grace period leaves an interrupted cell time to report, even on
	// a loaded machine: only the cell that ignores SIGINT is killed.
	s := newSession(t, session.Config{Grace: 2 * time.Second})
	ok(t, s, "kept = 1")
	const limit = 700 * time.Millisecond
	for _, tc := range []struct {
		name, tail string
		killed     bool
	}{
		{"loop", "while True:\n    pass\n", false},
		{"blocked elsewhere", "r, w = os.pipe()\nos.read(r, 1)\n", false},
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
			// The session is usable, and the next cell's outputs are its own.
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
func TestPythonForgedDoneOfLaterCell(t *testing.T) {
	t.Parallel()
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

func TestBashForgedDone(t *testing.T) {
	t.Parallel()
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

// The bash driver's nonce is in neither the interpreter's environment nor
// its children's (defence in depth: the host does not rely on it).
func TestBashNonceNotInEnvironment(t *testing.T) {
	t.Parallel()
	s := newSession(t, session.Config{Language: sandbox.Bash})
	c := ok(t, s, "tr '\\0' '\\n' </proc/$$/environ | grep -c '[0-9a-f]\\{32\\}'; env | grep -c '[0-9a-f]\\{32\\}'; true")
	if c.Stdout() != "0\n0\n" {
		t.Fatalf("the nonce is in the environment: %s", describe(c))
	}
}
